/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;

/**
 * Book-keeping of posted and completed send WQEs per QP when only every {@code cqMod}-th WQE is signaled
 * (perftest's cq_mod). The wr_id carries the QP index and the WQE's sequence number, so a signaled completion
 * retires it and every unsignaled WQE before it: RC completes in order. Allocation free.
 */
public final class SendTracker {
    private static final int QP_SHIFT = 40;
    private static final long SEQ_MASK = (1L << QP_SHIFT) - 1;

    private final long[] posted;
    private final long[] completed;
    private final int cqMod;
    private final int depth;
    private final WorkCompletion[] wcs;
    private long postedTotal;
    private long completedTotal;

    public SendTracker(final int numQps, final int depth, final int cqMod) {
        this.posted = new long[numQps];
        this.completed = new long[numQps];
        this.depth = depth;
        this.cqMod = Math.max(1, Math.min(cqMod, depth));
        this.wcs = new WorkCompletion[32];
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
    }

    public boolean hasRoom(final int qp) {
        return posted[qp] - completed[qp] < depth;
    }

    public long outstanding(final int qp) {
        return posted[qp] - completed[qp];
    }

    /** Whether the next WQE of {@code qp} must be signaled; {@code last} forces it (the end of a run). */
    public boolean nextSignaled(final int qp, final boolean last) {
        return last || (posted[qp] + 1) % cqMod == 0;
    }

    /** Whether the WQEs posted so far on {@code qp} end with a signaled one (a duration run may stop there). */
    public boolean atSignalBoundary(final int qp) {
        return posted[qp] % cqMod == 0;
    }

    /** The wr_id for the next WQE of {@code qp}; call {@link #posted} after posting it. */
    public long nextWrId(final int qp) {
        return ((long) qp << QP_SHIFT) | posted[qp];
    }

    public void posted(final int qp) {
        posted[qp]++;
        postedTotal++;
    }

    public long postedTotal() {
        return postedTotal;
    }

    public long completedTotal() {
        return completedTotal;
    }

    public long allOutstanding() {
        return postedTotal - completedTotal;
    }

    /**
     * Polls {@code cq} once (which, with caller-driven progress, also advances the NICs) and retires what the
     * completions cover.
     *
     * @return the number of completions polled
     * @throws IllegalStateException on an error completion
     */
    public int poll(final CompletionQueue cq) {
        final int n = cq.poll(wcs);
        for (int i = 0; i < n; i++) {
            final WorkCompletion wc = wcs[i];
            if (wc.status != WcStatus.SUCCESS) {
                throw new IllegalStateException("send completion failed: " + wc);
            }
            final int qp = (int) (wc.wrId >>> QP_SHIFT);
            final long done = (wc.wrId & SEQ_MASK) + 1;
            completedTotal += done - completed[qp];
            completed[qp] = done;
        }
        return n;
    }

    /** Polls until every posted WQE completed (needs the last one of each QP signaled). */
    public void drain(final CompletionQueue cq, final Loopback lb, final String what) {
        final Deadline deadline = new Deadline();
        while (completedTotal < postedTotal) {
            if (poll(cq) > 0) {
                deadline.rearm();
            } else {
                lb.progress();
                deadline.check(what, completedTotal, postedTotal);
            }
        }
    }

    /** Polls until {@code qp} has room for one more WQE. */
    public void awaitRoom(final int qp, final CompletionQueue cq, final Loopback lb, final String what) {
        if (hasRoom(qp)) {
            return;
        }
        final Deadline deadline = new Deadline();
        while (!hasRoom(qp)) {
            if (poll(cq) > 0) {
                deadline.rearm();
            } else {
                lb.progress();
                deadline.check(what, completed[qp], posted[qp]);
            }
        }
    }
}
