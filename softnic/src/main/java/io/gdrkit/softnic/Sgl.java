/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.softnic.queue.SgeList;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.WcStatus;
import java.lang.foreign.MemorySegment;

/**
 * Moves bytes between a WQE's scatter/gather list and a packet. There is one walk ({@link #walk}) and one access
 * check ({@link #localMr}) for every direction, so gathering, scattering (READ responses, ATOMIC results,
 * receives) and referencing cannot drift apart on this security path. Every call looks each lkey up again, so an
 * MR deregistered between two packets of one message is never touched.
 */
final class Sgl {
    /** Copy out of the SGEs (a send's payload). */
    private static final int GATHER = 0;
    /** Copy into the SGEs (needs LOCAL_WRITE). */
    private static final int SCATTER = 1;
    /** Write references to the SGEs' bytes into a packet (single copy; needs a referable MR). */
    private static final int REFERENCE = 2;

    private Sgl() {
    }

    /**
     * The one local access check: a live lkey of the QP's PD whose MR holds {@code [addr, addr + len)}, with
     * LOCAL_WRITE when the NIC will write it. Returns the MR, or null when access is refused.
     */
    static SoftMr localMr(final SoftDevice dev, final SoftQp qp, final int lkey, final long addr, final long len,
                          final boolean nicWrites) {
        final SoftMr mr = dev.mrs.lookup(lkey);
        if (mr == null || mr.window || mr.pd != qp.pd || !mr.contains(addr, len)
            || (nicWrites && (mr.access & AccessFlags.LOCAL_WRITE) == 0)) {
            return null;
        }
        return mr;
    }

    /**
     * Checks every SGE of a WQE as a whole before its first packet: {@link #localMr} on each non-empty SGE
     * ({@code nicWrites} for READ and ATOMIC results). Returns a WcStatus.
     */
    static int checkSend(final SoftDevice dev, final SoftQp qp, final SgeList sgl, final long index,
                         final boolean nicWrites) {
        final int n = sgl.numSge(index);
        for (int i = 0; i < n; i++) {
            final int len = sgl.sgeLength(index, i);
            if (len != 0 && localMr(dev, qp, sgl.sgeLkey(index, i), sgl.sgeAddr(index, i),
                Integer.toUnsignedLong(len), nicWrites) == null) {
                return WcStatus.LOC_PROT_ERR;
            }
        }
        return WcStatus.SUCCESS;
    }

    /** Copies {@code len} bytes starting {@code offset} bytes into the WQE's gather list to dst. */
    static int gather(final SoftDevice dev, final SoftQp qp, final SgeList sgl, final long index, final long offset,
                      final MemorySegment dst, final long dstOffset, final int len) {
        return walk(dev, qp, sgl, index, offset, dst, dstOffset, len, GATHER, null);
    }

    /**
     * Copies {@code len} bytes from src into the WQE's scatter list starting {@code offset} bytes in: READ responses
     * and ATOMIC results into a send WQE, a message into a receive WQE. LOC_LEN_ERR when it does not fit.
     */
    static int scatter(final SoftDevice dev, final SoftQp qp, final SgeList sgl, final long index,
                       final long offset, final MemorySegment src, final long srcOffset, final int len) {
        return walk(dev, qp, sgl, index, offset, src, srcOffset, len, SCATTER, null);
    }

    /**
     * Where {@code len} bytes starting {@code offset} bytes into the WQE's scatter list land, when they all fall in one
     * SGE of host memory: that SGE's MR, checked by {@link #localMr} for the NIC's write, with the address in
     * {@code at[0]}; null otherwise, and then the caller scatters from a copy with {@link #scatter}, which reports
     * any error. Lets a payload pulled from another process land without a copy in between.
     */
    static SoftMr scatterSpan(final SoftDevice dev, final SoftQp qp, final SgeList sgl, final long index, long offset,
                              final int len, final long[] at) {
        final int n = sgl.numSge(index);
        for (int i = 0; i < n; i++) {
            final long sgeLen = Integer.toUnsignedLong(sgl.sgeLength(index, i));
            if (offset >= sgeLen) {
                offset -= sgeLen;
                continue;
            }
            if (len > sgeLen - offset) {
                return null;
            }
            final long addr = sgl.sgeAddr(index, i) + offset;
            final SoftMr mr = localMr(dev, qp, sgl.sgeLkey(index, i), addr, len, true);
            if (mr == null || mr.segment == null) {
                return null;
            }
            at[0] = addr;
            return mr;
        }
        return null;
    }

