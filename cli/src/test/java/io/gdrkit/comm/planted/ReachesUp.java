/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.planted;

import io.gdrkit.labs.planted.BreaksEveryRule;

/** Planted on purpose: the comm library reaching up into labs, which the layer rule must refuse. */
public final class ReachesUp {
    private ReachesUp() {
    }

    public static int up() {
        return BreaksEveryRule.run();
    }
}
