/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.mem.DmaMemory;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The requester's {@link DmaSourceRing}: packets out of memory that prefers bulk reads (a CUDA GPU behind its copy
 * engine) reference the NIC's pinned ring, and the receiver's memory may read them there late. The destination here
 * defers every such copy to the last moment it may (its completion fence), as a copy engine with a queue does, so a
 * ring span overwritten before the fence that covers the packets that referenced it would land wrong bytes. Sizes
 * from 17 B to more than the ring (one request streams through it), many requests in flight (the ring full: the
 * requester waits for ACKs), a SEND, host memory as the destination, and the ring's MR gone with the QP.
 */
@Timeout(120)
class DmaSourceRingTest {
    private static final int BIG = 16 << 20;

    @Test
    void writesFromBulkMemoryAreReferencedFromTheRingAndLandByTheirCompletion() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 20)) {
            final HostDma src = new HostDma(f.arena.allocate(BIG, 4096), true, new Object());
            final DeferredDma dst = new DeferredDma(f.arena.allocate(BIG, 4096));
            final MemoryRegion smr = f.a.pd.registerMr(src, AccessFlags.LOCAL_WRITE);
            final MemoryRegion dmr = f.b.pd.registerMr(dst, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            final SoftQp qp = (SoftQp) f.a.qp;
            long seed = 1;
            for (final int size : new int[] {17, 4096, 4097, 300_000, 1 << 20, (3 << 20) + 5, (6 << 20) + 3}) {
                Fixture.fill(src.mem.asSlice(0, size), seed);
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .wrId(size).sge(smr, 0, size).remote(dmr.address(), dmr.rkey()));
                f.awaitSuccess(f.a.scq, "WRITE of " + size + " B from bulk memory");
                Fixture.assertBytes(src.mem.asSlice(0, size), dst.mem.asSlice(0, size), "WRITE of " + size + " B at "
                    + "its completion");
                // the source changes after the completion: nothing reads it, or the ring, into the destination later
                final MemorySegment expected = f.arena.allocate(size);
                MemorySegment.copy(src.mem, 0, expected, 0, size);
                Fixture.fill(src.mem.asSlice(0, size), seed + 1000);
                f.settle(200);
                dst.fence();
                Fixture.assertBytes(expected, dst.mem.asSlice(0, size), "WRITE of " + size + " B after the source "
                    + "changed");
                seed++;
            }
            assertTrue(qp.sourceRing.reads() > 0, "reads into the ring");
            // late copies: everything but packets with less than the single-copy minimum (1 KiB) left of their
            // message (the 17 B WRITE, the last 5 B of 3 MiB + 5 and 3 B of 6 MiB + 3, after whole spans); the
            // 6 MiB WRITE streams through the 4 MiB ring (an extent is reused once its PSNs are acknowledged)
            assertEquals(4096 + 4097 + 300_000 + (1 << 20) + (3 << 20) + (6 << 20), dst.deferredBytes,
                "bytes the destination copied late, from the ring");
            // more than the ring in flight: 40 x 256 KiB, each its own bytes; the requester waits for completions
            final int piece = 256 << 10;
            final int n = 40;
            Fixture.fill(src.mem.asSlice(0, (long) n * piece), 77);
            final long referencedBefore = qp.sourceRing.referencedBytes();
            for (int i = 0; i < n; i++) {
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(i)
                    .sge(smr, (long) i * piece, piece).remote(dmr.address() + (long) i * piece, dmr.rkey()));
            }
            final List<WorkCompletion> done = f.awaitN(f.a.scq, n, "40 WRITEs in flight");
            for (int i = 0; i < n; i++) {
                assertEquals(i, done.get(i).wrId);
                assertEquals(io.gdrkit.verbs.WcStatus.SUCCESS, done.get(i).status, "WRITE " + i);
            }
            dst.fence();
            Fixture.assertBytes(src.mem.asSlice(0, (long) n * piece), dst.mem.asSlice(0, (long) n * piece),
                "40 WRITEs of 256 KiB in flight");
            assertEquals((long) n * piece, qp.sourceRing.referencedBytes() - referencedBefore,
                "every byte referenced from the ring (it holds 16 of them at once)");
        }
    }

    /**
     * Reads ahead: while a span's packets go out, the next span of the request (or the next posted request) is read
     * into the ring without waiting. The source here lands such a read only when it is awaited, so a packet that
     * referenced a span before its read was awaited would carry stale ring bytes to the destination.
     */
    @Test
    void spansReadAheadAreAwaitedBeforeAPacketReferencesThem() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 20)) {
            final AheadDma src = new AheadDma(f.arena.allocate(BIG, 4096));
            final DeferredDma dst = new DeferredDma(f.arena.allocate(BIG, 4096));
            final MemoryRegion smr = f.a.pd.registerMr(src, AccessFlags.LOCAL_WRITE);
            final MemoryRegion dmr = f.b.pd.registerMr(dst, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            final SoftQp qp = (SoftQp) f.a.qp;
            // one request of 10 MiB + 7 (its spans read ahead), then 12 x 1 MiB and 100 x 64 KiB in flight (the next
            // request read ahead)
            Fixture.fill(src.mem.asSlice(0, (10 << 20) + 7), 41);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(smr, 0, (10 << 20) + 7).remote(dmr.address(), dmr.rkey()));
            f.awaitSuccess(f.a.scq, "10 MiB WRITE");
            Fixture.assertBytes(src.mem.asSlice(0, (10 << 20) + 7), dst.mem.asSlice(0, (10 << 20) + 7), "10 MiB WRITE");
            for (final int piece : new int[] {1 << 20, 64 << 10}) {
                final int n = piece == 1 << 20 ? 12 : 100;
                Fixture.fill(src.mem.asSlice(0, (long) n * piece), piece + 3);
                for (int i = 0; i < n; i++) {
                    f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .wrId(i).sge(smr, (long) i * piece, piece).remote(dmr.address() + (long) i * piece,
                            dmr.rkey()));
                }
                for (final WorkCompletion wc : f.awaitN(f.a.scq, n, n + " WRITEs of " + piece + " B")) {
                    assertEquals(io.gdrkit.verbs.WcStatus.SUCCESS, wc.status, "WRITE " + wc.wrId);
                }
                dst.fence();
                Fixture.assertBytes(src.mem.asSlice(0, (long) n * piece), dst.mem.asSlice(0, (long) n * piece),
                    n + " WRITEs of " + piece + " B in flight");
            }
            assertTrue(qp.sourceRing.readsAhead() > 10, "spans read ahead: " + qp.sourceRing.readsAhead());
            assertTrue(src.awaited > 10, "reads ahead awaited: " + src.awaited);
        }
    }

    @Test
    void aSendAndAWriteIntoHostMemoryReadTheRingToo() {
        try (Fixture f = new Fixture(new SoftNicContext(), 4 << 20)) {
            final HostDma src = new HostDma(f.arena.allocate(4 << 20, 4096), true, new Object());
            final MemoryRegion smr = f.a.pd.registerMr(src, AccessFlags.LOCAL_WRITE);
            final SoftQp qp = (SoftQp) f.a.qp;
            final int size = (2 << 20) + 11;
            Fixture.fill(src.mem.asSlice(0, size), 5);
            f.b.qp.postRecv(new RecvWorkRequest().wrId(1).sge(f.b.mr, 0, size));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(1)
                .sge(smr, 0, size));
            f.awaitSuccess(f.a.scq, "SEND from bulk memory");
            assertEquals(size, f.awaitSuccess(f.b.rcq, "its receive").byteLen);
            Fixture.assertBytes(src.mem.asSlice(0, size), f.b.buf.asSlice(0, size), "SEND");
            Fixture.fill(src.mem.asSlice(0, size), 6);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(2)
                .sge(smr, 0, size).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE from bulk memory into host memory");
            Fixture.assertBytes(src.mem.asSlice(0, size), f.b.buf.asSlice(0, size), "WRITE into host memory");
            // both through the ring but their last 11 B (less than the single-copy minimum left: copied)
            assertEquals(2L * (size - 11), qp.sourceRing.referencedBytes(), "both through the ring");
        }
    }

    /**
     * A READ response acknowledges the WRITE before it (whose packet asked for no ACK: unsignaled, not the last
     * posted, the NICs run by the poller after both posts): the requester completes both on it, so the response
     * waits for the destination's completion fence as an ACK does, and the WRITE's bytes (referenced from registered
     * host memory, copied late) are in place when the READ completes. A source ring's packets always ask for the ACK
     * that frees their extent; this is the same rule for any referenced source.
     */
    @Test
    void aReadResponseThatAcknowledgesAWriteLeavesAfterItsCopiesLanded() {
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER), 1 << 20)) {
            final DeferredDma dst = new DeferredDma(f.arena.allocate(1 << 20, 4096));
            final MemoryRegion dmr = f.b.pd.registerMr(dst, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            for (int round = 0; round < 20; round++) {
                Fixture.fill(f.a.buf.asSlice(4096, 4096), 300 + round);
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(1).sge(f.a.mr, 4096, 4096)
                    .remote(dmr.address(), dmr.rkey()));
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(2)
                    .sge(f.a.mr, 0, 8).remote(f.b.mr.address(), f.b.mr.rkey()));
                assertEquals(2, f.awaitSuccess(f.a.scq, "the READ after an unsignaled WRITE").wrId);
                // no fence here: what the READ's completion promises must already hold
                Fixture.assertBytes(f.a.buf.asSlice(4096, 4096), dst.mem.asSlice(0, 4096), "the WRITE before the "
                    + "READ, round " + round);
            }
            assertTrue(dst.deferredBytes >= 20 * 4096, "the WRITEs went by reference, copied late");
        }
    }

    @Test
    void theRingsMrGoesWithItsQp() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 20)) {
            final int before = f.a.dev.mrs.live();
            final HostDma src = new HostDma(f.arena.allocate(1 << 20, 4096), true, new Object());
            final MemoryRegion smr = f.a.pd.registerMr(src, AccessFlags.LOCAL_WRITE);
            Fixture.fill(src.mem, 9);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(smr, 0, 1 << 20).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE from bulk memory");
            Fixture.assertBytes(src.mem, f.b.buf.asSlice(0, 1 << 20), "WRITE");
            assertEquals(before + 2, f.a.dev.mrs.live(), "the source's MR and the ring's");
            f.a.qp.close();
            assertEquals(before + 1, f.a.dev.mrs.live(), "the ring's MR went with its QP");
            smr.deregister();
        }
    }

    /**
     * Host-backed DMA memory read by bulk copies whose reads started ahead land only when awaited (or before any
     * later read, in order, as on one stream).
     */
    static final class AheadDma implements DmaMemory {
        final MemorySegment mem;
        private final List<Object[]> pending = new ArrayList<>();
        private long started;
        private long landed;
        long awaited;

        AheadDma(final MemorySegment mem) {
            this.mem = mem;
        }

        private synchronized void land(final long upTo) {
            while (landed < upTo && !pending.isEmpty()) {
                final Object[] p = pending.remove(0);
                MemorySegment.copy(mem, (long) p[0], (MemorySegment) p[1], (long) p[2], (long) p[3]);
                landed++;
            }
        }

        @Override
        public long address() {
            return mem.address();
        }

        @Override
        public long byteSize() {
            return mem.byteSize();
        }

        @Override
        public void dmaWrite(final long offset, final MemorySegment src, final long srcOffset, final long length) {
            land(started);
            MemorySegment.copy(src, srcOffset, mem, offset, length);
        }

        @Override
        public void dmaRead(final long offset, final MemorySegment dst, final long dstOffset, final long length) {
            land(started);
            MemorySegment.copy(mem, offset, dst, dstOffset, length);
        }

        @Override
        public synchronized long dmaReadSourceStart(final long offset, final MemorySegment dst, final long dstOffset,
                                                    final long length) {
            pending.add(new Object[] {offset, dst, dstOffset, length});
            return ++started;
        }

        @Override
        public void dmaReadAwait(final long token) {
            awaited++;
            land(token);
        }

        @Override
        public boolean prefersBulkReads() {
            return true;
        }

        @Override
        public MemorySegment allocateReadBuffer(final long bytes) {
            return java.lang.foreign.Arena.ofAuto().allocate(bytes, 4096);
        }

        @Override
        public void completionFence() {
        }

        @Override
        public long dmaAtomic(final long offset, final boolean compareAndSwap, final long operand, final long swap) {
            throw new UnsupportedOperationException();
        }

        @Override
        public String describe() {
            return "host-backed DMA memory whose reads ahead land when awaited (test)";
        }
    }

    /**
     * Host-backed DMA memory whose writes from a held source (a referenced span) are made as late as allowed: at
     * the next completion fence (or before a read or a plain write, which are ordered behind them).
     */
    static final class DeferredDma implements DmaMemory {
        final MemorySegment mem;
        private final List<Object[]> pending = new ArrayList<>();
        long deferredBytes;
        private long tokens;

        DeferredDma(final MemorySegment mem) {
            this.mem = mem;
        }

        synchronized void fence() {
            for (final Object[] p : pending) {
                MemorySegment.copy((MemorySegment) p[0], (long) p[1], mem, (long) p[2], (long) p[3]);
            }
            pending.clear();
        }

        @Override
        public long address() {
            return mem.address();
        }

        @Override
        public long byteSize() {
            return mem.byteSize();
        }

        @Override
        public synchronized void dmaWrite(final long offset, final MemorySegment src, final long srcOffset,
                                          final long length) {
            fence();
            MemorySegment.copy(src, srcOffset, mem, offset, length);
        }

        @Override
        public synchronized void dmaWriteHeldSource(final long offset, final MemorySegment src, final long srcOffset,
                                                    final long length) {
            pending.add(new Object[] {src, srcOffset, offset, length});
            deferredBytes += length;
        }

        @Override
        public synchronized void dmaRead(final long offset, final MemorySegment dst, final long dstOffset,
                                         final long length) {
            fence();
            MemorySegment.copy(mem, offset, dst, dstOffset, length);
        }

        @Override
        public void completionFence() {
            fence();
        }

        @Override
        public synchronized long completionFenceStart() {
            return ++tokens;
        }

        @Override
        public boolean completionFenceDone(final long token) {
            fence();
            return true;
        }

        @Override
        public long dmaAtomic(final long offset, final boolean compareAndSwap, final long operand, final long swap) {
            throw new UnsupportedOperationException();
        }

        @Override
        public String describe() {
            return "host-backed DMA memory with late copies (test)";
        }
    }
}
