/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.wire.Aeth;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** RNR, retransmission timeouts, go-back-N under loss, duplicate handling at the responder, PSN wrap-around. */
class ReliabilityTest {

    /** Counts packets matching {@code match}; drops those {@code drop} selects (deterministic, single thread). */
    static final class Hook implements LinkHook {
        final Packet p = new Packet();
        final AtomicInteger total = new AtomicInteger();
        final AtomicInteger matched = new AtomicInteger();
        final AtomicInteger dropped = new AtomicInteger();
        final Predicate<Packet> match;
        final DropRule drop;

        interface DropRule {
            boolean drop(Packet p, int totalIndex, int matchIndex);
        }

        Hook(final Predicate<Packet> match, final DropRule drop) {
            this.match = match;
            this.drop = drop;
        }

        @Override
        public int onPacket(final int srcLid, final int dstLid, final MemorySegment b, final long o, final int l) {
            p.wrap(b, o, l);
            final int t = total.getAndIncrement();
            final boolean m = match.test(p);
            final int mi = m ? matched.getAndIncrement() : -1;
            if (drop.drop(p, t, mi)) {
                dropped.incrementAndGet();
                return DROP;
            }
            return DELIVER;
        }
    }

    static boolean isRnrNak(final Packet p) {
        return p.opcode() == BthOpcode.ACKNOWLEDGE && (p.aethSyndrome() & Aeth.TYPE_MASK) == Aeth.RNR_NAK;
    }

    static boolean isPlainAck(final Packet p) {
        return p.opcode() == BthOpcode.ACKNOWLEDGE && (p.aethSyndrome() & Aeth.TYPE_MASK) == Aeth.ACK;
    }

    // ---------------- RNR ----------------

