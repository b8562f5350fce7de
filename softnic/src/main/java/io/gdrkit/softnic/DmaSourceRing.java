/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.softnic.queue.SgeList;
import io.gdrkit.softnic.wire.Psn;
import java.lang.foreign.MemorySegment;

/**
 * A requester's single copy out of memory that prefers bulk reads (a CUDA GPU behind its copy engine), where the
 * receiver is in this JVM: the bytes of a work request are read a span at a time into a ring of pinned host memory
 * the NIC owns, and the packets <em>reference</em> the ring (as packets of registered host memory reference the
 * sender's MR) instead of carrying copies. The receiver's copy engine then reads them where they lie: a GPU-to-GPU
 * WRITE crosses PCIe twice (device to host, host to device), as a NIC's loopback through its own memory would, with
 * no CPU copy. Without it every byte also went through two CPU copies (read-ahead buffer to packet, packet to the
 * receiver's pinned staging): 4.2 GB/s at 1 MiB on an H200, a ninth of a pinned host-to-device copy.
 *
 * <p>The ring is an MR of the QP's protection domain in the device's MR table (no remote access: only this NIC's
 * references name it), so the receiver resolves a reference to it exactly as to any other MR of the sender.
 *
 * <p>Reuse: the receiver may read a referenced span by DMA until its completion fence. A receiver that placed a
 * packet from a ring ({@link SoftMr#nicRing}) fences every ACK that covers it, mid-message too, and so does any
 * response that acknowledges (a READ response's AETH, an atomic's). So an extent is overwritten only once every PSN
 * that referenced it is acknowledged ({@link SoftQp#compPsn} past the last), and the packet that ends an extent
 * asks for an ACK. When the ring is full the requester waits for those ACKs; a request larger than the ring streams
 * through it. A retransmission cut into other spans than the first time, whose bytes lie across two extents, carries
 * a copy instead.
 *
 * <p>Reading ahead ({@link SoftDevice#sourceAhead}): when a packet first references an extent, the read of what
 * follows (the rest of the SGE, or the next posted request's first SGE) is started without waiting
 * ({@link io.gdrkit.core.mem.DmaMemory#dmaReadSourceStart}), so it overlaps the packets of this one; a packet awaits
 * its extent's read before it references it. A read ahead that no packet wanted is dropped when it blocks the ring.
 *
 * <pre>
 * ring (RING bytes of pinned host memory), extents appended at the cursor, freed from the oldest:
 *   [ extent: request w, bytes [va, va + len) of MR m, last PSN, read token ][ ... ]   free   [ oldest ... ]
 *   an extent never wraps: one that does not fit before the end starts again at 0
 * </pre>
 *
 * <p>One per QP, used by its requester only (single writer); the ring is allocated and registered on first use.
 */
final class DmaSourceRing {
    /** The ring's bytes: four 1 MiB messages, or sixty-four of 64 KiB, in flight. */
    static final int RING = 4 << 20;
    /** The most one read takes: a 1 MiB message is one copy-engine read. */
    static final int AHEAD = 1 << 20;
    /** The most extents alive at once. */
    private static final int EXTENTS = 128;
    /** {@link #references}' answer when the ring is full until ACKs come back: send nothing now. */
    static final int WAIT = -1;

