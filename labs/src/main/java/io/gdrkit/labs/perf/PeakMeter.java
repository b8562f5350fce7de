/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

/**
 * "BW peak" as perftest defines it: the best rate over an interval that starts when a message is <em>posted</em>
 * and ends when a later message's completion is seen (perftest's print_report_bw takes the smallest
 * {@code (tcompleted[j] - tposted[i]) / (j - i + 1)}). Here the interval spans one full cycle: the
 * {@code window} messages that can be in flight at once (tx-depth x QPs), from the post of the cycle's first
 * message to the completion that retires its last. Such an interval holds all the work of those messages, so
 * completions that were finished earlier and polled together (a burst) cannot shrink it: measuring between two
 * polls of completions, as gdrkit once did, reported a burst as bandwidth (419,260 MiB/s peak for a 27,007
 * average on two cores).
 *
 * <p>Post times go into a ring of at least twice the window (at most {@code window} messages are outstanding, so
 * the cycle's first message is still in it when its last completes). Nothing is allocated after construction.
 */
public final class PeakMeter {
    private final int window;
    private final long[] postedAt;
    private final int mask;
    private double bestMsgsPerNs;

    /** @param window messages of one full cycle (tx-depth x QPs, or the in-flight slots), at least 1 */
    public PeakMeter(final int window) {
        this.window = Math.max(1, window);
        final int cap = Integer.highestOneBit(Math.max(2, this.window * 2 + 1) * 2 - 1);
        this.postedAt = new long[cap];
        this.mask = cap - 1;
    }

    /** Forgets the best interval (a new measured run after the warm-up). */
    public void reset() {
        bestMsgsPerNs = 0;
    }

    /** Message {@code index} (0-based, in posting order) was posted at or after {@code nanos}. */
    public void posted(final long index, final long nanos) {
        postedAt[(int) (index & mask)] = nanos;
    }

    /**
     * {@code completedTotal} messages have completed, seen at {@code nanos}: the cycle ending with message
     * {@code completedTotal - 1} is a candidate interval.
     */
    public void completed(final long completedTotal, final long nanos) {
        if (completedTotal < window) {
            return;
        }
        final long dt = nanos - postedAt[(int) ((completedTotal - window) & mask)];
        if (dt > 0) {
            bestMsgsPerNs = Math.max(bestMsgsPerNs, (double) window / dt);
        }
    }

    /**
     * The best rate in messages per second, never below {@code avgMsgsPerSec} (the whole run is an interval
     * too, as in perftest); the average when the run was shorter than one cycle.
     */
    public double peakMsgsPerSec(final double avgMsgsPerSec) {
        return Math.max(bestMsgsPerNs * 1e9, avgMsgsPerSec);
    }
}
