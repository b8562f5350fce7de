/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;

/**
 * A perftest-style bandwidth run (write_bw, read_bw, send_bw) from side A to side B of a {@link Loopback}:
 * messages go round-robin over the QPs, at most tx-depth outstanding per QP, every cq-mod-th signaled;
 * completions are counted on A's send CQ. For send_bw, B keeps rx-depth receives posted per QP.
 *
 * <p>The loop allocates nothing: one {@link SendWorkRequest}, one {@link RecvWorkRequest} and the tracker's
 * {@link WorkCompletion} array are reused for every message.
 */
public final class BwRun {
    /** Peak bandwidth is the best of this many equal slices of the run. */
    private static final int PEAK_SLICES = 10;

    private final Loopback.Side a;
    /** The receiving side when it is in this JVM (send_bw posts its receives); null when a peer process does. */
    private final Loopback.Side b;
    private final long remoteAddr;
    private final int remoteRkey;
    private final Runnable progress;
    private final PerfConfig cfg;
    private final SendWorkRequest wr = new SendWorkRequest(1);
    private final RecvWorkRequest rwr = new RecvWorkRequest(1);
    private final WorkCompletion[] rwcs = new WorkCompletion[32];
    private long recvCompleted;
    /** Built once: the wait loop must not allocate. */
    private final String waitingFor;

    public BwRun(final Loopback lb, final PerfConfig cfg) {
        this(lb.a, lb.b, lb.b.mr.address(), lb.b.mr.rkey(), lb::progress, cfg);
    }

    /** A run from {@code a} to a buffer at {@code remoteAddr}; {@code b} is null when another process receives. */
    public BwRun(final Loopback.Side a, final Loopback.Side b, final long remoteAddr, final int remoteRkey,
           final Runnable progress, final PerfConfig cfg) {
        this.a = a;
        this.b = b;
        this.remoteAddr = remoteAddr;
        this.remoteRkey = remoteRkey;
        this.progress = progress;
        this.cfg = cfg;
        this.waitingFor = "send completions of " + cfg.test().id();
        for (int i = 0; i < rwcs.length; i++) {
            rwcs[i] = new WorkCompletion();
        }
    }

    /** Runs the warm-up (unreported) then the measured run. */
    public BwResult run() {
        if (cfg.test().isSend() && b != null) {
            for (int q = 0; q < cfg.numQps(); q++) {
                for (int i = 0; i < cfg.rxDepth(); i++) {
                    postRecv(q);
                }
            }
        }
        if (cfg.warmup() > 0) {
            measure(cfg.warmup(), 0);
        }
        return measure(cfg.iters(), cfg.timed() ? (long) (cfg.durationSeconds() * 1e9) : 0);
    }

