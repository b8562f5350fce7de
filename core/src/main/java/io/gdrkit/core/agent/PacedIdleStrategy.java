/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

import java.util.concurrent.locks.LockSupport;

/**
 * Parks for a fixed time after every duty cycle, whether or not it found work: a backstop that steps an agent
 * another thread normally drives, without competing with that thread for the CPU.
 */
public final class PacedIdleStrategy implements IdleStrategy {
    private final long parkNanos;

    public PacedIdleStrategy(final long parkNanos) {
        if (parkNanos <= 0) {
            throw new IllegalArgumentException("pace " + parkNanos + " ns must be > 0");
        }
        this.parkNanos = parkNanos;
    }

    @Override
    public void idle(final int workCount) {
        LockSupport.parkNanos(parkNanos);
    }

    @Override
    public void reset() {
    }
}
