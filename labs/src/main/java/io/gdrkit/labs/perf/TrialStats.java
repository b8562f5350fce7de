/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import java.util.Arrays;

/**
 * Repeated trials of one measurement: min, median, max, mean and the coefficient of variation (sample standard
 * deviation over the mean), so a figure comes with its spread. The CV is 0 for one trial.
 */
public record TrialStats(int trials, double min, double median, double max, double mean, double cv) {

    /** @throws IllegalArgumentException for no values */
    public static TrialStats of(final double... values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("no trials to summarize");
        }
        final double[] v = values.clone();
        Arrays.sort(v);
        final int n = v.length;
        final double median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        double sum = 0;
        for (final double x : v) {
            sum += x;
        }
        final double mean = sum / n;
        double sq = 0;
        for (final double x : v) {
            sq += (x - mean) * (x - mean);
        }
        final double cv = n < 2 || mean == 0 ? 0 : Math.sqrt(sq / (n - 1)) / mean;
        return new TrialStats(n, v[0], median, v[n - 1], mean, cv);
    }
}
