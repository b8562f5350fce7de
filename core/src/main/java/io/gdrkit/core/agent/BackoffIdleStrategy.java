/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

import java.util.concurrent.locks.LockSupport;

/**
 * Spins, then yields, then parks with exponential backoff up to a ceiling. The yield and park phases are what
 * keep several NIC threads from starving each other (or the application) where there are fewer cores than
 * busy threads.
 */
public final class BackoffIdleStrategy implements IdleStrategy {
    private final long maxSpins;
    private final long maxYields;
    private final long minParkNanos;
    private final long maxParkNanos;
    private long spins;
    private long yields;
    private long parkNanos;

    public BackoffIdleStrategy() {
        this(200, 50, 1_000, 100_000);
    }

    public BackoffIdleStrategy(final long maxSpins, final long maxYields, final long minParkNanos,
                               final long maxParkNanos) {
        this.maxSpins = maxSpins;
        this.maxYields = maxYields;
        this.minParkNanos = minParkNanos;
        this.maxParkNanos = maxParkNanos;
        this.parkNanos = minParkNanos;
    }

    @Override
    public void idle(final int workCount) {
        if (workCount > 0) {
            reset();
            return;
        }
        if (spins < maxSpins) {
            spins++;
            Thread.onSpinWait();
        } else if (yields < maxYields) {
            yields++;
            Thread.yield();
        } else {
            LockSupport.parkNanos(parkNanos);
            parkNanos = Math.min(parkNanos << 1, maxParkNanos);
        }
    }

    @Override
    public void reset() {
        spins = 0;
        yields = 0;
        parkNanos = minParkNanos;
    }
}