    @ParameterizedTest
    @ValueSource(ints = {100, 64 * 1024})
    void rnrNakThenSuccessOnceReceivePosted(final int size) {
        final Hook hook = new Hook(ReliabilityTest::isRnrNak, (p, t, m) -> false);
        final QpAttr attr = QpBringUp.rcDefaults().rnrRetry(7).minRnrTimer(1).timeout(10).retryCnt(7);
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(hook), 1 << 20, new QpInitAttr(), attr)) {
            Fixture.fill(f.a.buf.asSlice(0, size), 201);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, size));
            // many RNR rounds: more than retry_cnt, which RNR must not consume
            f.await(() -> hook.matched.get() >= 20, "20 RNR NAKs");
            final WorkCompletion[] none = {new WorkCompletion()};
            assertEquals(0, f.a.scq.poll(none), () -> "no completion while RNR: " + none[0]);
            assertEquals(QpState.RTS, f.a.qp.state());
            f.b.qp.postRecv(new RecvWorkRequest().wrId(2).sge(f.b.mr, 4096, 128 * 1024));
            assertEquals(1, f.awaitSuccess(f.a.scq, "SEND after RNR").wrId);
            final WorkCompletion r = f.awaitSuccess(f.b.rcq, "receive");
            assertEquals(2, r.wrId);
            assertEquals(size, r.byteLen);
            Fixture.assertBytes(f.a.buf.asSlice(0, size), f.b.buf.asSlice(4096, size), "data after RNR");
        }
    }

    @Test
    void rnrOnWriteWithImmediate() {
        final Hook hook = new Hook(ReliabilityTest::isRnrNak, (p, t, m) -> false);
        final QpAttr attr = QpBringUp.rcDefaults().rnrRetry(7).minRnrTimer(1);
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(hook), 1 << 20, new QpInitAttr(), attr)) {
            Fixture.fill(f.a.buf.asSlice(0, 30000), 202);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .wrId(1).imm(5).sge(f.a.mr, 0, 30000).remote(f.b.mr.address() + 100, f.b.mr.rkey()));
            f.await(() -> hook.matched.get() >= 3, "RNR NAKs");
            f.b.qp.postRecv(new RecvWorkRequest().wrId(2));
            f.awaitSuccess(f.a.scq, "WRITE_WITH_IMM after RNR");
            final WorkCompletion r = f.awaitSuccess(f.b.rcq, "receive");
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode);
            assertEquals(5, r.immData);
            Fixture.assertBytes(f.a.buf.asSlice(0, 30000), f.b.buf.asSlice(100, 30000), "data");
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 3})
    void rnrRetryExhaustion(final int rnrRetry) {
        final Hook hook = new Hook(ReliabilityTest::isRnrNak, (p, t, m) -> false);
        final QpAttr attr = QpBringUp.rcDefaults().rnrRetry(rnrRetry).minRnrTimer(1);
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(hook), 1 << 20, new QpInitAttr(), attr)) {
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, 10000)
                .next(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(2).sge(f.a.mr, 0, 10)
                    .remote(f.b.mr.address(), f.b.mr.rkey())));
            final List<WorkCompletion> wcs = f.awaitN(f.a.scq, 2, "completions");
            assertEquals(1, wcs.get(0).wrId);
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, wcs.get(0).status, () -> WcStatus.name(wcs.get(0).status));
            assertEquals(2, wcs.get(1).wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, wcs.get(1).status);
            assertEquals(QpState.ERR, f.a.qp.state());
            f.settle(1000);
            assertEquals(rnrRetry + 1, hook.matched.get(), "one RNR NAK per attempt");
            assertEquals(QpState.RTS, f.b.qp.state(), "RNR is not an error of the responder");
            for (long i = 0; i < 16; i++) {
                assertEquals(0, f.b.buf.get(ValueLayout.JAVA_BYTE, i), "flushed WRITE never executed");
            }
        }
    }

    // ---------------- timeouts ----------------

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 3, 7})
    void retryExhaustionWhenEverythingIsDropped(final int retryCnt) {
        final Hook hook = new Hook(p -> p.is(BthOpcode.WRITE), (p, t, m) -> true);
        final QpAttr attr = QpBringUp.rcDefaults().timeout(1).retryCnt(retryCnt);
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(hook).retransmitFactor(2.0), 1 << 20,
            new QpInitAttr(), attr)) {
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, 100).remote(f.b.mr.address(), f.b.mr.rkey())
                .next(new SendWorkRequest().opcode(WrOpcode.SEND).wrId(2).sge(f.a.mr, 0, 10)));
            final List<WorkCompletion> wcs = f.awaitN(f.a.scq, 2, "completions");
            assertEquals(1, wcs.get(0).wrId);
            assertEquals(WcStatus.RETRY_EXC_ERR, wcs.get(0).status, () -> WcStatus.name(wcs.get(0).status));
            assertEquals(2, wcs.get(1).wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, wcs.get(1).status);
            f.settle(1000);
            assertEquals(retryCnt + 1, hook.matched.get(), "first transmission + retry_cnt retransmissions");
        }
    }

    /**
     * With a cut link, timeout 12 and retry_cnt 7, RETRY_EXC_ERR must come within what the IBA allows: each expiry at
     * most 4x 4.096 us x 2^12, eight of them (the first transmission and 7 retries): 0.54 s, not the seconds an
     * uncapped backoff took.
     */
    @Test
    void theRetryBudgetStaysWithinTheIbaBoundOfTheQpsTimeout() {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096, new io.gdrkit.verbs.QpInitAttr(),
            io.gdrkit.verbs.QpBringUp.rcDefaults().timeout(12).retryCnt(7))) {
            final long bound = 8L * 4 * 4096 * (1L << 12);
            final long budget = ((SoftQp) f.a.qp).retryBudgetNanos();
            assertTrue(budget <= bound, budget + " ns > the IBA bound " + bound + " ns");
            assertEquals((1 + 2 + 4 * 6) * 4096L * (1L << 12), budget, "1, 2, then 4 base timeouts each");
        }
    }

    /**
     * retry_cnt is spent per retry, whatever its timeout: with backoff off or on (timeouts doubling up to the cap),
     * a READ whose answer is lost retry_cnt times still completes, and one more loss ends it in RETRY_EXC_ERR.
     * Backoff changes when a retry happens, never how many there are (see LossyStressTest's class comment).
     * Virtual time: exact, whatever the load.
     */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"0,3", "0,4", "1,3", "1,4", "2,3", "2,4"})
    void retryBudgetIsCountedInRetriesWithOrWithoutBackoff(final int backoff, final int lost) {
        final int retryCnt = 3;
        final Hook hook = new Hook(p -> p.opcode() == BthOpcode.RDMA_READ_RESPONSE_ONLY, (p, t, m) -> m >= 0 && m < lost);
        final io.gdrkit.core.agent.ManualClock clock = new io.gdrkit.core.agent.ManualClock(0);
        final SoftNicContext ctx = new SoftNicContext().linkHook(hook).clock(clock).retransmitBackoff(backoff)
            .progressMode(SoftNicContext.ProgressMode.DETERMINISTIC);
        try (Fixture f = new Fixture(ctx, 1 << 16, new QpInitAttr(), QpBringUp.rcDefaults().timeout(8)
            .retryCnt(retryCnt))) {
            final io.gdrkit.core.agent.DeterministicRunner runner =
                new io.gdrkit.core.agent.DeterministicRunner(backoff * 10L + lost, clock, 100, 10_000);
            f.driver.agents().forEach(runner::add);
            Fixture.fill(f.b.buf.asSlice(4096, 512), 9);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(4)
                .sge(f.a.mr, 0, 512).remote(f.b.mr.address() + 4096, f.b.mr.rkey()));
            final WorkCompletion[] wc = WorkCompletion.array(1);
            runner.runUntil(() -> f.a.scq.poll(wc) == 1, 50_000_000, "the READ's completion");
            assertEquals(4, wc[0].wrId);
            if (lost <= retryCnt) {
                assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
                Fixture.assertBytes(f.b.buf.asSlice(4096, 512), f.a.buf.asSlice(0, 512), "READ after " + lost + " losses");
                assertEquals(lost + 1, hook.matched.get(), "answers sent: the lost ones and the one that arrived");
                assertEquals(QpState.RTS, f.a.qp.state());
            } else {
                assertEquals(WcStatus.RETRY_EXC_ERR, wc[0].status, wc[0]::toString);
                assertEquals(retryCnt + 1, hook.matched.get(), "the first answer and one per retry, all lost");
                assertEquals(QpState.ERR, f.a.qp.state());
            }
        }
    }

    /**
     * The retry counter counts retries without progress (IB spec: it is reloaded when a response makes progress):
     * a three-packet READ whose every response packet is lost retry_cnt times in turn (9 losses against a
     * retry_cnt of 3) completes, because each packet that gets through reloads the counter.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 2})
    void progressReloadsTheRetryCounter(final int backoff) {
        final int retryCnt = 3;
        final int first = 100; // the Fixture's sq_psn of a
        final int[] drops = new int[3];
        final boolean[] through = new boolean[3];
        final Hook hook = new Hook(p -> p.opcode() == BthOpcode.RDMA_READ_RESPONSE_FIRST
            || p.opcode() == BthOpcode.RDMA_READ_RESPONSE_MIDDLE || p.opcode() == BthOpcode.RDMA_READ_RESPONSE_LAST
            || p.opcode() == BthOpcode.RDMA_READ_RESPONSE_ONLY,
            (p, t, m) -> {
                final int k = p.psn() - first;
                if (m < 0 || k < 0 || k > 2) {
                    return false;
                }
                // a packet's losses start once every earlier one got through after its own
                final boolean turn = k == 0 || through[k - 1];
                if (turn && drops[k] < retryCnt) {
                    drops[k]++;
                    return true;
                }
                if (turn) {
                    through[k] = true;
                }
                return false;
            });
        final io.gdrkit.core.agent.ManualClock clock = new io.gdrkit.core.agent.ManualClock(0);
        final SoftNicContext ctx = new SoftNicContext().linkHook(hook).clock(clock).retransmitBackoff(backoff)
            .progressMode(SoftNicContext.ProgressMode.DETERMINISTIC);
        try (Fixture f = new Fixture(ctx, 1 << 16, new QpInitAttr(), QpBringUp.rcDefaults().timeout(8)
            .retryCnt(retryCnt).pathMtu(io.gdrkit.verbs.Mtu.MTU_1024))) {
            final io.gdrkit.core.agent.DeterministicRunner runner =
                new io.gdrkit.core.agent.DeterministicRunner(7 + backoff, clock, 100, 10_000);
            f.driver.agents().forEach(runner::add);
            Fixture.fill(f.b.buf.asSlice(8192, 3000), 10);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(6)
                .sge(f.a.mr, 0, 3000).remote(f.b.mr.address() + 8192, f.b.mr.rkey()));
            final WorkCompletion[] wc = WorkCompletion.array(1);
            runner.runUntil(() -> f.a.scq.poll(wc) == 1, 50_000_000, "the READ's completion");
            assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
            assertEquals(6, wc[0].wrId);
            assertEquals(3 * retryCnt, drops[0] + drops[1] + drops[2], "each response packet lost retry_cnt times");
            Fixture.assertBytes(f.b.buf.asSlice(8192, 3000), f.a.buf.asSlice(0, 3000), "READ");
        }
    }

    @Test
    void retryExhaustionWhenPeerDoesNotExist() {
        try (Fixture f = new Fixture(new SoftNicContext().retransmitFactor(1.0), 1 << 20)) {
            final QueuePair lonely = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            QpBringUp.toRts(lonely, 1234, 77, 0, 0, QpBringUp.rcDefaults().timeout(1).retryCnt(2));
            lonely.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(9)
                .sge(f.a.mr, 0, 100).remote(0x1000, 1));
            final WorkCompletion wc = f.awaitOne(f.a.scq, "READ to a nonexistent LID");
            assertEquals(9, wc.wrId);
            assertEquals(WcStatus.RETRY_EXC_ERR, wc.status, () -> WcStatus.name(wc.status));
            assertEquals(QpState.ERR, lonely.state());
            for (long i = 0; i < 100; i++) {
                assertEquals(0, f.a.buf.get(ValueLayout.JAVA_BYTE, i));
            }
        }
    }

    // ---------------- go-back-N under loss ----------------

    @ParameterizedTest
    @ValueSource(ints = {13, 50})
    void lossyLinkStillDeliversByteExact(final int every) {
        final Hook hook = new Hook(p -> true, (p, t, m) -> (t + 1) % every == 0);
        // the timeout must exceed the time a multi-MiB READ response takes to stream, or it fires spuriously
        final QpAttr attr = QpBringUp.rcDefaults().timeout(12).retryCnt(7);
        final int mib = 1 << 20;
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(hook), 8L * mib, new QpInitAttr(), attr)) {
            runMix(f, 301 + every, mib);
            assertTrue(hook.dropped.get() > 0, "the hook dropped packets");
        }
    }

    /**
     * A periodic loss (every 7th packet, every 5th across the PSN wrap) once livelocked go-back-N: every resend
     * round had the same length, so the same PSN was lost every time. The one-packet probe after a timeout and
     * READs requested in pieces break the period.
     */
    @ParameterizedTest
    @ValueSource(ints = {7})
    void periodicLossEvery7th(final int every) {
        lossyLinkStillDeliversByteExact(every);
    }

    @Test
    void psnWrapAroundWithEvery5thDropped() {
        psnWrapAround(5);
    }

    /** WRITE, READ, SENDs, WRITE_WITH_IMM and atomics, checking every byte. */
    static void runMix(final Fixture f, final long seed, final int mib) {
        Fixture.fill(f.a.buf.asSlice(0, 4L * mib), seed);
        Fixture.fill(f.b.buf.asSlice(4L * mib, 2L * mib), seed + 1);
        f.b.buf.set(ValueLayout.JAVA_LONG, 3L * mib, 1000);
        f.b.qp.postRecv(new RecvWorkRequest().wrId(101).sge(f.b.mr, 2L * mib, 300_000)
            .next(new RecvWorkRequest().wrId(102).sge(f.b.mr, 2L * mib + 300_000, 300_000)
                .next(new RecvWorkRequest().wrId(103))));
        final SplittableRandom rnd = new SplittableRandom(seed);
        final long[] adds = new long[6];
        for (int i = 0; i < adds.length; i++) {
            adds[i] = rnd.nextLong(1, 1 << 20);
        }
        // a: [0,1M) WRITE src, [1M,2M) SEND src, [4M,6M) READ dst, [6M..) atomic results
        SendWorkRequest chain = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(1).sge(f.a.mr, 0, mib)
            .remote(f.b.mr.address(), f.b.mr.rkey());
        SendWorkRequest tail = chain;
        tail = tail.next = new SendWorkRequest().opcode(WrOpcode.RDMA_READ).wrId(2).sge(f.a.mr, 4L * mib, 2 * mib)
            .remote(f.b.mr.address() + 4L * mib, f.b.mr.rkey());
        tail = tail.next = new SendWorkRequest().opcode(WrOpcode.SEND).wrId(3).sge(f.a.mr, mib, 300_000);
        for (int i = 0; i < 3; i++) {
            tail = tail.next = new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).wrId(10 + i)
                .sge(f.a.mr, 6L * mib + 8L * i, 8).remote(f.b.mr.address() + 3L * mib, f.b.mr.rkey())
                .atomic(adds[i], 0);
        }
        tail = tail.next = new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM).wrId(4).imm(44)
            .sge(f.a.mr, mib + 300_000, 299_999);
        tail = tail.next = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).wrId(5).imm(55)
            .sge(f.a.mr, 2L * mib, 2 * mib - 4096).remote(f.b.mr.address() + 8L * mib - 2 * mib, f.b.mr.rkey());
        for (int i = 3; i < 6; i++) {
            tail = tail.next = new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).wrId(10 + i)
                .sge(f.a.mr, 6L * mib + 8L * i, 8).remote(f.b.mr.address() + 3L * mib, f.b.mr.rkey())
                .atomic(adds[i], 0);
        }
        tail.flags(SendFlags.SIGNALED).wrId(99);
        // snapshot the READ source before anything can overwrite it (nothing targets it)
        final MemorySegment readSrc = java.lang.foreign.Arena.ofAuto().allocate(2L * mib)
            .copyFrom(f.b.buf.asSlice(4L * mib, 2L * mib));
        f.a.qp.postSend(chain);
        final WorkCompletion wc = f.awaitSuccess(f.a.scq, "last WR of the mix");
        assertEquals(99, wc.wrId);
        final List<WorkCompletion> r = f.awaitN(f.b.rcq, 3, "receives");
        for (final WorkCompletion c : r) {
            assertEquals(WcStatus.SUCCESS, c.status, c::toString);
        }
        assertEquals(101, r.get(0).wrId);
        assertEquals(300_000, r.get(0).byteLen);
        assertEquals(102, r.get(1).wrId);
        assertEquals(299_999, r.get(1).byteLen);
        assertEquals(44, r.get(1).immData);
        assertEquals(103, r.get(2).wrId);
        assertEquals(55, r.get(2).immData);
        Fixture.assertBytes(f.a.buf.asSlice(0, mib), f.b.buf.asSlice(0, mib), "WRITE");
        Fixture.assertBytes(readSrc, f.a.buf.asSlice(4L * mib, 2L * mib), "READ");
        Fixture.assertBytes(f.a.buf.asSlice(mib, 599_999), f.b.buf.asSlice(2L * mib, 599_999), "SENDs");
        Fixture.assertBytes(f.a.buf.asSlice(2L * mib, 2 * mib - 4096),
            f.b.buf.asSlice(8L * mib - 2 * mib, 2 * mib - 4096), "WRITE_WITH_IMM");
        long expected = 1000;
        for (int i = 0; i < adds.length; i++) {
            assertEquals(expected, f.a.buf.get(ValueLayout.JAVA_LONG, 6L * mib + 8L * i), "FETCH_ADD " + i);
            expected += adds[i];
        }
        assertEquals(expected, f.b.buf.get(ValueLayout.JAVA_LONG, 3L * mib), "each add executed exactly once");
        f.assertNoCompletion(f.a.scq, "only the signaled WR completes");
    }

    // ---------------- duplicates at the responder ----------------

    @Test
    void droppedAcksMakeDuplicateWritesThatAreReAcked() {
        final Hook writes = new Hook(p -> p.is(BthOpcode.WRITE), (p, t, m) -> false);
        final AtomicInteger acks = new AtomicInteger();
        final LinkHook hook = (s, d, b, o, l) -> {
            writes.onPacket(s, d, b, o, l);
            return isPlainAck(writes.p) && acks.getAndIncrement() < 3 ? LinkHook.DROP : LinkHook.DELIVER;
        };
        final QpAttr attr = QpBringUp.rcDefaults().timeout(4).retryCnt(7);
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(hook), 1 << 20, new QpInitAttr(), attr)) {
            Fixture.fill(f.a.buf, 401);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, 20000).remote(f.b.mr.address() + 8, f.b.mr.rkey()));
            assertEquals(1, f.awaitSuccess(f.a.scq, "WRITE despite lost ACKs").wrId);
            assertTrue(writes.matched.get() > 5, "retransmitted: " + writes.matched.get() + " WRITE packets");
            assertTrue(acks.get() >= 4, "three ACKs lost, then a (re-)ACK delivered: " + acks.get());
            Fixture.assertBytes(f.a.buf.asSlice(0, 20000), f.b.buf.asSlice(8, 20000), "data");
            assertEquals(0, f.b.buf.get(ValueLayout.JAVA_BYTE, 20008));
            assertEquals(QpState.RTS, f.b.qp.state());
            // the connection still works
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(2)
                .sge(f.a.mr, 0, 100).remote(f.b.mr.address() + 50000, f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "next WRITE");
        }
    }

    @Test
    void droppedSendAcksDoNotConsumeASecondReceive() {
        final AtomicInteger acks = new AtomicInteger();
        final Packet p = new Packet();
        final LinkHook hook = (s, d, b, o, l) -> isPlainAck(p.wrap(b, o, l)) && acks.getAndIncrement() < 2
            ? LinkHook.DROP : LinkHook.DELIVER;
        final QpAttr attr = QpBringUp.rcDefaults().timeout(4);
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(hook), 1 << 20, new QpInitAttr(), attr)) {
            Fixture.fill(f.a.buf, 402);
            f.b.qp.postRecv(new RecvWorkRequest().wrId(1).sge(f.b.mr, 0, 10000)
                .next(new RecvWorkRequest().wrId(2).sge(f.b.mr, 10000, 10000)));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(7)
                .sge(f.a.mr, 0, 6000));
            f.awaitSuccess(f.a.scq, "SEND despite lost ACKs");
            final WorkCompletion r = f.awaitSuccess(f.b.rcq, "receive");
            assertEquals(1, r.wrId);
            f.assertNoCompletion(f.b.rcq, "a duplicate SEND must not consume another receive");
            Fixture.assertBytes(f.a.buf.asSlice(0, 6000), f.b.buf.asSlice(0, 6000), "data");
            for (long i = 10000; i < 20000; i++) {
                assertEquals(0, f.b.buf.get(ValueLayout.JAVA_BYTE, i));
            }
        }
    }

    @Test
    void droppedReadResponsesMakeTheReadReExecuted() {
        final Hook hook = new Hook(p -> p.opcode() >= BthOpcode.RDMA_READ_RESPONSE_FIRST
            && p.opcode() <= BthOpcode.RDMA_READ_RESPONSE_ONLY, (p, t, m) -> m == 0 || m == 5 || m == 6 || m == 40);
        final Hook requests = new Hook(p -> p.opcode() == BthOpcode.RDMA_READ_REQUEST, (p, t, m) -> false);
        final LinkHook both = (s, d, b, o, l) -> {
            requests.onPacket(s, d, b, o, l);
            return hook.onPacket(s, d, b, o, l);
        };
        final QpAttr attr = QpBringUp.rcDefaults().timeout(4);
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(both), 1 << 20, new QpInitAttr(), attr)) {
            Fixture.fill(f.b.buf, 403);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, 100_000).remote(f.b.mr.address() + 12, f.b.mr.rkey())
                .next(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(2)
                    .sge(f.a.mr, 200_000, 50_000).remote(f.b.mr.address() + 300_000, f.b.mr.rkey())));
            final List<WorkCompletion> wcs = f.awaitN(f.a.scq, 2, "READs");
            for (final WorkCompletion w : wcs) {
                assertEquals(WcStatus.SUCCESS, w.status, w::toString);
            }
            assertEquals(100_000, wcs.get(0).byteLen);
            assertTrue(requests.matched.get() > 2, "READ requested again: " + requests.matched.get());
            Fixture.assertBytes(f.b.buf.asSlice(12, 100_000), f.a.buf.asSlice(0, 100_000), "READ 1");
            Fixture.assertBytes(f.b.buf.asSlice(300_000, 50_000), f.a.buf.asSlice(200_000, 50_000), "READ 2");
            assertEquals(0, f.a.buf.get(ValueLayout.JAVA_BYTE, 100_000));
        }
    }

    @Test
    void droppedAtomicAcksAreAnsweredFromSavedResults() {
        // the first response to every other ATOMIC is lost; its retransmission gets the saved result
        final java.util.Set<Integer> answered = new java.util.HashSet<>();
        final Hook hook = new Hook(p -> p.opcode() == BthOpcode.ATOMIC_ACKNOWLEDGE,
            (p, t, m) -> m >= 0 && answered.add(p.psn()) && answered.size() % 2 == 1);
        final Hook requests = new Hook(p -> p.is(BthOpcode.ATOMIC), (p, t, m) -> false);
        final LinkHook both = (s, d, b, o, l) -> {
            requests.onPacket(s, d, b, o, l);
            return hook.onPacket(s, d, b, o, l);
        };
        final QpAttr attr = QpBringUp.rcDefaults().timeout(4).maxRdAtomic(16).maxDestRdAtomic(16);
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(both), 1 << 16, new QpInitAttr(), attr)) {
            final SplittableRandom rnd = new SplittableRandom(404);
            final long init = rnd.nextLong();
            f.b.buf.set(ValueLayout.JAVA_LONG, 64, init);
            f.b.buf.set(ValueLayout.JAVA_LONG, 128, 0);
            final int n = 12;
            final long[] adds = new long[n];
            SendWorkRequest chain = null;
            for (int i = n - 1; i >= 0; i--) {
                adds[i] = rnd.nextLong();
                chain = new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                    .wrId(i).sge(f.a.mr, 8L * i, 8).remote(f.b.mr.address() + 64, f.b.mr.rkey())
                    .atomic(adds[i], 0).next(chain);
            }
            // compare-and-swap chain 0 -> 1 -> 2 ...: a re-executed duplicate would fail its compare
            SendWorkRequest cas = null;
            for (int i = 7; i >= 0; i--) {
                cas = new SendWorkRequest().opcode(WrOpcode.ATOMIC_CMP_AND_SWP).flags(SendFlags.SIGNALED)
                    .wrId(100 + i).sge(f.a.mr, 1024 + 8L * i, 8).remote(f.b.mr.address() + 128, f.b.mr.rkey())
                    .atomic(i, i + 1).next(cas);
            }
            SendWorkRequest t = chain;
            while (t.next != null) {
                t = t.next;
            }
            t.next = cas;
            f.a.qp.postSend(chain);
            final List<WorkCompletion> wcs = f.awaitN(f.a.scq, n + 8, "atomics");
            for (int i = 0; i < wcs.size(); i++) {
                assertEquals(WcStatus.SUCCESS, wcs.get(i).status, wcs.get(i)::toString);
                assertEquals(i < n ? i : 100 + i - n, wcs.get(i).wrId);
            }
            long v = init;
            for (int i = 0; i < n; i++) {
                assertEquals(v, f.a.buf.get(ValueLayout.JAVA_LONG, 8L * i), "FETCH_ADD " + i + " original");
                v += adds[i];
            }
            assertEquals(v, f.b.buf.get(ValueLayout.JAVA_LONG, 64), "FETCH_ADD executed exactly once each");
            for (int i = 0; i < 8; i++) {
                assertEquals(i, f.a.buf.get(ValueLayout.JAVA_LONG, 1024 + 8L * i), "CMP_SWP " + i + " original");
            }
            assertEquals(8, f.b.buf.get(ValueLayout.JAVA_LONG, 128), "CMP_SWP chain executed exactly once each");
            assertTrue(requests.matched.get() > n + 8, "duplicates were sent: " + requests.matched.get());
        }
    }

    // ---------------- PSN wrap-around ----------------

    @ParameterizedTest
    @ValueSource(ints = {0, 11})
    void psnWrapAround(final int dropEvery) {
        final Hook hook = new Hook(p -> true, (p, t, m) -> dropEvery > 0 && (t + 1) % dropEvery == 0);
        final QpAttr attr = QpBringUp.rcDefaults().timeout(12);
        final int mib = 1 << 20;
        // 0xFFFFF0: the first WRITE (256 packets) crosses 2^24 after 16 packets
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(hook), 8L * mib, new QpInitAttr(), attr,
            0xFFFFF0, 0xFFFFFE)) {
            runMix(f, 501 + dropEvery, mib);
            // and a few small ones after the wrap, both directions
            Fixture.fill(f.b.buf.asSlice(0, 5000), 502);
            f.b.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(7)
                .sge(f.b.mr, 0, 5000).remote(f.a.mr.address() + 7L * mib, f.a.mr.rkey()));
            f.awaitSuccess(f.b.scq, "WRITE from b across its wrap");
            Fixture.assertBytes(f.b.buf.asSlice(0, 5000), f.a.buf.asSlice(7L * mib, 5000), "b -> a");
        }
    }
}
