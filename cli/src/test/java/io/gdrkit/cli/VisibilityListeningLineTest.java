/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.gdrkit.labs.visibility.VisibilityLab;
import org.junit.jupiter.api.Test;

/** The cli says, from the lab's record, what the listening receiver waits for (the lab itself prints nothing). */
class VisibilityListeningLineTest {
    @Test
    void theLineNamesTheSenderCountAndTheCommandToRunWithThePort() {
        assertEquals("# visibility receiver: waiting for 3 sender(s): run `gdrkit visibility-sender --connect "
            + "THIS_HOST:18515` on the sender host(s)",
            VisibilityCommand.listeningLine(new VisibilityLab.Listening(18515, 3)));
    }
}
