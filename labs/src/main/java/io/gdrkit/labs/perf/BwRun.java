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
    /**
     * A bidirectional run (perftest's {@code -b}): both sides posted at once, each direction's figures and their sum
     * (perftest prints the sum).
     */
    public record Bidirectional(BwResult sum, BwResult aToB, BwResult bToA) {
    }

    /** One direction: who posts, into which buffer, and its book-keeping. */
    private static final class Lane {
        final Loopback.Side src;
        /** The side that receives (send_bw posts receives there); null when a peer process does. */
        final Loopback.Side dst;
        final long remoteAddr;
        final int remoteRkey;
        /** Offset of this direction's region in both buffers: 0, or the upper half for B -> A of a -b run. */
        final long offset;
        final SendWorkRequest wr = new SendWorkRequest(1);
        final RecvWorkRequest rwr = new RecvWorkRequest(1);
        SendTracker tracker;
        long recvCompleted;
        long postTarget;
        long start;
        long end;
        boolean stopping;
        boolean done;
        /** perftest's BW peak: the best full cycle from a post to a completion (see {@link PeakMeter}). */
        PeakMeter peak;

        Lane(final Loopback.Side src, final Loopback.Side dst, final long remoteAddr, final int remoteRkey,
             final long offset) {
            this.src = src;
            this.dst = dst;
            this.remoteAddr = remoteAddr;
            this.remoteRkey = remoteRkey;
            this.offset = offset;
        }
    }

    private final Lane[] lanes;
    private final Runnable progress;
    private final PerfConfig cfg;
    private final WorkCompletion[] rwcs = new WorkCompletion[32];
    /** Built once: the wait loop must not allocate. */
    private final String waitingFor;

    public BwRun(final Loopback lb, final PerfConfig cfg) {
        this.progress = lb::progress;
        this.cfg = cfg;
        this.waitingFor = "send completions of " + cfg.test().id() + (cfg.bidirectional() ? " -b" : "");
        final Lane ab = new Lane(lb.a, lb.b, lb.b.mr.address(), lb.b.mr.rkey(), 0);
        if (cfg.bidirectional()) {
            final long half = cfg.bufferBytes(); // Loopback registers twice the buffer: B -> A uses the upper half
            lanes = new Lane[] {ab, new Lane(lb.b, lb.a, lb.a.mr.address() + half, lb.a.mr.rkey(), half)};
        } else {
            lanes = new Lane[] {ab};
        }
        initWcs();
    }

    /** A run from {@code a} to a buffer at {@code remoteAddr}; {@code b} is null when another process receives. */
    public BwRun(final Loopback.Side a, final Loopback.Side b, final long remoteAddr, final int remoteRkey,
           final Runnable progress, final PerfConfig cfg) {
        if (cfg.bidirectional()) {
            throw new IllegalArgumentException("-b runs in one JVM (both sides' buffers known): use BwRun(Loopback, "
                + "PerfConfig)");
        }
        this.lanes = new Lane[] {new Lane(a, b, remoteAddr, remoteRkey, 0)};
        this.progress = progress;
        this.cfg = cfg;
        this.waitingFor = "send completions of " + cfg.test().id();
        initWcs();
    }

    private void initWcs() {
        for (int i = 0; i < rwcs.length; i++) {
            rwcs[i] = new WorkCompletion();
        }
    }

    /** Runs the warm-up (unreported) then the measured run; with -b the sum of both directions. */
    public BwResult run() {
        return runBoth().sum();
    }

    /** Runs the warm-up then the measured run, each direction's figures and their sum (one direction: all equal). */
    public Bidirectional runBoth() {
        if (cfg.test().isSend()) {
            for (final Lane l : lanes) {
                if (l.dst != null) {
                    for (int q = 0; q < cfg.numQps(); q++) {
                        for (int i = 0; i < cfg.rxDepth(); i++) {
                            postRecv(l, q);
                        }
                    }
                }
            }
        }
        Warmup.run(cfg, n -> measure(n, 0));
        measure(cfg.iters(), cfg.timed() ? (long) (cfg.durationSeconds() * 1e9) : 0);
        final BwResult first = result(lanes[0]);
        if (lanes.length == 1) {
            return new Bidirectional(first, first, null);
        }
        final BwResult second = result(lanes[1]);
        return new Bidirectional(new BwResult(first.bytes(), first.iterations() + second.iterations(),
            first.bwPeakMibS() + second.bwPeakMibS(), first.bwAvgMibS() + second.bwAvgMibS(),
            first.msgRateMpps() + second.msgRateMpps()), first, second);
    }

    private BwResult result(final Lane l) {
        final int size = cfg.size();
        final long msgs = l.tracker.completedTotal();
        final double secs = (l.end - l.start) / 1e9;
        final double avgMsgsPerSec = msgs / secs;
        final double peakMsgsPerSec = l.peak.peakMsgsPerSec(avgMsgsPerSec);
        return new BwResult(size, msgs, peakMsgsPerSec * size / (1 << 20), avgMsgsPerSec * size / (1 << 20),
            avgMsgsPerSec / 1e6);
    }

    private void measure(final long iters, final long durationNs) {
        final int numQps = cfg.numQps();
        final int size = cfg.size();
        final boolean inline = size <= cfg.inlineSize() && cfg.test().opcode != io.gdrkit.verbs.WrOpcode.RDMA_READ;
        final long target = durationNs > 0 ? Long.MAX_VALUE : iters;
        for (final Lane l : lanes) {
            l.tracker = new SendTracker(numQps, cfg.txDepth(), cfg.cqMod());
            l.wr.clear().opcode(cfg.test().opcode);
            // WRITE and SEND push the source's buffer to the other side; READ pulls the other side's buffer into
            // the source's: the same SGE and remote address.
            l.wr.sge(l.src.mr, l.offset, size).remote(l.remoteAddr, l.remoteRkey);
            if (cfg.test().isAtomic()) {
                l.wr.atomic(1, 0); // FETCH_AND_ADD 1: the original value lands in the source's first 8 bytes
            }
            l.postTarget = target;
            l.stopping = false;
            l.done = false;
            if (l.peak == null) {
                l.peak = new PeakMeter(cfg.txDepth() * numQps);
            }
            l.peak.reset();
        }
        final long[] recvTarget0 = new long[lanes.length];
        for (int i = 0; i < lanes.length; i++) {
            recvTarget0[i] = lanes[i].recvCompleted;
        }
        final Deadline deadline = new Deadline();
        final long start = System.nanoTime();
        final long stopAt = durationNs > 0 ? start + durationNs : Long.MAX_VALUE;
        for (final Lane l : lanes) {
            l.start = start;
            l.end = start;
        }
        int running = lanes.length;

        while (running > 0) {
            boolean any = false;
            for (final Lane l : lanes) {
                if (l.done) {
                    continue;
                }
                final SendTracker tracker = l.tracker;
                final QueuePair[] qps = l.src.qps;
                final SendWorkRequest wr = l.wr;
                // Post round-robin while the next QP in turn has room; one time stamp, taken before the first post,
                // stands for the batch (earlier than each post: a peak interval can only grow).
                long postedAt = 0;
                while (tracker.postedTotal() < l.postTarget) {
                    final int q = (int) (tracker.postedTotal() % numQps);
                    if (!tracker.hasRoom(q)) {
                        break;
                    }
                    final boolean last = durationNs == 0 && tracker.postedTotal() + numQps >= l.postTarget;
                    int flags = tracker.nextSignaled(q, last) ? SendFlags.SIGNALED : 0;
                    if (inline) {
                        flags |= SendFlags.INLINE;
                    }
                    if (postedAt == 0) {
                        postedAt = System.nanoTime();
                    }
                    l.peak.posted(tracker.postedTotal(), postedAt);
                    wr.wrId = tracker.nextWrId(q);
                    wr.sendFlags = flags;
                    qps[q].postSend(wr);
                    tracker.posted(q);
                }
                final int got = tracker.poll(l.src.scq);
                if (cfg.test().isSend() && l.dst != null) {
                    pollRecvs(l);
                }
                if (got > 0) {
                    any = true;
                    final long done = tracker.completedTotal();
                    final long now = System.nanoTime();
                    l.peak.completed(done, now);
                    if (durationNs > 0 && !l.stopping && now >= stopAt) {
                        l.stopping = true;
                        l.postTarget = stopBoundary(tracker);
                    }
                    if (done >= l.postTarget) {
                        l.end = System.nanoTime();
                        l.done = true;
                        running--;
                    }
                }
            }
            if (any) {
                deadline.rearm();
            } else {
                // An empty poll already advanced the NICs (invoker mode); dedicated threads need nothing. The
                // progress named is the first direction still running.
                final Lane waiting = lanes[0].done ? lanes[lanes.length - 1] : lanes[0];
                deadline.check(waitingFor, waiting.tracker.completedTotal(), waiting.postTarget);
            }
        }
        if (cfg.test().isSend()) {
            for (int i = 0; i < lanes.length; i++) {
                final Lane l = lanes[i];
                if (l.dst == null) {
                    continue;
                }
                final long want = recvTarget0[i] + l.tracker.completedTotal();
                final Deadline rd = new Deadline();
                while (l.recvCompleted < want) {
                    if (pollRecvs(l) > 0) {
                        rd.rearm();
                    } else {
                        progress.run();
                        rd.check("receive completions of send_bw", l.recvCompleted - recvTarget0[i],
                            want - recvTarget0[i]);
                    }
                }
            }
        }
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

    private int pollRecvs(final Lane l) {
        final int n = l.dst.rcq.poll(rwcs);
        for (int i = 0; i < n; i++) {
            final WorkCompletion wc = rwcs[i];
            if (wc.status != WcStatus.SUCCESS) {
                throw new IllegalStateException("receive completion failed: " + wc);
            }
            postRecv(l, (int) wc.wrId);
        }
        l.recvCompleted += n;
        return n;
    }

    private void postRecv(final Lane l, final int q) {
        l.rwr.wrId(q).sge(l.dst.mr, l.offset, cfg.size());
        l.dst.qps[q].postRecv(l.rwr);
    }
}
