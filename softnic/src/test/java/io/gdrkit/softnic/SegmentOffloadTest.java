/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import io.gdrkit.verbs.QpBringUp;
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
import java.util.Collections;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * Segment offload on the single-copy path: one fabric record standing for up to {@code batch} MTU-sized packets of
 * one SEND or WRITE. Byte-exact at sizes around MTU multiples and span boundaries, PSN accounting and ACK coalescing
 * (the requester's window), lost and partly duplicated spans, and where it is not used (hooks that see packets).
 */
class SegmentOffloadTest {
    private static final int MTU = 1024;
    private static final int BATCH = 4;
    /** Sizes around MTU multiples and span (BATCH * MTU) boundaries. */
    private static final int[] SIZES = {1, MTU - 1, MTU, MTU + 1, BATCH * MTU - 1, BATCH * MTU, BATCH * MTU + 1,
        2 * BATCH * MTU, 2 * BATCH * MTU + 1, 13 * MTU + 333, 64 * MTU + 5};

    private static QpAttr attr() {
        return QpBringUp.rcDefaults().timeout(8).pathMtu(Mtu.MTU_1024);
    }

    private static QpInitAttr init() {
        final QpInitAttr init = new QpInitAttr();
        init.cap.maxSendWr(64).maxRecvWr(64).maxSendSge(4).maxRecvSge(4);
        return init;
    }

    private static int packets(final long bytes) {
        return bytes == 0 ? 1 : (int) ((bytes + MTU - 1) / MTU);
    }

    /** A hook that records every record it sees ({@link Packet#toString}) and passes references and spans. */
    private static final class Recorder implements LinkHook {
        final List<String> seen = Collections.synchronizedList(new ArrayList<>());
        final Packet view = new Packet();
        final boolean batches;
        Predicate<Packet> drop = p -> false;
        int verdict = DROP;
        long delay;

        Recorder(final boolean batches) {
            this.batches = batches;
        }

        @Override
        public int onPacket(final int src, final int dst, final MemorySegment buf, final long off, final int len) {
            view.wrap(buf, off, len);
            final boolean hit = drop.test(view);
            seen.add(view + (hit ? " HIT" : ""));
            return hit ? verdict : DELIVER;
        }

        @Override
        public long delayNanos() {
            return delay;
        }

        @Override
        public boolean passesReferences() {
            return true;
        }

        @Override
        public boolean passesBatches() {
            return batches;
        }

        long spans() {
            synchronized (seen) {
                return seen.stream().filter(s -> s.contains(" x")).count();
            }
        }
    }

    @Test
    void writeSendAndReadAreByteExactAroundMtuAndSpanBoundaries() {
        final Recorder rec = new Recorder(true);
        try (Fixture f = new Fixture(new SoftNicContext().oneCopyMin(1).batch(BATCH).refBatch(BATCH).linkHook(rec), 1 << 20, init(), attr());
             Arena arena = Arena.ofShared()) {
            // a second source MR: a span's gather list crosses MRs
            final MemorySegment other = arena.allocate(128 * 1024, 4096);
            final MemoryRegion omr = f.a.pd.registerMr(other, AccessFlags.LOCAL_WRITE);
            long placed = 0;
            for (final int size : SIZES) {
                // WRITE, one SGE
                Fixture.fill(f.a.buf.asSlice(0, size), size);
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .wrId(size).sge(f.a.mr, 0, size).remote(f.b.mr.address() + 7, f.b.mr.rkey()));
                f.awaitSuccess(f.a.scq, "WRITE " + size);
                Fixture.assertBytes(f.a.buf.asSlice(0, size), f.b.buf.asSlice(7, size), "WRITE " + size);
                placed += packets(size);
                assertEquals(placed, f.b.dev.responder.referencedPackets(), "every packet placed once, " + size);

                // WRITE_WITH_IMM and SEND, two source SGEs (two MRs) and two receive SGEs split elsewhere
                final int head = size / 3;
                final int tail = size - head;
                Fixture.fill(f.a.buf.asSlice(100, head), size + 1);
                Fixture.fill(other.asSlice(50, tail), size + 2);
                final MemorySegment expected = Arena.ofAuto().allocate(size);
                MemorySegment.copy(f.a.buf, 100, expected, 0, head);
                MemorySegment.copy(other, 50, expected, head, tail);
                for (final int op : new int[] {WrOpcode.RDMA_WRITE_WITH_IMM, WrOpcode.SEND}) {
                    final boolean send = op == WrOpcode.SEND;
                    final int split = Math.max(1, size / 2 + 17);
                    final RecvWorkRequest rw = new RecvWorkRequest().wrId(op).numSge(2);
                    rw.sge(0).set(f.b.mr, 300_000, Math.min(split, size));
                    rw.sge(1).set(f.b.mr, 500_000, size);
                    f.b.qp.postRecv(send ? rw : new RecvWorkRequest().wrId(op).sge(f.b.mr, 0, 0));
                    final SendWorkRequest w = new SendWorkRequest().opcode(op).flags(SendFlags.SIGNALED).wrId(op)
                        .imm(size).remote(f.b.mr.address() + 200_000, f.b.mr.rkey()).numSge(2);
                    w.sge(0).set(f.a.mr, 100, head);
                    w.sge(1).set(omr, 50, tail);
                    f.a.qp.postSend(w);
                    f.awaitSuccess(f.a.scq, WrOpcode.name(op) + " " + size);
                    final WorkCompletion rwc = f.awaitSuccess(f.b.rcq, "receive of " + size);
                    if (send) {
                        assertEquals(WcOpcode.RECV, rwc.opcode);
                        assertEquals(size, rwc.byteLen);
                        final int first = Math.min(split, size);
                        Fixture.assertBytes(expected.asSlice(0, first), f.b.buf.asSlice(300_000, first), "SEND " + size);
                        Fixture.assertBytes(expected.asSlice(first), f.b.buf.asSlice(500_000, size - first),
                            "SEND " + size + ", second receive SGE");
                    } else {
                        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, rwc.opcode);
                        assertEquals(size, rwc.immData);
                        Fixture.assertBytes(expected, f.b.buf.asSlice(200_000, size), "WRITE_WITH_IMM " + size);
                    }
                    placed += packets(size);
                }
                assertEquals(placed, f.b.dev.responder.referencedPackets(), "every packet placed once, " + size);

                // READ (responses carry bytes, never spans)
                Fixture.fill(f.b.buf.asSlice(600_000, size), size + 3);
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(9)
                    .sge(f.a.mr, 700_000, size).remote(f.b.mr.address() + 600_000, f.b.mr.rkey()));
                f.awaitSuccess(f.a.scq, "READ " + size);
                Fixture.assertBytes(f.b.buf.asSlice(600_000, size), f.a.buf.asSlice(700_000, size), "READ " + size);
            }
            assertTrue(rec.spans() > 0, "spans were used");
            synchronized (rec.seen) {
                for (final String s : rec.seen) {
                    // no span is larger than the batch
                    final int x = s.indexOf(" x");
                    if (x >= 0) {
                        final int k = Integer.parseInt(s.substring(x + 2, s.indexOf(' ', x + 2)));
                        assertTrue(k > 1 && k <= BATCH, s);
                        assertTrue(s.startsWith("RDMA_WRITE") || s.startsWith("SEND"), s);
                    }
                }
            }
            assertEquals(0, f.b.dev.responder.unresolvedReferences());
        }
    }

    /**
     * A window smaller than two spans: spans are cut to what the window allows, the ACKs cover them, and the WRITE
     * completes with no retransmission (a wrong window or a missing ACK would stall it into a timeout and a resend
     * of some PSN; the run has no losses). The requester ends with nothing outstanding.
     */
    @Test
    void ackCoalescingKeepsTheWindowRight() {
        final ManualClock clock = new ManualClock(0);
        final Recorder rec = new Recorder(true);
        final SoftNicContext ctx = new SoftNicContext().oneCopyMin(1).progressMode(SoftNicContext.ProgressMode.DETERMINISTIC)
            .clock(clock).linkHook(rec).batch(BATCH).refBatch(BATCH).window(6).ackReqInterval(5);
        try (Fixture f = new Fixture(ctx, 1 << 20, init(), attr())) {
            final DeterministicRunner runner = new DeterministicRunner(11, clock, 50, 10_000);
            f.driver.agents().forEach(runner::add);
            final int size = 61 * MTU + 99;
            Fixture.fill(f.a.buf.asSlice(0, size), 5);
            for (int i = 0; i < 3; i++) {
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(i == 2 ? SendFlags.SIGNALED : 0)
                    .wrId(i).sge(f.a.mr, 0, size).remote(f.b.mr.address() + (long) i * size, f.b.mr.rkey()));
            }
            final WorkCompletion[] wc = {new WorkCompletion()};
            runner.runUntil(() -> f.a.scq.poll(wc) == 1, 2_000_000, "the WRITEs' completion");
            assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
            for (int i = 0; i < 3; i++) {
                Fixture.assertBytes(f.a.buf.asSlice(0, size), f.b.buf.asSlice((long) i * size, size), "WRITE " + i);
            }
            final SoftQp qp = (SoftQp) f.a.qp;
            assertEquals(qp.nextPsn, qp.compPsn, "nothing outstanding");
            assertEquals(qp.sentPsn, qp.compPsn);
            final List<String> requests = new ArrayList<>();
            final List<Integer> psns = new ArrayList<>();
            long acks = 0;
            synchronized (rec.seen) {
                for (final String s : rec.seen) {
                    if (s.startsWith("RDMA_WRITE")) {
                        requests.add(s);
                        psns.add(Integer.parseInt(s.substring(s.indexOf("psn=") + 4, s.indexOf(' ', s.indexOf("psn=")))));
                    } else if (s.startsWith("ACKNOWLEDGE")) {
                        acks++;
                    }
                }
            }
            assertEquals(psns.stream().distinct().count(), psns.size(), () -> "no PSN sent twice: " + requests);
            assertTrue(rec.spans() > 0, requests::toString);
            final int total = 3 * packets(size);
            assertEquals(total, f.b.dev.responder.referencedPackets());
            assertTrue(requests.size() < total, () -> "fewer records than packets: " + requests.size());
            final long ackCount = acks;
            assertTrue(ackCount < requests.size(), () -> "ACKs coalesced: " + ackCount + " for " + requests.size());
        }
    }

    private record Lossy(List<String> seen, long referenced, long unresolved) {
    }

    /** A deterministic WRITE of {@code size} bytes whose records matching {@code drop} get {@code verdict}. */
    private Lossy lossy(final long seed, final int size, final Predicate<Packet> drop, final int verdict,
                        final long delay) {
        final ManualClock clock = new ManualClock(0);
        final Recorder rec = new Recorder(true);
        rec.drop = drop;
        rec.verdict = verdict;
        rec.delay = delay;
        final SoftNicContext ctx = new SoftNicContext().oneCopyMin(1).progressMode(SoftNicContext.ProgressMode.DETERMINISTIC)
            .clock(clock).linkHook(rec).batch(BATCH).refBatch(BATCH);
        try (Fixture f = new Fixture(ctx, 1 << 20, init(), attr())) {
            final DeterministicRunner runner = new DeterministicRunner(seed, clock, 50, 10_000);
            f.driver.agents().forEach(runner::add);
            Fixture.fill(f.a.buf.asSlice(0, size), seed);
            final MemorySegment sent = Arena.ofAuto().allocate(size);
            MemorySegment.copy(f.a.buf, 0, sent, 0, size);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, size).remote(f.b.mr.address(), f.b.mr.rkey()));
            final WorkCompletion[] wc = {new WorkCompletion()};
            runner.runUntil(() -> f.a.scq.poll(wc) == 1, 2_000_000, "the WRITE completion");
            assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
            Fixture.assertBytes(sent, f.b.buf.asSlice(0, size), "data after recovery");
            // completed: the application may reuse the source; late copies must not be read
            Fixture.fill(f.a.buf.asSlice(0, size), seed + 1);
            final long until = clock.nanoTime() + 10_000_000_000L;
            runner.runUntil(() -> clock.nanoTime() > until, 2_000_000, "the late packets");
            Fixture.assertBytes(sent, f.b.buf.asSlice(0, size), "data after the late duplicates");
            return new Lossy(List.copyOf(rec.seen), f.b.dev.responder.referencedPackets(),
                f.b.dev.responder.unresolvedReferences());
        }
    }

    @Test
    void droppedDuplicatedOrLateSpansAreRecoveredByteExactEachPacketPlacedOnce() {
        final int size = 13 * MTU + 333; // 14 packets: spans of 4, 4, 4 and a LAST of 2
        for (final int verdict : new int[] {LinkHook.DROP, LinkHook.DUPLICATE, LinkHook.DELAY}) {
            for (int nth = 0; nth < 4; nth++) {
                final int target = nth;
                final int[] n = {0};
                final Lossy r = lossy(3 + nth, size, p -> p.is(BthOpcode.REQUEST) && p.packets() > 1
                    && n[0]++ == target, verdict, 5_000_000_000L);
                assertTrue(r.seen().stream().anyMatch(s -> s.endsWith("HIT")), r::toString);
                assertEquals(packets(size), r.referenced(), r::toString);
                assertEquals(0, r.unresolved(), r::toString);
            }
        }
        // the ACK lost: the spans are resent whole, found duplicate by PSN and not read again
        final int[] acks = {0};
        final Lossy ack = lossy(9, size, p -> p.opcode() == BthOpcode.ACKNOWLEDGE && acks[0]++ == 0, LinkHook.DROP, 0);
        assertTrue(ack.seen().stream().anyMatch(s -> s.startsWith("ACKNOWLEDGE") && s.endsWith("HIT")), ack::toString);
        assertEquals(packets(size), ack.referenced(), ack::toString);
    }

    /**
     * Spans cut differently on a resend than at first: a record whose first packets were received before is taken
     * from the expected PSN on (those packets are not read again); one wholly received is a duplicate and re-ACKed.
     * Records are written into a's link by hand; only b runs.
     */
    @Test
    void partlyDuplicatedSpanIsTakenFromTheExpectedPsn() {
        final SoftNicContext ctx = new SoftNicContext().oneCopyMin(1).progressMode(SoftNicContext.ProgressMode.DETERMINISTIC)
            .batch(BATCH).refBatch(BATCH);
        try (Fixture f = new Fixture(ctx, 1 << 20, init(), attr(), 100, 200)) {
            final int size = 5 * MTU + 10; // PSNs 100..105
            Fixture.fill(f.a.buf.asSlice(0, size), 77);
            Fixture.fill(f.b.buf.asSlice(0, size + 64), 78);
            final SoftQp src = (SoftQp) f.a.qp;
            final long dst = f.b.mr.address() + 32;
            // [100, 103): FIRST span of 3
            inject(f, src, BthOpcode.RDMA_WRITE_FIRST, 100, 3, 0, 3 * MTU, false, dst, size);
            f.b.dev.doWork();
            final SoftQp rq = (SoftQp) f.b.qp;
            assertEquals(103, rq.ePsn);
            // [101, 105): a MIDDLE span cut elsewhere, its first two packets received before
            inject(f, src, BthOpcode.RDMA_WRITE_MIDDLE, 101, 4, MTU, 4 * MTU, false, 0, 0);
            f.b.dev.doWork();
            assertEquals(105, rq.ePsn);
            assertEquals(5, f.b.dev.responder.referencedPackets(), "the two received before were not read again");
            // [100, 103) again: wholly received, a duplicate
            inject(f, src, BthOpcode.RDMA_WRITE_FIRST, 100, 3, 0, 3 * MTU, false, dst, size);
            f.b.dev.doWork();
            assertEquals(105, rq.ePsn);
            // 105: LAST, one packet of 10 bytes, asks for an ACK
            inject(f, src, BthOpcode.RDMA_WRITE_LAST, 105, 1, 5 * MTU, 10, true, 0, 0);
            f.b.dev.doWork();
            assertEquals(106, rq.ePsn);
            assertEquals(6, f.b.dev.responder.referencedPackets());
            Fixture.assertBytes(f.a.buf.asSlice(0, size), f.b.buf.asSlice(32, size), "WRITE placed from its spans");
            assertEquals(QpState.RTS, rq.state);
        }
    }

    @Test
    void spanWhosePayloadDoesNotFitItsPacketsIsRefused() {
        final SoftNicContext ctx = new SoftNicContext().oneCopyMin(1).progressMode(SoftNicContext.ProgressMode.DETERMINISTIC)
            .batch(BATCH).refBatch(BATCH);
        try (Fixture f = new Fixture(ctx, 1 << 20, init(), attr(), 100, 200)) {
            final SoftQp src = (SoftQp) f.a.qp;
            final SoftQp rq = (SoftQp) f.b.qp;
            Fixture.fill(f.b.buf.asSlice(0, 8 * MTU), 5);
            final MemorySegment before = Arena.ofAuto().allocate(8 * MTU);
            MemorySegment.copy(f.b.buf, 0, before, 0, 8 * MTU);
            // a FIRST span of 3 packets that is not 3 full MTUs
            inject(f, src, BthOpcode.RDMA_WRITE_FIRST, 100, 3, 0, 3 * MTU - 1, false, f.b.mr.address(), 8 * MTU);
            f.b.dev.doWork();
            assertEquals(QpState.ERR, rq.state, "NAK invalid request: the responder QP errs");
            assertEquals(0, f.b.dev.responder.referencedPackets());
            Fixture.assertBytes(before, f.b.buf.asSlice(0, 8 * MTU), "nothing placed");
        }
        // a span on a READ request is malformed: dropped by the receiver before any QP sees it
        final MemorySegment buf = Arena.ofAuto().allocate(256);
        final Packet p = new Packet();
        final int len = Packet.lengthFor(BthOpcode.RDMA_READ_REQUEST, Packet.referenceLength(1));
        p.init(buf, 0, len, 2, 1, BthOpcode.RDMA_READ_REQUEST, 0x12, 5, false, false).reth(0, 1, 4096);
        p.reference(4096, 1, 2).refEntry(0, 0x1000, 1, 4096);
        assertFalse(new Packet().wrap(buf, 0, len).isWellFormed());
        p.init(buf, 0, Packet.lengthFor(BthOpcode.RDMA_WRITE_MIDDLE, Packet.referenceLength(1)), 2, 1,
            BthOpcode.RDMA_WRITE_MIDDLE, 0x12, 5, false, false).reference(4096, 1, 2).refEntry(0, 0x1000, 1, 4096);
        final Packet w = new Packet().wrap(buf, 0, p.length());
        assertTrue(w.isWellFormed());
        assertEquals(2, w.packets());
        assertTrue(w.toString().contains(" x2"), w::toString);
    }

    /**
     * Responder.checkPayload's other clauses (see also {@link #aRecordLongerThanItsPacketsIsRefused}): a LAST span
     * whose payload leaves its last packet empty, too short for its packets. It fits the WRITE's DMA length exactly,
     * so only the span check refuses it: the responder QP errs by name, the span before it stays placed, nothing
     * of the refused record is.
     */
    @Test
    void aLastSpanTooShortForItsPacketsIsRefused() {
        // a FIRST span of 3 full packets, then a LAST span of 2 holding only one packet's bytes
        refusedAfter(3, BthOpcode.RDMA_WRITE_LAST, 2, MTU, "payload of 1024 bytes does not fit 2 packet(s)");
    }

    /** As above: a record whose payload is longer than its packets can hold, a LAST span and a single packet. */
    @Test
    void aRecordLongerThanItsPacketsIsRefused() {
        // a FIRST span of 3, then a LAST span of 2 holding one byte more than 2 packets
        refusedAfter(3, BthOpcode.RDMA_WRITE_LAST, 2, 2 * MTU + 1, "payload of 2049 bytes does not fit 2 packet(s)");
        // no span at all: one ONLY packet of MTU + 1 bytes
        refusedAfter(0, BthOpcode.RDMA_WRITE_ONLY, 1, MTU + 1, "payload of 1025 bytes does not fit 1 packet(s)");
    }

    /**
     * Injects a FIRST span of {@code firstPackets} full packets (none if 0), then a record of {@code opcode}
     * standing for {@code packets} packets with {@code payload} bytes, the WRITE's DMA length their sum; asserts
     * the second is refused naming {@code why}.
     */
    private static void refusedAfter(final int firstPackets, final int opcode, final int packets, final int payload,
                                     final String why) {
        final SoftNicContext ctx = new SoftNicContext().oneCopyMin(1)
            .progressMode(SoftNicContext.ProgressMode.DETERMINISTIC).batch(BATCH).refBatch(BATCH);
        try (Fixture f = new Fixture(ctx, 1 << 20, init(), attr(), 100, 200)) {
            final SoftQp src = (SoftQp) f.a.qp;
            final SoftQp rq = (SoftQp) f.b.qp;
            final int head = firstPackets * MTU;
            final int dma = head + payload;
            Fixture.fill(f.a.buf.asSlice(0, dma), 31);
            Fixture.fill(f.b.buf.asSlice(0, 16 * MTU), 32);
            final MemorySegment before = Arena.ofAuto().allocate(16 * MTU);
            MemorySegment.copy(f.b.buf, 0, before, 0, 16 * MTU);
            int psn = 100;
            if (firstPackets > 0) {
                inject(f, src, BthOpcode.RDMA_WRITE_FIRST, psn, firstPackets, 0, head, false, f.b.mr.address(), dma);
                f.b.dev.doWork();
                psn += firstPackets;
                assertEquals(psn, rq.ePsn, "the FIRST span is taken");
                assertEquals(QpState.RTS, rq.state);
            }
            inject(f, src, opcode, psn, packets, head, payload, true, f.b.mr.address(), dma);
            f.b.dev.doWork();
            assertEquals(QpState.ERR, rq.state, () -> why + ": NAK invalid request, the responder QP errs");
            assertEquals(psn, rq.ePsn, "the refused record is not accepted");
            assertEquals(firstPackets, f.b.dev.responder.referencedPackets(), "only the FIRST span placed");
            Fixture.assertBytes(f.a.buf.asSlice(0, head), f.b.buf.asSlice(0, head), "the FIRST span");
            Fixture.assertBytes(before.asSlice(head), f.b.buf.asSlice(head, 16 * MTU - head), "nothing of " + why);
            final io.gdrkit.verbs.AsyncEvent e = f.b.ctx.pollAsyncEvent();
            assertTrue(e != null && e.detail().contains(why) && e.detail().contains("of MTU 1024"),
                () -> "the event names the span: " + e);
        }
    }

    /** Hooks that see single packets (fault injection, tests) keep one record per packet. */
    @Test
    void hookThatDoesNotTakeSpansGetsOnePacketPerRecord() {
        final Recorder rec = new Recorder(false);
        try (Fixture f = new Fixture(new SoftNicContext().oneCopyMin(1).batch(BATCH).refBatch(BATCH).linkHook(rec), 1 << 20, init(), attr())) {
            final int size = 13 * MTU + 333;
            Fixture.fill(f.a.buf.asSlice(0, size), 1);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, size).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE");
            Fixture.assertBytes(f.a.buf.asSlice(0, size), f.b.buf.asSlice(0, size), "WRITE");
            assertEquals(0, rec.spans());
            assertEquals(packets(size), f.b.dev.responder.referencedPackets(), "still by reference, one per packet");
            assertFalse(f.a.dev.port.carriesBatches());
            f.driver.linkHook(LinkHook.PASS);
            assertTrue(f.a.dev.port.carriesBatches());
        }
        try (Fixture f = new Fixture(new SoftNicContext().oneCopyMin(1).batch(1).refBatch(1), 1 << 20, init(), attr())) {
            final int size = 13 * MTU + 333;
            final Recorder r1 = new Recorder(true);
            f.driver.linkHook(r1);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, size).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE, batch 1");
            assertEquals(0, r1.spans(), "batch 1 turns spans off");
        }
    }

    /** Writes one WRITE request record into a's link to b, referencing a's MR at {@code srcOffset}. */
    private static void inject(final Fixture f, final SoftQp src, final int opcode, final int psn, final int packets,
                               final long srcOffset, final int payload, final boolean ackReq, final long va,
                               final int dmaLength) {
        final var port = f.a.dev.port;
        final int len = Packet.lengthFor(opcode, Packet.referenceLength(1));
        final long off = port.tryClaim(f.b.dev.lid(), src.destQpn, len);
        assertTrue(off >= 0);
        final Packet p = new Packet().init(port.claimBuffer(), off, len, f.b.dev.lid(), f.a.dev.lid(), opcode,
            src.destQpn, psn, ackReq, false);
        if ((p.mask() & BthOpcode.RETH) != 0) {
            p.reth(va, f.b.mr.rkey(), dmaLength);
        }
        p.reference(payload, 1, packets).refEntry(0, f.a.mr.address() + srcOffset, f.a.mr.lkey(), payload);
        port.commit();
    }
}
