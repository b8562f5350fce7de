/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.queue;

import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.Sge;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The receive queue: a ring of receive WQE records in memory plus its {@link Doorbell}.
 *
 * <pre>
 * Receive WQE record (stride = 16 + 16 * max_sge):
 *   0  wr_id (u64)
 *   8  num_sge (u32)
 *  12  reserved (u32)
 *  16  sge[i]: addr (u64) | length (u32) | lkey (u32)
 * </pre>
 */
public final class RecvQueue implements SgeList {
    private final MemorySegment ring;
    private final Doorbell doorbell;
    private final int depth;
    private final int mask;
    private final int stride;

    public RecvQueue(final Arena arena, final int minDepth, final int maxSge) {
        this.depth = Integer.highestOneBit(Math.max(1, minDepth - 1)) << 1;
        this.mask = depth - 1;
        this.stride = 16 + 16 * Math.max(1, maxSge);
        this.ring = arena.allocate((long) stride * depth, 64);
        this.doorbell = new Doorbell(arena.allocate(Doorbell.SIZE, 64));
    }

    public int depth() {
        return depth;
    }

    public Doorbell doorbell() {
        return doorbell;
    }

    private long o(final long index) {
        return (index & mask) * (long) stride;
    }

    public void write(final long index, final RecvWorkRequest wr) {
        final long o = o(index);
        ring.set(ValueLayout.JAVA_LONG, o, wr.wrId);
        ring.set(ValueLayout.JAVA_INT, o + 8, wr.numSge());
        for (int i = 0; i < wr.numSge(); i++) {
            final Sge s = wr.sge(i);
            final long so = o + 16 + 16L * i;
            ring.set(ValueLayout.JAVA_LONG, so, s.addr);
            ring.set(ValueLayout.JAVA_INT, so + 8, s.length);
            ring.set(ValueLayout.JAVA_INT, so + 12, s.lkey);
        }
    }

    /**
     * Copies the WQE at {@code srcIndex} of {@code src} (a shared receive queue of the same SGE capacity) to
     * {@code index} here: a QP takes a WQE out of its SRQ this way, as rxe copies an SRQ WQE into the QP.
     */
    public void copyFrom(final long index, final RecvQueue src, final long srcIndex) {
        if (src.stride != stride) {
            throw new IllegalArgumentException("receive WQE strides differ: " + src.stride + " vs " + stride);
        }
        MemorySegment.copy(src.ring, src.o(srcIndex), ring, o(index), stride);
    }

    public long wrId(final long index) {
        return ring.get(ValueLayout.JAVA_LONG, o(index));
    }

    @Override
    public int numSge(final long index) {
        return ring.get(ValueLayout.JAVA_INT, o(index) + 8);
    }

    @Override
    public long sgeAddr(final long index, final int i) {
        return ring.get(ValueLayout.JAVA_LONG, o(index) + 16 + 16L * i);
    }

    @Override
    public int sgeLength(final long index, final int i) {
        return ring.get(ValueLayout.JAVA_INT, o(index) + 16 + 16L * i + 8);
    }

    @Override
    public int sgeLkey(final long index, final int i) {
        return ring.get(ValueLayout.JAVA_INT, o(index) + 16 + 16L * i + 12);
    }
}
