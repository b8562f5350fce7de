/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

import java.util.concurrent.locks.LockSupport;

/** Parks for a fixed time when idle. */
public final class SleepingIdleStrategy implements IdleStrategy {
    private final long parkNanos;

    public SleepingIdleStrategy(final long parkNanos) {
        this.parkNanos = parkNanos;
    }

    @Override
    public void idle(final int workCount) {
        if (workCount == 0) {
            LockSupport.parkNanos(parkNanos);
        }
    }

    @Override
    public void reset() {
    }
}
