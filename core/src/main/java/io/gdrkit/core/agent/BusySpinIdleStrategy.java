/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

/** Spins with {@link Thread#onSpinWait()}; lowest latency, burns a core. */
public final class BusySpinIdleStrategy implements IdleStrategy {
    @Override
    public void idle(final int workCount) {
        if (workCount == 0) {
            Thread.onSpinWait();
        }
    }

    @Override
    public void reset() {
    }
}
