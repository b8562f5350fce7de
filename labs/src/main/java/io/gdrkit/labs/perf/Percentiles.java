/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import org.HdrHistogram.Histogram;

/**
 * Percentiles of recorded latencies that stay inside what was measured. A histogram answers with the upper bound of
 * the bucket a percentile falls in, which can lie above the largest sample (p99.9 printed above t_max); here every
 * percentile is clamped to the measured minimum and maximum, as perftest's sorted samples would give.
 */
public final class Percentiles {
    private Percentiles() {
    }

    /**
     * The {@code percentile}-th value of {@code h}, within {@code [min, max]}.
     *
     * @param h          the recorded values
     * @param percentile 0..100
     * @param min        the smallest value recorded
     * @param max        the largest value recorded
     * @return the percentile, never below min nor above max
     */
    public static long at(final Histogram h, final double percentile, final long min, final long max) {
        final long v = h.getValueAtPercentile(percentile);
        return Math.max(min, Math.min(max, v));
    }
}
