/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The run id never travels on a launcher's command line: --root is refused with the way to pass it instead. */
class LaunchJoinTest {
    @Test
    void theRunIdOnTheCommandLineIsRefusedAndJoinWantsItInTheEnvironment() throws Exception {
        final Cli root = Cli.run("launch", "-n", "1", "--first-rank", "1", "--nranks", "2", "--root",
            "127.0.0.1:1/00000000000000aa", "--", "true");
        assertEquals(2, root.exitCode(), root.toString());
        assertTrue(root.err().contains("--root ID puts the run id where every local user can read it (ps): export "
            + "GDRKIT_ROOT_ID=ID and give --join"), root.toString());
        if (System.getenv(LaunchCommand.ENV_ROOT_ID) == null) {
            final Cli join = Cli.run("launch", "-n", "1", "--first-rank", "1", "--nranks", "2", "--join", "--",
                "true");
            assertEquals(2, join.exitCode(), join.toString());
            assertTrue(join.err().contains("--join needs GDRKIT_ROOT_ID (the id the first launcher printed) in the "
                + "environment"), join.toString());
        }
    }
}
