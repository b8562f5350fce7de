/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.queue;

import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.Sge;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The send queue: a ring of WQE records in memory plus its {@link Doorbell}. Posting writes records and rings
 * the doorbell; the NIC reads WQEs only from here.
 *
 * <pre>
 * WQE record (stride = 64 + 16 * max_sge + max_inline, rounded up to 64):
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                          wr_id (64)                           |  0
 *  +---------------+---------------+-------------------------------+
 *  |    opcode     |  send_flags   |            num_sge            |  8
 *  +---------------+---------------+-------------------------------+
 *  |                          imm_data                             | 12
 *  |       remote_addr (64); UD: dlid (32) | remote QPN (32)        | 16
 *  |                    rkey; UD: remote Q_Key                     | 24
 *  |              total length (inline: inline length)             | 28
 *  |          compare_add (64); FLUSH: flush length (64)           | 32
 *  |   swap (64); FLUSH: placement type (8) | selectivity (8) ...  | 40
 *  |   stamp (32): (u32)(index + 1), checked on a direct queue     | 48
 *  |                       reserved (12)                           | 52
 *  |          sge[i]: addr (64) | length (32) | lkey (32)          | 64 + 16 i
 *  |                       inline data                             | 64 + 16 max_sge
 * </pre>
 * Native byte order: the ring is host memory shared by poster and NIC, not wire data.
 */
public final class SendQueue implements SgeList {
    public static final int OFF_WR_ID = 0;
    public static final int OFF_OPCODE = 8;
    public static final int OFF_FLAGS = 9;
    public static final int OFF_NUM_SGE = 10;
    public static final int OFF_IMM = 12;
    public static final int OFF_REMOTE_ADDR = 16;
    public static final int OFF_RKEY = 24;
    public static final int OFF_LENGTH = 28;
    public static final int OFF_COMPARE_ADD = 32;
    public static final int OFF_SWAP = 40;
    public static final int OFF_STAMP = 48;
    public static final int OFF_SGE = 64;
    public static final int SGE_SIZE = 16;

    private final MemorySegment ring;
    private final Doorbell doorbell;
    private final int depth;
    private final int mask;
    private final int stride;
    private final int maxSge;
    private final int inlineOffset;

    public SendQueue(final Arena arena, final int minDepth, final int maxSge, final int maxInline) {
        this.depth = Integer.highestOneBit(Math.max(1, minDepth - 1)) << 1;
        this.mask = depth - 1;
        this.maxSge = maxSge;
        this.inlineOffset = OFF_SGE + SGE_SIZE * maxSge;
        this.stride = (inlineOffset + maxInline + 63) & ~63;
        this.ring = arena.allocate((long) stride * depth, 64);
        this.doorbell = new Doorbell(arena.allocate(Doorbell.SIZE, 64));
    }

    public int depth() {
        return depth;
    }

    public Doorbell doorbell() {
        return doorbell;
    }

    public MemorySegment ring() {
        return ring;
    }

    public long slotOffset(final long index) {
        return (index & mask) * (long) stride;
    }

    public int slot(final long index) {
        return (int) (index & mask);
    }

    /** Writes one WQE at {@code index}; inline data is copied from its SGEs' memory into the record. */
    public void write(final long index, final SendWorkRequest wr, final boolean inline, final int totalLength,
                      final InlineSource inlineSource) {
        final long o = slotOffset(index);
        ring.set(ValueLayout.JAVA_LONG, o + OFF_WR_ID, wr.wrId);
        ring.set(ValueLayout.JAVA_BYTE, o + OFF_OPCODE, (byte) wr.opcode);
        ring.set(ValueLayout.JAVA_BYTE, o + OFF_FLAGS, (byte) wr.sendFlags);
        ring.set(ValueLayout.JAVA_SHORT, o + OFF_NUM_SGE, (short) wr.numSge());
        ring.set(ValueLayout.JAVA_INT, o + OFF_IMM, wr.immData);
        ring.set(ValueLayout.JAVA_LONG, o + OFF_REMOTE_ADDR, wr.remoteAddr);
        ring.set(ValueLayout.JAVA_INT, o + OFF_RKEY, wr.rkey);
        ring.set(ValueLayout.JAVA_INT, o + OFF_LENGTH, totalLength);
        if (wr.opcode == WrOpcode.FLUSH) {
            ring.set(ValueLayout.JAVA_LONG, o + OFF_COMPARE_ADD, wr.flushLength);
            ring.set(ValueLayout.JAVA_LONG, o + OFF_SWAP, (wr.flushType & 0xFF) | (wr.flushLevel & 0xFF) << 8);
        } else {
            ring.set(ValueLayout.JAVA_LONG, o + OFF_COMPARE_ADD, wr.compareAdd);
            ring.set(ValueLayout.JAVA_LONG, o + OFF_SWAP, wr.swap);
        }
        long inlinePos = o + inlineOffset;
        for (int i = 0; i < wr.numSge(); i++) {
            final Sge sge = wr.sge(i);
            final long so = o + OFF_SGE + (long) SGE_SIZE * i;
            ring.set(ValueLayout.JAVA_LONG, so, sge.addr);
            ring.set(ValueLayout.JAVA_INT, so + 8, sge.length);
            ring.set(ValueLayout.JAVA_INT, so + 12, sge.lkey);
            if (inline && sge.length > 0) {
                inlineSource.copy(sge, ring, inlinePos);
                inlinePos += sge.length;
            }
        }
    }

