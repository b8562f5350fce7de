/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.queue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * A queue's producer and consumer counters in memory, each on its own cache line, like a doorbell record:
 * whoever can write this memory (a CPU thread today, a GPU thread later) can post work and ring the bell.
 *
 * <pre>
 *   0  producer (u64)  written by the poster with release, read by the NIC with acquire
 *  64  consumer (u64)  written by the NIC with release, read by the poster with acquire
 * </pre>
 */
public final class Doorbell {
    public static final int SIZE = 128;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private final MemorySegment record;

    public Doorbell(final MemorySegment record) {
        this.record = record;
    }

    /** The record's memory, for a poster that writes it directly. */
    public MemorySegment record() {
        return record;
    }

    public long producer() {
        return (long) LONG.getAcquire(record, 0L);
    }

    public void ring(final long producer) {
        LONG.setRelease(record, 0L, producer);
    }

    public long consumer() {
        return (long) LONG.getAcquire(record, 64L);
    }

    public void consumer(final long consumer) {
        LONG.setRelease(record, 64L, consumer);
    }

    public void reset() {
        LONG.setRelease(record, 0L, 0L);
        LONG.setRelease(record, 64L, 0L);
    }
}
