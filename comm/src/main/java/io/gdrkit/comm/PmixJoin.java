/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.WorldEnvironment;
import java.util.Map;

/** Opens a communicator of a world a PMIx launcher started. */
final class PmixJoin {
    private PmixJoin() {
    }

    static Comm open(final CommConfig base, final WorldEnvironment.World w, final Map<String, String> env) {
        throw new IllegalArgumentException("started by a PMIx launcher (" + String.join(", ", w.evidence())
            + ") but PMIx is not supported yet");
    }
}