    public int stride() {
        return stride;
    }

    public int inlineOffset() {
        return inlineOffset;
    }

    /** The WQE's stamp word; a direct poster writes (u32)(index + 1) there. */
    public int stamp(final long index) {
        return ring.get(ValueLayout.JAVA_INT, slotOffset(index) + OFF_STAMP);
    }

    /**
     * BIND_MW: the bind, written over the WQE just written: remote_addr = bind address, rkey = the window's new
     * rkey, compare_add = length, swap = MR lkey (32) | window index (24) | access (8).
     */
    public void bind(final long index, final long addr, final int rkey, final long length, final int lkey,
                     final int mwIndex, final int access) {
        final long o = slotOffset(index);
        ring.set(ValueLayout.JAVA_LONG, o + OFF_REMOTE_ADDR, addr);
        ring.set(ValueLayout.JAVA_INT, o + OFF_RKEY, rkey);
        ring.set(ValueLayout.JAVA_LONG, o + OFF_COMPARE_ADD, length);
        ring.set(ValueLayout.JAVA_LONG, o + OFF_SWAP, (long) lkey << 32 | (mwIndex & 0xFFFFFFL) << 8 | (access & 0xFF));
    }

    /** LOCAL_INV: the rkey to invalidate, in the rkey field; SEND_WITH_INV: in the imm_data field (as libibverbs). */
    public void invalidateRkey(final long index, final boolean inImm, final int rkey) {
        ring.set(ValueLayout.JAVA_INT, slotOffset(index) + (inImm ? OFF_IMM : OFF_RKEY), rkey);
    }

    /** UD: the datagram's destination, written over remote_addr and rkey of the WQE just written. */
    public void ud(final long index, final int dlid, final int remoteQpn, final int qkey) {
        final long o = slotOffset(index);
        ring.set(ValueLayout.JAVA_LONG, o + OFF_REMOTE_ADDR, (long) dlid << 32 | (remoteQpn & 0xFFFFFFFFL));
        ring.set(ValueLayout.JAVA_INT, o + OFF_RKEY, qkey);
    }

    public long wrId(final long index) {
        return ring.get(ValueLayout.JAVA_LONG, slotOffset(index) + OFF_WR_ID);
    }

    public int opcode(final long index) {
        return ring.get(ValueLayout.JAVA_BYTE, slotOffset(index) + OFF_OPCODE) & 0xFF;
    }

    public int flags(final long index) {
        return ring.get(ValueLayout.JAVA_BYTE, slotOffset(index) + OFF_FLAGS) & 0xFF;
    }

    @Override
    public int numSge(final long index) {
        return ring.get(ValueLayout.JAVA_SHORT, slotOffset(index) + OFF_NUM_SGE) & 0xFFFF;
    }

    public int imm(final long index) {
        return ring.get(ValueLayout.JAVA_INT, slotOffset(index) + OFF_IMM);
    }

    public long remoteAddr(final long index) {
        return ring.get(ValueLayout.JAVA_LONG, slotOffset(index) + OFF_REMOTE_ADDR);
    }

    public int rkey(final long index) {
        return ring.get(ValueLayout.JAVA_INT, slotOffset(index) + OFF_RKEY);
    }

    public int length(final long index) {
        return ring.get(ValueLayout.JAVA_INT, slotOffset(index) + OFF_LENGTH);
    }

    public long compareAdd(final long index) {
        return ring.get(ValueLayout.JAVA_LONG, slotOffset(index) + OFF_COMPARE_ADD);
    }

    public long swap(final long index) {
        return ring.get(ValueLayout.JAVA_LONG, slotOffset(index) + OFF_SWAP);
    }

    @Override
    public long sgeAddr(final long index, final int sge) {
        return ring.get(ValueLayout.JAVA_LONG, slotOffset(index) + OFF_SGE + (long) SGE_SIZE * sge);
    }

    @Override
    public int sgeLength(final long index, final int sge) {
        return ring.get(ValueLayout.JAVA_INT, slotOffset(index) + OFF_SGE + (long) SGE_SIZE * sge + 8);
    }

    @Override
    public int sgeLkey(final long index, final int sge) {
        return ring.get(ValueLayout.JAVA_INT, slotOffset(index) + OFF_SGE + (long) SGE_SIZE * sge + 12);
    }

    /** Offset in {@link #ring()} of the WQE's inline data. */
    public long inlineDataOffset(final long index) {
        return slotOffset(index) + inlineOffset;
    }

    public int maxSge() {
        return maxSge;
    }

    /** Copies an SGE's inline bytes (from its unregistered memory or through its MR) into the ring at post time. */
    @FunctionalInterface
    public interface InlineSource {
        void copy(Sge sge, MemorySegment dst, long dstOffset);
    }
}
