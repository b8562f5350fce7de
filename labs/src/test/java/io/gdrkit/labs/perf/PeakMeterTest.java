/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** BW peak from synthetic time stamps: no clock, no timing assertion. */
class PeakMeterTest {
    /**
     * Four messages in flight (tx-depth 4); the NIC needs 1000 ns per message. The application polls late: all
     * four completions of a cycle are seen in two polls 10 ns apart. Measuring between polls (what gdrkit did)
     * gives 2 messages in 10 ns, 100x the real rate; from the cycle's first post to its last completion gives the
     * real one.
     */
    @Test
    void aBurstOfPolledCompletionsIsNotBandwidth() {
        final PeakMeter m = new PeakMeter(4);
        long t = 0;
        long posted = 0;
        long completed = 0;
        for (int cycle = 0; cycle < 50; cycle++) {
            for (int i = 0; i < 4; i++) {
                m.posted(posted++, t);
            }
            t += 4000; // the NIC works through the cycle
            completed += 2;
            m.completed(completed, t); // first poll: two completions
            t += 10;
            completed += 2;
            m.completed(completed, t); // second poll, 10 ns later: two more
        }
        final double avg = completed / (t / 1e9);
        final double peak = m.peakMsgsPerSec(avg);
        assertEquals(4 / 4010e-9, peak, 1e-6 * peak, "one cycle: 4 messages from their post to the last completion");
        // the old figure: 2 messages between two polls 10 ns apart
        final double burst = 2 / 10e-9;
        assertEquals(true, peak < burst / 50, "peak " + peak + " must be nowhere near the burst's " + burst);
    }

    @Test
    void neverBelowTheAverageAndTheAverageForARunShorterThanACycle() {
        final PeakMeter m = new PeakMeter(128);
        for (int i = 0; i < 50; i++) {
            m.posted(i, 0);
        }
        m.completed(50, 1000);
        assertEquals(123.0, m.peakMsgsPerSec(123.0));
        m.reset();
        assertEquals(7.0, m.peakMsgsPerSec(7.0));
    }

    @Test
    void theBestCycleWinsAndPostsOlderThanTheRingAreNotUsed() {
        final PeakMeter m = new PeakMeter(2);
        // cycle 1: messages 0,1 posted at 0, done at 100; cycle 2: 2,3 posted at 100, done at 150
        m.posted(0, 0);
        m.posted(1, 0);
        m.completed(2, 100);
        m.posted(2, 100);
        m.posted(3, 100);
        m.completed(4, 150);
        assertEquals(2 / 50e-9, m.peakMsgsPerSec(0), 1);
        // many later slow cycles overwrite the ring; the best stays
        for (long i = 4; i < 1000; i += 2) {
            m.posted(i, i * 1000);
            m.posted(i + 1, i * 1000);
            m.completed(i + 2, i * 1000 + 500);
        }
        assertEquals(2 / 50e-9, m.peakMsgsPerSec(0), 1);
    }
}
