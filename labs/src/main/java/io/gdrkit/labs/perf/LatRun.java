/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.verbs.CompletionQueue;
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
import java.lang.invoke.VarHandle;
import org.HdrHistogram.Histogram;

/**
 * A perftest-style latency run on QP 0 of a {@link Loopback}.
 *
 * <ul>
 * <li>write_lat: ping-pong. A writes its buffer to B, B sees the last byte change in memory and writes back, A
 * sees its last byte change. Reported one way: RTT/2.</li>
 * <li>send_lat: ping-pong of SENDs; each side polls its receive CQ. One way: RTT/2.</li>
 * <li>read_lat, atomic_lat: A posts one signaled READ / FETCH_AND_ADD and polls its send CQ. Full RTT.</li>
 * </ul>
 *
 * Both sides are played by the calling thread: the fabric is in this JVM, and a second application thread
 * would compete with the NIC threads for the machine's cores. Nothing is allocated per iteration.
 */
public final class LatRun {
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    private static final long HIGHEST_NS = 60_000_000_000L;

    private final Loopback lb;
    private final PerfConfig cfg;
    private final SendWorkRequest wrA = new SendWorkRequest(1);
    private final SendWorkRequest wrB = new SendWorkRequest(1);
    private final RecvWorkRequest rwr = new RecvWorkRequest(1);
    private final WorkCompletion[] wcs = {new WorkCompletion()};
    private final Histogram histogram = new Histogram(HIGHEST_NS, 3);
    /** Offset of the outgoing half of each buffer; the incoming half starts at 0. */
    private final long outOffset;
    /** Wait descriptions, built once: the loop must not allocate. */
    private final String roomWait;
    private final String completionWait;
    private final String recvWaitA;
    private final String recvWaitB;

    public LatRun(final Loopback lb, final PerfConfig cfg) {
        this.lb = lb;
        this.cfg = cfg;
        this.outOffset = lb.a.buf.byteSize() / 2;
        this.roomWait = "room in the send queue (tx-depth " + cfg.txDepth() + ")";
        this.completionWait = cfg.test().id() + " completion";
        this.recvWaitA = "a receive completion on " + lb.a.name;
        this.recvWaitB = "a receive completion on " + lb.b.name;
    }

    /** The ping-pong sequence, across every round. */
    private long seq;

    /** How long one getCqEvent waits before the deadline is checked again. */
    private static final long EVENT_WAIT_NS = 100_000_000L;

    public LatResult run() {
        if (cfg.test().isSend()) {
            for (int i = 0; i < cfg.rxDepth(); i++) {
                postRecv(lb.a.qps[0], lb.a);
                postRecv(lb.b.qps[0], lb.b);
            }
        }
        final SendTracker trackerA = new SendTracker(1, cfg.txDepth(), cfg.cqMod());
        final SendTracker trackerB = new SendTracker(1, cfg.txDepth(), cfg.cqMod());
        Warmup.run(cfg, n -> measure(n, 0, trackerA, trackerB));
        histogram.reset();
        return measure(cfg.iters(), cfg.timed() ? (long) (cfg.durationSeconds() * 1e9) : 0, trackerA, trackerB);
    }

    private LatResult measure(final long iters, final long durationNs, final SendTracker ta, final SendTracker tb) {
        final int size = cfg.size();
        final PerfKind test = cfg.test();
        final boolean pingPong = test.halfRoundTrip();
        final boolean inline = pingPong && size <= cfg.inlineSize();
        final int baseFlags = inline ? SendFlags.INLINE : 0;
        wrA.clear().opcode(test.opcode).sge(lb.a.mr, pingPong ? outOffset : 0, size)
            .remote(lb.b.mr.address(), lb.b.mr.rkey());
        wrB.clear().opcode(test.opcode).sge(lb.b.mr, outOffset, size).remote(lb.a.mr.address(), lb.a.mr.rkey());
        if (test.isAtomic()) {
            wrA.atomic(1, 0);
        }
        final long stopAt = durationNs > 0 ? System.nanoTime() + durationNs : Long.MAX_VALUE;
        final long n = durationNs > 0 ? Long.MAX_VALUE : iters;
        final long lastByte = size - 1;
        long count = 0;
        long min = Long.MAX_VALUE;
        long max = 0;
        double sum = 0;
        double sumSq = 0;
        final Deadline deadline = new Deadline();
        for (long i = 0; i < n; i++) {
            // the ping-pong byte runs on across warm-up rounds and the measured run: restarting at 1 could meet a
            // 1 still in the buffer and take it for the echo
            final byte v = (byte) (seq++ % 255 + 1);
            final long t0 = System.nanoTime();
            if (pingPong) {
                if (test.isSend()) {
                    post(wrA, lb.a.qps[0], ta, lb.a.scq, baseFlags);
                    awaitRecv(lb.b, deadline);
                    post(wrB, lb.b.qps[0], tb, lb.b.scq, baseFlags);
                    awaitRecv(lb.a, deadline);
                } else {
                    lb.a.buf.set(ValueLayout.JAVA_BYTE, outOffset + lastByte, v);
                    post(wrA, lb.a.qps[0], ta, lb.a.scq, baseFlags);
                    awaitByte(lb.b.buf, lastByte, v, deadline, "B to see A's write");
                    lb.b.buf.set(ValueLayout.JAVA_BYTE, outOffset + lastByte, v);
                    post(wrB, lb.b.qps[0], tb, lb.b.scq, baseFlags);
                    awaitByte(lb.a.buf, lastByte, v, deadline, "A to see B's write");
                }
            } else {
                wrA.wrId = ta.nextWrId(0);
                wrA.sendFlags = SendFlags.SIGNALED;
                lb.a.qps[0].postSend(wrA);
                ta.posted(0);
                deadline.rearm();
                while (ta.poll(lb.a.scq) == 0) {
                    deadline.check(completionWait, ta.completedTotal(), ta.postedTotal());
                }
            }
            final long t1 = System.nanoTime();
            final long t = pingPong ? (t1 - t0) / 2 : t1 - t0;
            histogram.recordValue(Math.min(t, HIGHEST_NS));
            min = Math.min(min, t);
            max = Math.max(max, t);
            sum += t;
            sumSq += (double) t * t;
            count++;
            if (durationNs > 0 && t1 >= stopAt) {
                break;
            }
        }
        flush(lb.a.qps[0], ta, lb.a.scq, lb.a);
        flush(lb.b.qps[0], tb, lb.b.scq, lb.b);
        final double avg = sum / count;
        final double stdev = Math.sqrt(Math.max(0, sumSq / count - avg * avg));
        return new LatResult(size, count, min / 1e3, max / 1e3, Percentiles.at(histogram, 50, min, max) / 1e3,
            avg / 1e3, stdev / 1e3, Percentiles.at(histogram, 99, min, max) / 1e3,
            Percentiles.at(histogram, 99.9, min, max) / 1e3);
    }

