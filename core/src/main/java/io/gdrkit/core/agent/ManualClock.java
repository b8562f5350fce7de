/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

/** A virtual clock advanced explicitly (by a {@link DeterministicRunner} or a test). Single-threaded use. */
public final class ManualClock implements NanoClock {
    private long now;

    public ManualClock(final long start) {
        now = start;
    }

    @Override
    public long nanoTime() {
        return now;
    }

    public void advance(final long nanos) {
        if (nanos < 0) {
            throw new IllegalArgumentException("time cannot go backwards: " + nanos);
        }
        now += nanos;
    }
}
