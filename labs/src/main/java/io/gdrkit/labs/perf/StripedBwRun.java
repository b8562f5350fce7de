/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.verbs.cm.Striper;
import io.gdrkit.verbs.WorkCompletion;

/**
 * write_bw with {@code --stripe}: every message is cut into one chunk per QP ({@link Striper}) and counts as done
 * when all its stripes have completed, the way a transport splits one transfer over its QPs. Up to
 * {@code slots} messages are in flight; nothing is allocated per message.
 */
public final class StripedBwRun {
    private final Loopback.Side a;
    private final long remoteAddr;
    private final int remoteRkey;
    private final PerfConfig cfg;
    private final int slots;
    private final WorkCompletion[] wcs = new WorkCompletion[64];

    public StripedBwRun(final Loopback.Side a, final long remoteAddr, final int remoteRkey, final PerfConfig cfg) {
        this.a = a;
        this.remoteAddr = remoteAddr;
        this.remoteRkey = remoteRkey;
        this.cfg = cfg;
        // each in-flight message holds one WQE per QP: stay within every send queue
        this.slots = Integer.highestOneBit(Math.max(1, Math.min(64, cfg.txDepth())));
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
    }

    public BwResult run() {
        Warmup.run(cfg, this::measure);
        return measure(cfg.iters());
    }

    private BwResult measure(final long iters) {
        final Striper striper = new Striper(a.qps, 4096, slots);
        final Deadline deadline = new Deadline();
        final PeakMeter peak = new PeakMeter(slots);
        long posted = 0;
        long completed = 0;
        int inFlight = 0;
        final long start = System.nanoTime();
        while (completed < iters) {
            long postedAt = 0;
            while (posted < iters && inFlight < slots) {
                if (postedAt == 0) {
                    postedAt = System.nanoTime();
                }
                peak.posted(posted, postedAt);
                striper.postWrite(posted, a.mr, 0, cfg.size(), remoteAddr, remoteRkey, null);
                posted++;
                inFlight++;
            }
            final int n = a.scq.poll(wcs);
            for (int i = 0; i < n; i++) {
                if (striper.onCompletion(wcs[i]) >= 0) {
                    completed++;
                    inFlight--;
                }
            }
            if (n > 0) {
                deadline.rearm();
                peak.completed(completed, System.nanoTime());
            } else {
                deadline.check("the stripes of striped write_bw", completed, iters);
            }
        }
        final double secs = (System.nanoTime() - start) / 1e9;
        final double avg = completed / secs;
        final double peakPerSec = peak.peakMsgsPerSec(avg);
        return new BwResult(cfg.size(), completed, peakPerSec * cfg.size() / (1 << 20),
            avg * cfg.size() / (1 << 20), avg / 1e6);
    }
}