    private MemorySegment ring;
    private SoftMr ringMr;
    private Object domain;
    /**
     * The ring of the domain used before (another GPU's pinned memory), kept: a collective that reads buffers of two
     * GPUs in turn would otherwise allocate and pin a new ring at every switch.
     */
    private MemorySegment spareRing;
    private SoftMr spareMr;
    private Object spareDomain;
    /** Extents, oldest at {@link #head}, {@link #count} alive. */
    private final long[] wr = new long[EXTENTS];
    private final SoftMr[] mrOf = new SoftMr[EXTENTS];
    private final long[] va = new long[EXTENTS];
    private final int[] start = new int[EXTENTS];
    private final int[] len = new int[EXTENTS];
    /** The last PSN that referenced each extent (in PSN order: a retransmission of an older one keeps the later). */
    private final int[] lastPsn = new int[EXTENTS];
    /** Whether a packet has referenced each extent (one read ahead has not yet: it has no PSN). */
    private final boolean[] referenced = new boolean[EXTENTS];
    /** Each extent's read in flight ({@link io.gdrkit.core.mem.DmaMemory#dmaReadSourceStart}'s token; 0: landed). */
    private final long[] token = new long[EXTENTS];
    /** The end of the SGE each extent was read from: where the next read ahead starts, or the next request. */
    private final long[] sgeEnd = new long[EXTENTS];
    private long readsAhead;
    /** Whether the last reference ended its extent: its packet asks for an ACK, which frees the extent. */
    private boolean endsExtent;
    private int head;
    private int count;
    /** Where the next extent may start (the newest one's end). */
    private int cursor;
    private long reads;
    private long referencedBytes;

    /**
     * Refers {@code bytes} bytes at {@code offset} into request {@code index}'s gather list to the ring, reading
     * them into it first unless an extent of the same request holds them. Returns 1 (one reference in {@code into}),
     * 0 (not here: the bytes span several SGEs, the memory does not prefer bulk reads, or no room; the caller copies
     * them) or {@link #WAIT}.
     */
    int references(final SoftDevice dev, final SoftQp qp, final SgeList sgl, final long index, long offset,
                   final int bytes, final int psn, final int packets, final Sgl.Refs into) {
        endsExtent = false;
        final int n = sgl.numSge(index);
        int i = 0;
        for (; i < n; i++) {
            final long sgeLen = Integer.toUnsignedLong(sgl.sgeLength(index, i));
            if (offset < sgeLen) {
                if (offset + bytes > sgeLen) {
                    return 0; // across SGEs: copied
                }
                break;
            }
            offset -= sgeLen;
        }
        if (i == n || bytes <= 0 || bytes > AHEAD) {
            return 0;
        }
        final long addr = sgl.sgeAddr(index, i) + offset;
        final SoftMr mr = Sgl.localMr(dev, qp, sgl.sgeLkey(index, i), addr, bytes, false);
        if (mr == null || !mr.bulkReads || mr.dma == null) {
            return 0; // a bad key is reported by the copy path
        }
        int e = find(index, mr, addr, bytes);
        if (e >= 0 && token[e] != 0) {
            mr.dma.dmaReadAwait(token[e]); // read ahead: landed by now, mostly
            token[e] = 0;
        }
        if (e < 0 && overlapsLive(index, mr, addr, bytes)) {
            return 0; // a retransmission cut differently: across two extents, or partly in one; copied
        }
        if (e < 0) {
            final long end = sgl.sgeAddr(index, i) + Integer.toUnsignedLong(sgl.sgeLength(index, i));
            final int ahead = (int) Math.min(AHEAD, end - addr);
            final Object d = mr.dma.readBufferDomain();
            if (ring == null || domain != d) {
                if (count > 0 && !reclaimAll(qp)) {
                    return 0; // the ring is another GPU's and still read: copy until it drains
                }
                if (!switchTo(dev, qp, mr, d)) {
                    return 0;
                }
            }
            final int at = place(qp, ahead);
            if (at < 0) {
                // full of extents whose last packets were sent and asked for ACKs: they free it
                return WAIT;
            }
            // the memory's read of the request's source (a copy-engine round trip, beside the writes); a failure throws
            mr.copyOutSource(addr, ring, at, ahead);
            e = append(index, mr, addr, at, ahead, end, 0);
            reads++;
        }
        final int last = Psn.add(psn, packets - 1);
        final boolean firstUse = !referenced[e];
        if (firstUse || Psn.diff(last, lastPsn[e]) > 0) {
            lastPsn[e] = last;
        }
        referenced[e] = true;
        if (firstUse && dev.sourceAhead) {
            readAhead(dev, qp, sgl, index, mr, e); // the next span's read overlaps this one's packets
        }
        endsExtent = addr + bytes == va[e] + len[e];
        into.va[0] = ring.address() + start[e] + (addr - va[e]);
        into.lkey[0] = ringMr.key;
        into.length[0] = bytes;
        referencedBytes += bytes;
        return 1;
    }

