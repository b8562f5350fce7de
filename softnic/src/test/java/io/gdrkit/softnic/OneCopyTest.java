/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.DeterministicRunner;
import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The single-copy path of the in-JVM fabric: SEND/WRITE packets that reference the sender's MR instead of carrying
 * its bytes, the responder copying straight from it; where it is used, where the bytes travel instead, and that a
 * reference is read only for the next expected PSN of a live sender.
 */
class OneCopyTest {
    private static final int MTU = 1024;
    private static final int SIZE = 5 * MTU + 333; // six packets, the last one short

    private static QpAttr attr() {
        return QpBringUp.rcDefaults().pathMtu(Mtu.MTU_1024);
    }

    private static QpInitAttr init() {
        final QpInitAttr init = new QpInitAttr();
        init.cap.maxSendWr(16).maxRecvWr(16).maxSendSge(4).maxRecvSge(4);
        return init;
    }

    private static long referenced(final Fixture f) {
        return f.b.dev.responder.referencedPackets();
    }

    /** WRITE of {@code SIZE} bytes from a's buffer at 0 to b's at 0; byte-exact. */
    private static void write(final Fixture f, final long seed) {
        Fixture.fill(f.a.buf.asSlice(0, SIZE), seed);
        f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
            .sge(f.a.mr, 0, SIZE).remote(f.b.mr.address(), f.b.mr.rkey()));
        f.awaitSuccess(f.a.scq, "WRITE");
        Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), f.b.buf.asSlice(0, SIZE), "WRITE");
    }

    @Test
    void writeSendAndWriteWithImmAreByteExactThroughReferences() {
        try (Fixture f = new Fixture(new SoftNicContext().oneCopyMin(1).oneCopy(true), 1 << 20, init(), attr());
             Arena arena = Arena.ofShared()) {
            // a second MR: the gather list crosses MRs and packet boundaries, with an empty SGE in the middle
            final MemorySegment other = arena.allocate(64 * 1024, 4096);
            final MemoryRegion omr = f.a.pd.registerMr(other, AccessFlags.LOCAL_WRITE);
            Fixture.fill(f.a.buf.asSlice(0, 4096), 11);
            Fixture.fill(other, 12);
            final int[] lens = {1500, 0, 2100, 777};
            final MemorySegment expected = Arena.ofAuto().allocate(1500 + 2100 + 777);
            MemorySegment.copy(f.a.buf, 100, expected, 0, 1500);
            MemorySegment.copy(other, 3000, expected, 1500, 2100);
            MemorySegment.copy(f.a.buf, 2000, expected, 3600, 777);
            final int total = (int) expected.byteSize();

            // WRITE, multi-SGE
            final SendWorkRequest w = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .wrId(1).remote(f.b.mr.address() + 8192, f.b.mr.rkey()).numSge(4);
            w.sge(0).set(f.a.mr, 100, lens[0]);
            w.sge(1).set(f.a.mr, 0, lens[1]);
            w.sge(2).set(omr, 3000, lens[2]);
            w.sge(3).set(f.a.mr, 2000, lens[3]);
            f.a.qp.postSend(w);
            f.awaitSuccess(f.a.scq, "multi-SGE WRITE");
            Fixture.assertBytes(expected, f.b.buf.asSlice(8192, total), "multi-SGE WRITE");
            final long afterWrite = referenced(f);
            assertEquals(5, afterWrite, "every packet of the WRITE went by reference");

            // SEND, multi-SGE on both sides: the receive list splits the message differently
            final RecvWorkRequest rw = new RecvWorkRequest().wrId(7).numSge(2);
            rw.sge(0).set(f.b.mr, 65536, 1000);
            rw.sge(1).set(f.b.mr, 70000, 10000);
            f.b.qp.postRecv(rw);
            final SendWorkRequest s = new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(2)
                .numSge(3);
            s.sge(0).set(f.a.mr, 100, lens[0]);
            s.sge(1).set(omr, 3000, lens[2]);
            s.sge(2).set(f.a.mr, 2000, lens[3]);
            f.a.qp.postSend(s);
            f.awaitSuccess(f.a.scq, "multi-SGE SEND");
            final WorkCompletion rwc = f.awaitSuccess(f.b.rcq, "receive");
            assertEquals(total, rwc.byteLen);
            Fixture.assertBytes(expected.asSlice(0, 1000), f.b.buf.asSlice(65536, 1000), "SEND, first receive SGE");
            Fixture.assertBytes(expected.asSlice(1000), f.b.buf.asSlice(70000, total - 1000), "SEND, second SGE");
            assertEquals(afterWrite + 5, referenced(f), "every packet of the SEND went by reference");

            // WRITE_WITH_IMM, one SGE, one short packet and a long one
            for (final int len : new int[] {17, SIZE}) {
                Fixture.fill(f.a.buf.asSlice(0, len), len);
                f.b.qp.postRecv(new RecvWorkRequest().wrId(8).sge(f.b.mr, 0, 0));
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                    .wrId(3).imm(0x1234_5678).sge(f.a.mr, 0, len).remote(f.b.mr.address() + 200_000, f.b.mr.rkey()));
                f.awaitSuccess(f.a.scq, "WRITE_WITH_IMM");
                final WorkCompletion iwc = f.awaitSuccess(f.b.rcq, "immediate");
                assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, iwc.opcode);
                assertEquals(0x1234_5678, iwc.immData);
                Fixture.assertBytes(f.a.buf.asSlice(0, len), f.b.buf.asSlice(200_000, len), "WRITE_WITH_IMM " + len);
            }
            assertEquals(afterWrite + 5 + 1 + 6, referenced(f));
            assertEquals(0, f.b.dev.responder.unresolvedReferences());
        }
    }

    @Test
    void optionOffCopiesTheBytes() {
        try (Fixture f = new Fixture(new SoftNicContext().oneCopy(false), 1 << 20, init(), attr())) {
            write(f, 3);
            assertEquals(0, referenced(f));
        }
    }

    @Test
    void hookThatMaySeePayloadsKeepsTheCopyPath() {
        final int[] seen = {0};
        final LinkHook looking = (s, d, buf, off, len) -> {
            seen[0]++;
            return LinkHook.DELIVER;
        };
        try (Fixture f = new Fixture(new SoftNicContext().oneCopyMin(1).oneCopy(true).linkHook(looking), 1 << 20, init(), attr())) {
            write(f, 4);
            assertTrue(seen[0] > 0);
            assertEquals(0, referenced(f));
            // replaced at run time by a hook that passes references: the next packets reference again
            f.driver.linkHook(LinkHook.PASS);
            write(f, 5);
            assertEquals(6, referenced(f));
        }
    }

    @Test
    void linkCrcKeepsTheCopyPath() {
        try (Fixture f = new Fixture(new SoftNicContext().oneCopyMin(1).oneCopy(true).linkCrc(true), 1 << 20, init(), attr())) {
            write(f, 6);
            assertEquals(0, referenced(f));
        }
    }

    @Test
    void dmaAndConfinedSourcesAndInlineDataKeepTheCopyPath() {
        try (Fixture f = new Fixture(new SoftNicContext().oneCopyMin(1).oneCopy(true), 1 << 20, init(), attr());
             Arena confined = Arena.ofConfined()) {
            // DMA (GPU-like) source memory: the NIC must go through dmaRead
            final HostDma dma = new HostDma(Arena.ofAuto().allocate(SIZE, 4096));
            final MemoryRegion dmr = f.a.pd.registerMr(dma, AccessFlags.LOCAL_WRITE);
            Fixture.fill(dma.mem, 8);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(dmr, 0, SIZE).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE from DMA memory");
            Fixture.assertBytes(dma.mem, f.b.buf.asSlice(0, SIZE), "WRITE from DMA memory");
            assertTrue(dma.reads > 0, "read through the DMA interface");
            // memory of a confined arena: only its owner thread may read it, not the peer NIC's
            final MemorySegment own = confined.allocate(SIZE, 4096);
            final MemoryRegion cmr = f.a.pd.registerMr(own, AccessFlags.LOCAL_WRITE);
            Fixture.fill(own, 9);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(2)
                .sge(cmr, 0, SIZE).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE from confined memory");
            Fixture.assertBytes(own, f.b.buf.asSlice(0, SIZE), "WRITE from confined memory");
            // inline data lives in the send queue, which the application may reuse as soon as post returns
            Fixture.fill(f.a.buf.asSlice(0, 48), 10);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE)
                .flags(SendFlags.SIGNALED | SendFlags.INLINE).wrId(3).sge(f.a.mr, 0, 48)
                .remote(f.b.mr.address() + 100_000, f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "inline WRITE");
            Fixture.assertBytes(f.a.buf.asSlice(0, 48), f.b.buf.asSlice(100_000, 48), "inline WRITE");
            assertEquals(0, referenced(f));
        }
    }

    /**
     * Deterministic runs with a hook that drops one packet (it reads headers only, so references still pass):
     * each loss is recovered by retransmission, a resent request references the source again, and duplicates
     * are discarded before their reference is read.
     */
    private record Run(List<String> packets, long referenced, long unresolved) {
    }

    private Run lossy(final long seed, final int dropOpcode, final int dropNth, final int verdict) {
        final ManualClock clock = new ManualClock(0);
        final List<String> seen = new ArrayList<>();
        final Packet view = new Packet();
        final int[] n = {0};
        final LinkHook hook = new LinkHook() {
            @Override
            public int onPacket(final int src, final int dst, final MemorySegment buf, final long off, final int len) {
                view.wrap(buf, off, len);
                final boolean hit = view.opcode() == dropOpcode && n[0]++ == dropNth;
                seen.add(view + (hit ? " HIT" : ""));
                return hit ? verdict : DELIVER;
            }

            @Override
            public long delayNanos() {
                return 5_000_000_000L; // long after the retransmission completed the WRITE
            }

            @Override
            public boolean passesReferences() {
                return true;
            }
        };
        final SoftNicContext ctx = new SoftNicContext().oneCopyMin(1).progressMode(SoftNicContext.ProgressMode.DETERMINISTIC)
            .clock(clock).linkHook(hook).oneCopy(true);
        try (Fixture f = new Fixture(ctx, 1 << 20, init(), QpBringUp.rcDefaults().timeout(8).pathMtu(Mtu.MTU_1024))) {
            final DeterministicRunner runner = new DeterministicRunner(seed, clock, 50, 10_000);
            f.driver.agents().forEach(runner::add);
            Fixture.fill(f.a.buf.asSlice(0, SIZE), seed);
            final MemorySegment sent = Arena.ofAuto().allocate(SIZE);
            MemorySegment.copy(f.a.buf, 0, sent, 0, SIZE);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, SIZE).remote(f.b.mr.address(), f.b.mr.rkey()));
            final WorkCompletion[] wc = {new WorkCompletion()};
            runner.runUntil(() -> f.a.scq.poll(wc) == 1, 200_000, "the WRITE completion");
            assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
            Fixture.assertBytes(sent, f.b.buf.asSlice(0, SIZE), "data after recovery");
            // completed: the application may reuse the source. A late copy of a request must not be read.
            Fixture.fill(f.a.buf.asSlice(0, SIZE), seed + 1);
            final long until = clock.nanoTime() + 10_000_000_000L;
            runner.runUntil(() -> clock.nanoTime() > until, 2_000_000, "the late packets");
            Fixture.assertBytes(sent, f.b.buf.asSlice(0, SIZE), "data after the late duplicates");
            return new Run(seen, referenced(f), f.b.dev.responder.unresolvedReferences());
        }
    }

    @Test
    void droppedAckIsRecoveredByResendingTheReference() {
        final Run r = lossy(42, BthOpcode.ACKNOWLEDGE, 0, LinkHook.DROP);
        assertTrue(r.packets().stream().anyMatch(p -> p.startsWith("ACKNOWLEDGE") && p.endsWith("HIT")), r::toString);
        final List<String> requests = r.packets().stream().filter(p -> p.startsWith("RDMA_WRITE")).toList();
        assertTrue(requests.size() > 6, () -> "the requests went out again: " + requests);
        assertTrue(requests.stream().allMatch(p -> p.contains(" R ")), () -> "all by reference: " + requests);
        // each PSN placed once; the resent ones were duplicates, discarded by PSN before their reference was read
        assertEquals(6, r.referenced(), r::toString);
        assertEquals(0, r.unresolved());
    }

    @Test
    void droppedOrDuplicatedOrLateRequestsPlaceEachPacketOnce() {
        for (int nth = 0; nth < 6; nth++) {
            for (final int verdict : new int[] {LinkHook.DROP, LinkHook.DUPLICATE, LinkHook.DELAY}) {
                final Run r = lossy(7 + nth, BthOpcode.RDMA_WRITE_MIDDLE, nth % 4, verdict);
                assertEquals(6, r.referenced(), r::toString);
            }
            final Run first = lossy(100 + nth, BthOpcode.RDMA_WRITE_FIRST, 0, LinkHook.DELAY);
            assertEquals(6, first.referenced(), first::toString);
        }
    }

    @Test
    void referenceOfAnErroredSenderIsNotRead() {
        final SoftNicContext ctx = new SoftNicContext().oneCopyMin(1).progressMode(SoftNicContext.ProgressMode.DETERMINISTIC)
            .oneCopy(true);
        try (Fixture f = new Fixture(ctx, 1 << 20, init(), attr())) {
            Fixture.fill(f.a.buf.asSlice(0, SIZE), 1);
            Fixture.fill(f.b.buf.asSlice(0, SIZE), 2);
            final MemorySegment before = Arena.ofAuto().allocate(SIZE);
            MemorySegment.copy(f.b.buf, 0, before, 0, SIZE);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, SIZE).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.a.dev.doWork(); // the requests are in b's link, b has not run
            // the application errors its QP: the WRITE is flushed and its memory may be reused
            f.a.qp.modify(new QpAttr().state(QpState.ERR), QpAttrMask.STATE);
            f.a.dev.doWork();
            final WorkCompletion[] wc = {new WorkCompletion()};
            assertEquals(1, f.a.scq.poll(wc));
            assertEquals(WcStatus.WR_FLUSH_ERR, wc[0].status);
            Fixture.fill(f.a.buf.asSlice(0, SIZE), 3);
            f.b.dev.doWork();
            assertEquals(0, referenced(f));
            assertTrue(f.b.dev.responder.unresolvedReferences() > 0);
            Fixture.assertBytes(before, f.b.buf.asSlice(0, SIZE), "destination untouched");
            assertFalse(f.b.rcq.poll(wc) == 1);
        }
    }

    @Test
    void referencePacketLayout() {
        final MemorySegment buf = Arena.ofAuto().allocate(256);
        final Packet p = new Packet();
        final int len = Packet.lengthFor(BthOpcode.RDMA_WRITE_ONLY, Packet.referenceLength(2));
        p.init(buf, 0, len, 2, 1, BthOpcode.RDMA_WRITE_ONLY, 0x12, 5, true, false).reth(0x1000, 0x101, 300);
        p.reference(300, 2).refEntry(0, 0xAAAA_0000L, 0x201, 100).refEntry(1, 0xBBBB_0000L, 0x301, 200);
        final Packet r = new Packet().wrap(buf, 0, len);
        assertTrue(r.isWellFormed());
        assertTrue(r.isReference());
        assertEquals(300, r.payloadLength());
        assertEquals(2, r.refCount());
        assertEquals(0xBBBB_0000L, r.refVa(1));
        assertEquals(0x301, r.refLkey(1));
        assertEquals(200, r.refLength(1));
        assertEquals(0x12, r.destQpn());
        assertEquals(0x1000, r.rethVa());
        // segments that do not add up to the length: malformed, dropped by the receiver
        p.refEntry(1, 0xBBBB_0000L, 0x301, 199);
        assertFalse(new Packet().wrap(buf, 0, len).isWellFormed());
        // a plain packet is not a reference
        p.init(buf, 0, Packet.lengthFor(BthOpcode.RDMA_WRITE_ONLY, 8), 2, 1, BthOpcode.RDMA_WRITE_ONLY, 0x12, 5, true,
            false);
        assertFalse(new Packet().wrap(buf, 0, Packet.lengthFor(BthOpcode.RDMA_WRITE_ONLY, 8)).isReference());
    }

    @Test
    void propertyIsValidated() {
        final String old = System.getProperty(SoftNicContext.ONE_COPY_PROP);
        System.setProperty(SoftNicContext.ONE_COPY_PROP, "yes");
        try {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SoftNicContext().conclude());
            assertTrue(e.getMessage().contains(SoftNicContext.ONE_COPY_PROP), e.getMessage());
        } finally {
            if (old == null) {
                System.clearProperty(SoftNicContext.ONE_COPY_PROP);
            } else {
                System.setProperty(SoftNicContext.ONE_COPY_PROP, old);
            }
        }
        assertTrue(new SoftNicContext().oneCopyMin(1).oneCopy(true).conclude().oneCopy());
    }
}