    /** Posts with every cq-mod-th WQE signaled, first reaping completions if the send queue is full. */
    private void post(final SendWorkRequest wr, final QueuePair qp, final SendTracker t, final CompletionQueue scq,
                      final int baseFlags) {
        t.awaitRoom(0, scq, lb, roomWait);
        wr.wrId = t.nextWrId(0);
        wr.sendFlags = baseFlags | (t.nextSignaled(0, false) ? SendFlags.SIGNALED : 0);
        qp.postSend(wr);
        t.posted(0);
        if (t.outstanding(0) >= cfg.txDepth() / 2) {
            // Reap off the critical path of the next post; the CQ is big enough either way.
            t.poll(scq);
        }
    }

    /**
     * Completes every WQE posted so far: if the last one was unsignaled, a signaled zero-byte WRITE behind it
     * retires it (RC completes in order), then the send CQ is drained.
     */
    private void flush(final QueuePair qp, final SendTracker t, final CompletionQueue scq, final Loopback.Side side) {
        if (!t.atSignalBoundary(0)) {
            t.awaitRoom(0, scq, lb, "room in the send queue of " + side.name);
            final SendWorkRequest wr = side == lb.a ? wrA : wrB;
            wr.clear().opcode(WrOpcode.RDMA_WRITE).numSge(0).flags(SendFlags.SIGNALED).wrId(t.nextWrId(0))
                .remote(side == lb.a ? lb.b.mr.address() : lb.a.mr.address(),
                    side == lb.a ? lb.b.mr.rkey() : lb.a.mr.rkey());
            qp.postSend(wr);
            t.posted(0);
        }
        t.drain(scq, lb, "the last send completions of " + side.name);
    }

    private void awaitByte(final MemorySegment seg, final long offset, final byte v, final Deadline deadline,
                           final String what) {
        deadline.rearm();
        while ((byte) BYTE.getAcquire(seg, offset) != v) {
            lb.progress();
            Thread.onSpinWait();
            deadline.check(what, 0, 1);
        }
    }

    private void awaitRecv(final Loopback.Side side, final Deadline deadline) {
        deadline.rearm();
        while (side.rcq.poll(wcs) == 0) {
            if (!lb.invoker) {
                // own_device: polling b's CQ moves only b; this thread is also a's NIC, whose SEND must go out
                // (without this the one-thread harness stalled). Invoker polling already moves both.
                lb.progress();
            }
            if (cfg.events()) {
                // perftest -e: arm, poll once more (a completion may have landed before the arming), then sleep
                // on the channel; each event is acknowledged before the next arming
                side.rcq.reqNotifyCq(false);
                if (side.rcq.poll(wcs) != 0) {
                    break;
                }
                final CompletionQueue cq = side.channel.getCqEvent(EVENT_WAIT_NS);
                if (cq != null) {
                    cq.ackCqEvents(1);
                }
            }
            deadline.check(side == lb.a ? recvWaitA : recvWaitB, 0, 1);
        }
        final WorkCompletion wc = wcs[0];
        if (wc.status != WcStatus.SUCCESS || wc.opcode != WcOpcode.RECV) {
            throw new IllegalStateException("receive completion failed: " + wc);
        }
        postRecv(side.qps[0], side);
    }

    private void postRecv(final QueuePair qp, final Loopback.Side side) {
        rwr.wrId(0).sge(side.mr, 0, Math.max(cfg.size(), 1));
        qp.postRecv(rwr);
    }

}
