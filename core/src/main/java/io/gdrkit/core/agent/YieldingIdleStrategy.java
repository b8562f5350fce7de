/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

/** Yields the core when idle: good when threads outnumber cores. */
public final class YieldingIdleStrategy implements IdleStrategy {
    @Override
    public void idle(final int workCount) {
        if (workCount == 0) {
            Thread.yield();
        }
    }

    @Override
    public void reset() {
    }
}