    /**
     * The references of one packet, collected by {@link #references} before the packet is claimed (its length
     * depends on their number) and written into it after: one walk of the gather list per packet, not two.
     * A segment per SGE at most.
     */
    static final class Refs {
        final long[] va = new long[SoftDevice.MAX_SGE];
        final int[] lkey = new int[SoftDevice.MAX_SGE];
        final int[] length = new int[SoftDevice.MAX_SGE];
        /** The MR each reference lies in (a deferred payload is written from its memory). */
        final SoftMr[] mr = new SoftMr[SoftDevice.MAX_SGE];
        /**
         * Whether DMA memory with a CPU view ({@link SoftMr#dmaView}) may be referenced: set by an RC requester
         * whose port does not pull references from another process (where a reference must be a host address).
         */
        boolean dmaViews;

        /** Writes the first {@code n} collected references into {@code pkt} (a reference packet of n segments). */
        void writeInto(final Packet pkt, final int n) {
            for (int i = 0; i < n; i++) {
                pkt.refEntry(i, va[i], lkey[i], length[i]);
            }
        }
    }

    /**
     * How many segments reference {@code len} bytes starting {@code offset} bytes into the WQE's gather list, or 0
     * when some of them may not be referenced (an MR that is not {@link SoftMr#referable}, or any problem the
     * copy path must report: {@link #gather} then finds it). The references are left in {@code into}.
     */
    static int references(final SoftDevice dev, final SoftQp qp, final SgeList sgl, final long index,
                          final long offset, final int len, final Refs into) {
        final int segments = walk(dev, qp, sgl, index, offset, null, 0, len, REFERENCE, into);
        return segments > 0 ? segments : 0;
    }

    /**
     * The walk: the SGE chunks covering {@code [offset, offset + len)} of the list, each checked by
     * {@link #localMr} and then copied or referenced. Returns a WcStatus (GATHER, SCATTER) or, for REFERENCE, the
     * number of segments (a negative value or 0 when something may not be referenced).
     */
    private static int walk(final SoftDevice dev, final SoftQp qp, final SgeList sgl, final long index, long offset,
                            final MemorySegment seg, long segOffset, int len, final int mode, final Refs into) {
        final boolean firstPacket = offset == 0;
        final int n = sgl.numSge(index);
        int segments = 0;
        for (int i = 0; i < n && len > 0; i++) {
            final long sgeLen = Integer.toUnsignedLong(sgl.sgeLength(index, i));
            if (offset >= sgeLen) {
                offset -= sgeLen;
                continue;
            }
            final int chunk = (int) Math.min(len, sgeLen - offset);
            final long addr = sgl.sgeAddr(index, i) + offset;
            final SoftMr mr = localMr(dev, qp, sgl.sgeLkey(index, i), addr, chunk, mode == SCATTER);
            if (mr == null) {
                return mode == REFERENCE ? 0 : WcStatus.LOC_PROT_ERR;
            }
            switch (mode) {
                // bulk-read memory (a CUDA GPU): the rest of the SGE in one read, this packet out of it
                case GATHER -> qp.gatherAhead.read(mr, index, firstPacket, addr, sgl.sgeAddr(index, i) + sgeLen, seg,
                    segOffset, chunk);
                case SCATTER -> {
                    mr.copyIn(seg, segOffset, addr, chunk);
                    qp.noteDmaWrite(mr);
                }
                default -> {
                    if (!mr.referable && (mr.dmaView == null || !into.dmaViews)) {
                        return 0;
                    }
                    into.va[segments] = addr;
                    into.lkey[segments] = mr.key;
                    into.length[segments] = chunk;
                    into.mr[segments] = mr;
                    segments++;
                }
            }
            segOffset += chunk;
            len -= chunk;
            offset = 0;
        }
        if (mode == REFERENCE) {
            return len == 0 ? segments : 0;
        }
        return len == 0 ? WcStatus.SUCCESS : WcStatus.LOC_LEN_ERR;
    }
}
