/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.planted;

import io.gdrkit.labs.planted.BreaksEveryRule;

/** Planted on purpose: closes a package cycle with {@link BreaksEveryRule} (and gdr reaching up into labs). */
public final class CycleBack {
    public static final String NAME = "planted";

    private CycleBack() {
    }

    public static int back() {
        return BreaksEveryRule.run();
    }
}