    /**
     * Starts the read of what follows extent {@code e} (the rest of its SGE, or the next request's first SGE when
     * that is posted and reads memory of the same GPU), where it is not in the ring yet and there is room now.
     */
    private void readAhead(final SoftDevice dev, final SoftQp qp, final SgeList sgl, final long index,
                           final SoftMr mr, final int e) {
        long w = index;
        SoftMr m = mr;
        long addr = va[e] + len[e];
        long end = sgeEnd[e];
        if (addr >= end) {
            w = index + 1;
            if (w >= qp.sq.doorbell().producer() || sgl.numSge(w) < 1 || !isData(qp.sq.opcode(w))
                || (qp.sq.flags(w) & io.gdrkit.verbs.SendFlags.INLINE) != 0) {
                return;
            }
            final long first = Integer.toUnsignedLong(sgl.sgeLength(w, 0));
            if (first < dev.oneCopyMin) {
                return; // its packets carry their bytes
            }
            addr = sgl.sgeAddr(w, 0);
            end = addr + first;
            m = Sgl.localMr(dev, qp, sgl.sgeLkey(w, 0), addr, first, false);
            if (m == null || !m.bulkReads || m.dma == null || m.dma.readBufferDomain() != domain) {
                return; // a bad key is the copy path's to report, in order
            }
        }
        final int ahead = (int) Math.min(AHEAD, end - addr);
        if (overlapsLive(w, m, addr, ahead)) {
            return;
        }
        final int at = placeNow(ahead);
        if (at < 0) {
            return;
        }
        final long t = m.dma.dmaReadSourceStart(addr - m.address, ring, at, ahead);
        append(w, m, addr, at, ahead, end, t);
        readsAhead++;
    }

    private static boolean isData(final int op) {
        return op == io.gdrkit.verbs.WrOpcode.RDMA_WRITE || op == io.gdrkit.verbs.WrOpcode.RDMA_WRITE_WITH_IMM
            || io.gdrkit.verbs.WrOpcode.isSend(op);
    }

    /** The live extent of request {@code index} over MR {@code mr} that holds [addr, addr + bytes), or -1. */
    private int find(final long index, final SoftMr mr, final long addr, final int bytes) {
        for (int k = count - 1; k >= 0; k--) { // the newest first: a message's packets read the newest extent
            final int e = (head + k) % EXTENTS;
            if (wr[e] == index && mrOf[e] == mr && addr >= va[e] && addr - va[e] <= len[e] - bytes) {
                return e;
            }
        }
        return -1;
    }

    /** Whether the last reference ended its extent (its packet should ask for an ACK). */
    boolean endsExtent() {
        return endsExtent;
    }

    /** Forgets every extent: the QP was reset (its PSNs start again), nothing it sent is in flight any more. */
    void reset() {
        for (int k = 0; k < count; k++) {
            drop((head + k) % EXTENTS);
        }
        count = 0;
        head = 0;
        cursor = 0;
    }

    /** Lets go of extent {@code e}: a read ahead still landing in the ring lands first. */
    private void drop(final int e) {
        if (token[e] != 0) {
            mrOf[e].dma.dmaReadAwait(token[e]);
            token[e] = 0;
        }
        mrOf[e] = null;
    }

    /** Whether a live extent of request {@code index} over {@code mr} holds any of [addr, addr + bytes). */
    private boolean overlapsLive(final long index, final SoftMr mr, final long addr, final int bytes) {
        for (int k = 0; k < count; k++) {
            final int e = (head + k) % EXTENTS;
            if (wr[e] == index && mrOf[e] == mr && addr < va[e] + len[e] && va[e] < addr + bytes) {
                return true;
            }
        }
        return false;
    }

