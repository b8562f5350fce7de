/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;

/**
 * Parks for a fixed time after a duty cycle: a backstop that steps an agent another thread normally drives, without
 * competing with that thread for the CPU. Plain, it parks after every cycle, whether or not the cycle found work.
 * Following work, it parks only after a cycle that found none, and otherwise steps again at once: while the driving
 * thread is busy elsewhere (a rank reducing a large chunk) and traffic keeps arriving, the backstop keeps moving it
 * instead of taking one step per period; when the driving thread holds the agent (its cycles count as no work here)
 * or nothing arrives, it falls back to one step per period.
 */
public final class PacedIdleStrategy implements IdleStrategy {
    private final long parkNanos;
    private final boolean followWork;
    private final LongConsumer parker;

    /** Parks {@code parkNanos} after every cycle. */
    public PacedIdleStrategy(final long parkNanos) {
        this(parkNanos, false);
    }

    /** Parks {@code parkNanos} after every cycle, or with {@code followWork} only after cycles that found none. */
    public PacedIdleStrategy(final long parkNanos, final boolean followWork) {
        this(parkNanos, followWork, LockSupport::parkNanos);
    }

    /** For tests: {@code parker} stands in for {@link LockSupport#parkNanos(long)}. */
    PacedIdleStrategy(final long parkNanos, final boolean followWork, final LongConsumer parker) {
        if (parkNanos <= 0) {
            throw new IllegalArgumentException("pace " + parkNanos + " ns must be > 0");
        }
        this.parkNanos = parkNanos;
        this.followWork = followWork;
        this.parker = parker;
    }

    @Override
    public void idle(final int workCount) {
        if (followWork && workCount > 0) {
            Thread.onSpinWait();
            return;
        }
        parker.accept(parkNanos);
    }

    @Override
    public void reset() {
    }

    /** Whether this strategy steps again at once after a cycle that found work. */
    public boolean followsWork() {
        return followWork;
    }
}