    private BwResult measure(final long iters, final long durationNs) {
        final int numQps = cfg.numQps();
        final QueuePair[] qps = a.qps;
        final SendTracker tracker = new SendTracker(numQps, cfg.txDepth(), cfg.cqMod());
        final int size = cfg.size();
        final boolean inline = size <= cfg.inlineSize() && cfg.test().opcode != io.gdrkit.verbs.WrOpcode.RDMA_READ;
        wr.clear().opcode(cfg.test().opcode);
        // WRITE and SEND push A's buffer to B; READ pulls B's buffer into A's: the same SGE and remote address.
        wr.sge(a.mr, 0, size).remote(remoteAddr, remoteRkey);
        if (cfg.test().isAtomic()) {
            wr.atomic(1, 0); // FETCH_AND_ADD 1: the original value lands in A's first 8 bytes
        }
        final long target = durationNs > 0 ? Long.MAX_VALUE : iters;
        final long recvTarget0 = recvCompleted;
        final Deadline deadline = new Deadline();
        final long start = System.nanoTime();
        final long stopAt = durationNs > 0 ? start + durationNs : Long.MAX_VALUE;
        final long sliceMsgs = durationNs > 0 ? Long.MAX_VALUE : Math.max(1, iters / PEAK_SLICES);
        final long sliceNs = durationNs > 0 ? Math.max(1, durationNs / PEAK_SLICES) : Long.MAX_VALUE;
        long markTime = start;
        long markCount = 0;
        double peakMsgsPerNs = 0;
        boolean stopping = false;
        long postTarget = target;
        long end = start;

        while (true) {
            // Post round-robin while the next QP in turn has room.
            while (tracker.postedTotal() < postTarget) {
                final int q = (int) (tracker.postedTotal() % numQps);
                if (!tracker.hasRoom(q)) {
                    break;
                }
                final boolean last = durationNs == 0 && tracker.postedTotal() + numQps >= postTarget;
                int flags = tracker.nextSignaled(q, last) ? SendFlags.SIGNALED : 0;
                if (inline) {
                    flags |= SendFlags.INLINE;
                }
                wr.wrId = tracker.nextWrId(q);
                wr.sendFlags = flags;
                qps[q].postSend(wr);
                tracker.posted(q);
            }
            final int got = tracker.poll(a.scq);
            if (cfg.test().isSend() && b != null) {
                pollRecvs();
            }
            if (got > 0) {
                deadline.rearm();
                final long done = tracker.completedTotal();
                if (done - markCount >= sliceMsgs || durationNs > 0) {
                    final long now = System.nanoTime();
                    if (done - markCount >= sliceMsgs || now - markTime >= sliceNs) {
                        peakMsgsPerNs = Math.max(peakMsgsPerNs, (double) (done - markCount) / (now - markTime));
                        markTime = now;
                        markCount = done;
                    }
                    if (!stopping && now >= stopAt) {
                        stopping = true;
                        postTarget = stopBoundary(tracker);
                    }
                }
                if (done >= postTarget) {
                    end = System.nanoTime();
                    break;
                }
            } else {
                // An empty poll already advanced the NICs (invoker mode); dedicated threads need nothing.
                deadline.check(waitingFor, tracker.completedTotal(), postTarget);
            }
        }
        if (cfg.test().isSend() && b != null) {
            final long want = recvTarget0 + tracker.completedTotal();
            final Deadline rd = new Deadline();
            while (recvCompleted < want) {
                if (pollRecvs() > 0) {
                    rd.rearm();
                } else {
                    progress.run();
                    rd.check("receive completions of send_bw", recvCompleted - recvTarget0, want - recvTarget0);
                }
            }
        }
        final long msgs = tracker.completedTotal();
        final double secs = (end - start) / 1e9;
        final double avgMsgsPerSec = msgs / secs;
        final double peakMsgsPerSec = Math.max(peakMsgsPerNs * 1e9, avgMsgsPerSec);
        return new BwResult(size, msgs, peakMsgsPerSec * size / (1 << 20), avgMsgsPerSec * size / (1 << 20),
            avgMsgsPerSec / 1e6);
    }

    /**
     * In a timed run posting stops where every QP's last WQE is signaled (so all completions arrive): for each
     * QP, round up to the next cq-mod boundary. Round-robin order is kept, so the total target is computed
     * from the QP that needs the most.
     */
    private long stopBoundary(final SendTracker tracker) {
        final int numQps = cfg.numQps();
        final int mod = Math.max(1, Math.min(cfg.cqMod(), cfg.txDepth()));
        long perQp = (tracker.postedTotal() + numQps - 1) / numQps;
        perQp = (perQp + mod - 1) / mod * mod;
        return perQp * numQps;
    }

    private int pollRecvs() {
        final int n = b.rcq.poll(rwcs);
        for (int i = 0; i < n; i++) {
            final WorkCompletion wc = rwcs[i];
            if (wc.status != WcStatus.SUCCESS) {
                throw new IllegalStateException("receive completion failed: " + wc);
            }
            postRecv((int) wc.wrId);
        }
        recvCompleted += n;
        return n;
    }

    private void postRecv(final int q) {
        rwr.wrId(q).sge(b.mr, 0, cfg.size());
        b.qps[q].postRecv(rwr);
    }
}
