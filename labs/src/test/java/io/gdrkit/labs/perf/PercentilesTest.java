/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/** A percentile never lies outside the measured range, where the histogram's bucket bound would put it. */
class PercentilesTest {
    @Test
    void theBucketBoundAboveTheLargestSampleIsNotReported() {
        final Histogram h = new Histogram(3_600_000_000_000L, 3);
        final long max = 18_635_520; // ns, the t_max of the run where p99.9 was printed above it
        h.recordValue(1_000);
        h.recordValue(max);
        assertTrue(h.getValueAtPercentile(99.9) > max, "the histogram alone answers above the max");
        assertEquals(max, Percentiles.at(h, 99.9, 1_000, max));
        assertEquals(max, Percentiles.at(h, 100, 1_000, max));
        assertEquals(1_000, Percentiles.at(h, 0, 1_000, max));
    }

    @Test
    void seededSamplesKeepEveryPercentileBetweenMinAndMaxAndInOrder() {
        final SplittableRandom r = new SplittableRandom(42);
        final Histogram h = new Histogram(3_600_000_000_000L, 3);
        long min = Long.MAX_VALUE;
        long max = 0;
        for (int i = 0; i < 300; i++) {
            final long v = 500 + r.nextLong(20_000_000);
            h.recordValue(v);
            min = Math.min(min, v);
            max = Math.max(max, v);
        }
        long last = min;
        for (final double p : new double[] {0, 50, 90, 99, 99.9, 100}) {
            final long v = Percentiles.at(h, p, min, max);
            assertTrue(v >= min && v <= max, p + ": " + v + " outside " + min + ".." + max);
            assertTrue(v >= last, p + " below a lower percentile");
            last = v;
        }
    }
}