    /**
     * Frees the extents whose every referencing PSN is acknowledged, oldest first, up to one read ahead and not yet
     * referenced; true when none is left.
     */
    private boolean reclaimAll(final SoftQp qp) {
        while (count > 0 && referenced[head] && Psn.diff(qp.compPsn, lastPsn[head]) > 0) {
            popHead();
        }
        return count == 0;
    }

    /** Lets go of the oldest extent. */
    private void popHead() {
        drop(head);
        head = (head + 1) % EXTENTS;
        count--;
    }

    /**
     * Where an extent of {@code bytes} may start now, freeing acknowledged ones as needed, or -1. A read ahead that
     * no packet referenced yet and that blocks the ring is dropped (after its read landed): the requester needs
     * other bytes than those it guessed.
     */
    private int place(final SoftQp qp, final int bytes) {
        for (int pass = 0; pass < 3; pass++) {
            final int at = placeNow(bytes);
            if (at >= 0) {
                return at;
            }
            reclaimAll(qp);
            if (pass == 1 && count > 0 && !referenced[head]) {
                popHead();
            }
        }
        return -1;
    }

    /** Where an extent of {@code bytes} may start without freeing any, or -1. */
    private int placeNow(final int bytes) {
        if (count == 0) {
            cursor = 0;
            return 0;
        }
        if (count < EXTENTS) {
            final int h = start[head];
            if (cursor > h) {
                if (cursor + bytes <= RING) {
                    return cursor;
                }
                if (bytes < h) {
                    return 0;
                }
            } else if (cursor + bytes < h) {
                return cursor;
            }
        }
        return -1;
    }

    private int append(final long index, final SoftMr mr, final long addr, final int at, final int bytes,
                       final long end, final long readToken) {
        final int e = (head + count) % EXTENTS;
        referenced[e] = false;
        token[e] = readToken;
        sgeEnd[e] = end;
        wr[e] = index;
        mrOf[e] = mr;
        va[e] = addr;
        start[e] = at;
        len[e] = bytes;
        count++;
        cursor = at + bytes;
        return e;
    }

    /**
     * The ring of domain {@code d} (no extent alive): the spare one when it is that domain's, else pinned memory of
     * the source's GPU, registered as an MR of the QP's PD with no remote access; the current ring becomes the spare.
     */
    private boolean switchTo(final SoftDevice dev, final SoftQp qp, final SoftMr source, final Object d) {
        final MemorySegment m;
        final SoftMr mMr;
        if (spareRing != null && spareDomain == d) {
            m = spareRing;
            mMr = spareMr;
        } else {
            m = source.dma.allocateReadBuffer(RING);
            if (m == null || m.byteSize() < RING || !m.isAccessibleBy(SoftMr.NOBODY)) {
                return false;
            }
            if (spareMr != null) {
                dev.removeInternalMr(spareMr);
            }
            mMr = dev.registerInternalMr(qp.pd, m);
        }
        spareRing = ring;
        spareMr = ringMr;
        spareDomain = domain;
        ring = m;
        ringMr = mMr;
        domain = d;
        head = 0;
        count = 0;
        cursor = 0;
        return true;
    }

    /**
     * Takes the rings' MRs out of the device's table: the QP is being destroyed. Reads still landing in the ring land
     * first, so no copy writes memory the ring no longer holds.
     */
    void release(final SoftDevice dev) {
        reset();
        for (final SoftMr m : new SoftMr[] {ringMr, spareMr}) {
            if (m != null) {
                dev.removeInternalMr(m);
            }
        }
        ringMr = null;
        spareMr = null;
        ring = null;
        spareRing = null;
        domain = null;
        spareDomain = null;
        count = 0;
    }

    /** Copy-engine reads into the ring so far. */
    long reads() {
        return reads;
    }

    /** Reads started ahead of the packets that need them so far. */
    long readsAhead() {
        return readsAhead;
    }

    /** Bytes sent as references to the ring so far. */
    long referencedBytes() {
        return referencedBytes;
    }
}
