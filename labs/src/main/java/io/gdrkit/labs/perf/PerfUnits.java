/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import java.util.Locale;

/** Unit conversions shared by the perf records and whoever renders them. */
public final class PerfUnits {
    private PerfUnits() {
    }

    /** MiB/s to Gb/s (perftest's {@code --report_gbits}). */
    public static double toGbits(final double mibPerSec) {
        return mibPerSec * (1 << 20) * 8 / 1e9;
    }

    /** Two decimals, locale-independent. */
    public static String fmt(final double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
