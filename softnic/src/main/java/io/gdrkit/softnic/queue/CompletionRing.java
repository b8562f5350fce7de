/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.queue;

import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The CQ ring: CQE records written by the NIC (single writer), read by the poller (single reader).
 *
 * <pre>
 * CQE record (32 bytes):
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                          wr_id (64)                           |  0
 *  +---------------------------------------------------------------+
 *  |                          byte_len                             |  8
 *  |                          imm_data                             | 12
 *  |                           qp_num                              | 16
 *  |                           src_qp                              | 20
 *  +---------------+---------------+---------------+---------------+
 *  |    status     |    opcode     |   wc_flags    |      lap      | 24
 *  +---------------+---------------+---------------+---------------+
 *  |                         vendor_err                            | 28
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * The 8 bytes at 24 are written last, as one release store: {@code lap} is {@code (index / depth) % 255 + 1} for the
 * CQE of index {@code index}, never 0 and never the value the slot held one lap earlier. A poller that knows which CQE
 * it waits for (a GPU thread waiting for WQE i of a queue whose CQ only it reaps) polls that one word until its lap
 * byte is the expected one: one read brings the CQE's arrival and its status, where the producer counter and then
 * the status would be two reads across PCIe. Pollers of the counter are unaffected.
 */
public final class CompletionRing {
    public static final int CQE_SIZE = 32;
    private static final java.lang.invoke.VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private final MemorySegment ring;
    private final Doorbell counters;
    private final int depth;
    private final int mask;
    private long producer;
    /**
     * The poller's counter as last read (NIC side only). It only grows, so while {@code producer - cached < depth}
     * there is room without reading the shared counter: one acquire read per lap instead of one per CQE, as
     * SpscRingBuffer keeps its consumer's position.
     */
    private long consumerCache;

    public CompletionRing(final Arena arena, final int minDepth) {
        this.depth = Integer.highestOneBit(Math.max(1, minDepth - 1)) << 1;
        this.mask = depth - 1;
        this.ring = arena.allocate((long) CQE_SIZE * depth, 64);
        this.counters = new Doorbell(arena.allocate(Doorbell.SIZE, 64));
    }

    public int depth() {
        return depth;
    }

    /** The lap byte of CQE {@code index} in a ring of {@code depth}: 1 to 255, never the one a lap earlier. */
    public static int lap(final long index, final int depth) {
        return (int) ((index / depth) % 255) + 1;
    }

    public MemorySegment ring() {
        return ring;
    }

    public Doorbell counters() {
        return counters;
    }

    /** NIC side: room for one more CQE? */
    public boolean hasRoom() {
        if (producer - consumerCache < depth) {
            return true;
        }
        consumerCache = counters.consumer();
        return producer - consumerCache < depth;
    }

    /** NIC side: writes a CQE and publishes it. The caller checked {@link #hasRoom()}. */
    public void post(final long wrId, final int status, final int opcode, final int byteLen, final int imm,
                     final int qpNum, final int srcQp, final int wcFlags, final int vendorErr) {
        final long o = (producer & mask) * CQE_SIZE;
        ring.set(ValueLayout.JAVA_LONG, o, wrId);
        ring.set(ValueLayout.JAVA_INT, o + 8, byteLen);
        ring.set(ValueLayout.JAVA_INT, o + 12, imm);
        ring.set(ValueLayout.JAVA_INT, o + 16, qpNum);
        ring.set(ValueLayout.JAVA_INT, o + 20, srcQp);
        // status, opcode, flags, lap, vendor_err in one store after the rest: a poller of this word sees the whole CQE
        LONG.setRelease(ring, o + 24, (status & 0xffL) | (opcode & 0xffL) << 8 | (wcFlags & 0xffL) << 16
            | (long) lap(producer, depth) << 24 | (vendorErr & 0xffffffffL) << 32);
        producer++;
        counters.ring(producer);
    }

    /** Poller side: copies up to {@code max} CQEs into {@code wcs}. */
    public int poll(final WorkCompletion[] wcs, final int max) {
        long consumer = counters.consumer();
        final long available = counters.producer() - consumer;
        final int n = (int) Math.min(available, Math.min(max, wcs.length));
        for (int i = 0; i < n; i++) {
            final long o = (consumer & mask) * CQE_SIZE;
            WorkCompletion wc = wcs[i];
            if (wc == null) {
                wc = new WorkCompletion(); // first use of a plain new WorkCompletion[n]: later polls reuse it
                wcs[i] = wc;
            }
            wc.wrId = ring.get(ValueLayout.JAVA_LONG, o);
            wc.byteLen = ring.get(ValueLayout.JAVA_INT, o + 8);
            wc.immData = ring.get(ValueLayout.JAVA_INT, o + 12);
            wc.qpNum = ring.get(ValueLayout.JAVA_INT, o + 16);
            wc.srcQp = ring.get(ValueLayout.JAVA_INT, o + 20);
            wc.status = ring.get(ValueLayout.JAVA_BYTE, o + 24) & 0xFF;
            wc.opcode = ring.get(ValueLayout.JAVA_BYTE, o + 25) & 0xFF;
            wc.wcFlags = ring.get(ValueLayout.JAVA_BYTE, o + 26) & 0xFF;
            // one slot, two meanings: vendor_err of a failed completion, the source LID of a successful receive
            final int v = ring.get(ValueLayout.JAVA_INT, o + 28);
            wc.vendorErr = wc.status == 0 ? 0 : v;
            wc.slid = wc.status == 0 ? v : 0;
            consumer++;
        }
        if (n > 0) {
            counters.consumer(consumer);
        }
        return n;
    }

    public boolean isEmpty() {
        return counters.producer() == counters.consumer();
    }
}
