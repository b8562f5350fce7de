/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The device's scan set (active set): idle QPs leave the engines' scan, and a QP that gets work after being idle
 * (a post, a packet, modify_qp, ERR) is served, from the polling thread and from another thread alike.
 */
class ScanSetTest {
    private static final int PAIRS = 6;

    private static QueuePair[][] pairs(final Fixture f) {
        final QueuePair[][] p = new QueuePair[PAIRS][];
        p[0] = new QueuePair[] {f.a.qp, f.b.qp};
        for (int i = 1; i < PAIRS; i++) {
            final QueuePair qa = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final QueuePair qb = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, f.b.rcq));
            QpBringUp.connect(qa, f.a.dev.lid(), 1000 * i, qb, f.b.dev.lid(), 2000 * i, QpBringUp.rcDefaults());
            p[i] = new QueuePair[] {qa, qb};
        }
        return p;
    }

    private static void write(final Fixture f, final QueuePair qa, final int i, final long seed) {
        write(f, qa, i, seed, false);
    }

    /** {@code nicOnly}: wait by polling the CQ alone, so only the dedicated NIC threads move the NICs. */
    private static void write(final Fixture f, final QueuePair qa, final int i, final long seed,
                              final boolean nicOnly) {
        final int size = 10_000 + i;
        Fixture.fill(f.a.buf.asSlice((long) i * 20_000, size), seed);
        qa.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(i)
            .sge(f.a.mr, (long) i * 20_000, size).remote(f.b.mr.address() + (long) i * 20_000, f.b.mr.rkey()));
        final WorkCompletion wc;
        if (nicOnly) {
            final WorkCompletion[] one = {new WorkCompletion()};
            final long deadline = System.nanoTime() + 20_000_000_000L;
            while (f.a.scq.poll(one) == 0) {
                assertTrue(System.nanoTime() < deadline, "no completion in 20 s for the WRITE on pair " + i);
                Thread.onSpinWait();
            }
            wc = one[0];
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
        } else {
            wc = f.awaitSuccess(f.a.scq, "WRITE on pair " + i);
        }
        assertEquals(i, wc.wrId);
        Fixture.assertBytes(f.a.buf.asSlice((long) i * 20_000, size), f.b.buf.asSlice((long) i * 20_000, size),
            "WRITE on pair " + i);
    }

    private static void settle(final Fixture f) {
        f.settle(3 * ScanSet.PARK_AFTER);
    }

    @Test
    void idleQpsLeaveTheScanAndAreServedWhenWorkComes() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 20)) {
            final QueuePair[][] p = pairs(f);
            for (int i = 0; i < PAIRS; i++) {
                write(f, p[i][0], i, i);
            }
            settle(f);
            assertEquals(0, f.a.dev.scan.count(), "every QP of a idle: none scanned");
            assertEquals(0, f.b.dev.scan.count());
            assertTrue(f.a.dev.scan.parks() >= PAIRS);

            // a post to a parked QP wakes it
            write(f, p[3][0], 3, 33);
            assertTrue(f.a.dev.scan.wakes() >= 1);
            settle(f);
            assertEquals(0, f.a.dev.scan.count());

            // a SEND into a parked responder with no receive posted: RNR NAK, retried, served once one is posted
            final QueuePair sender = p[2][1];
            final QueuePair receiver = p[2][0];
            Fixture.fill(f.b.buf.asSlice(900_000, 3000), 5);
            sender.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(77)
                .sge(f.b.mr, 900_000, 3000));
            f.settle(200);
            receiver.postRecv(new RecvWorkRequest().wrId(78).sge(f.a.mr, 900_000, 4096));
            final WorkCompletion s = f.awaitSuccess(f.b.scq, "SEND after RNR");
            assertEquals(77, s.wrId);
            final WorkCompletion r = f.awaitSuccess(f.a.rcq, "receive");
            assertEquals(3000, r.byteLen);
            Fixture.assertBytes(f.b.buf.asSlice(900_000, 3000), f.a.buf.asSlice(900_000, 3000), "SEND");
            settle(f);
            assertEquals(0, f.a.dev.scan.count());

            // modify_qp to ERR on a parked QP: its posted receives are flushed
            p[4][0].postRecv(new RecvWorkRequest().wrId(90).sge(f.a.mr, 0, 16));
            p[4][0].postRecv(new RecvWorkRequest().wrId(91).sge(f.a.mr, 0, 16));
            settle(f);
            p[4][0].modify(new QpAttr().state(QpState.ERR), QpAttrMask.STATE);
            for (final long id : new long[] {90, 91}) {
                final WorkCompletion wc = f.awaitOne(f.a.rcq, "flush of " + id);
                assertEquals(WcStatus.WR_FLUSH_ERR, wc.status);
                assertEquals(id, wc.wrId);
            }
            // the others still work after all this
            for (final int i : new int[] {0, 1, 5}) {
                write(f, p[i][0], i, 100 + i);
            }
        }
    }

    /**
     * Posts from this thread while a dedicated NIC thread parks and wakes the QPs: every post is served (a lost
     * wake-up would leave a WRITE without completion and fail the wait).
     */
    @Test
    void postsFromAnotherThreadToParkedQpsAreNeverLost() {
        final SoftNicContext ctx = new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DEDICATED)
            .idleStrategy("spin");
        try (Fixture f = new Fixture(ctx, 1 << 20)) {
            final QueuePair[][] p = pairs(f);
            final Random rnd = new Random(16);
            for (int round = 0; round < 60; round++) {
                final int i = rnd.nextInt(PAIRS);
                final SoftQp qa = (SoftQp) p[i][0];
                if (round % 3 == 0) {
                    final long deadline = System.nanoTime() + 20_000_000_000L;
                    while (qa.parked == 0) {
                        assertTrue(System.nanoTime() < deadline, "pair " + i + " never parked");
                        Thread.onSpinWait();
                    }
                }
                write(f, qa, i, round, true);
            }
            assertTrue(f.a.dev.scan.wakes() > 0, "posts woke parked QPs");
        }
    }
}
