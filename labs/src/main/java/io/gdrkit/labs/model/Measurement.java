/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

/**
 * One model input: at {@code x} (QPs, or bytes per message) the median of {@code runs} measured bandwidths,
 * {@code mibS} MiB/s, with where it came from.
 */
public record Measurement(double x, double mibS, int runs, String source) {
    public Measurement {
        if (!(x > 0) || !(mibS > 0) || Double.isInfinite(x) || Double.isInfinite(mibS)) {
            throw new IllegalArgumentException("a measurement needs x > 0 and bandwidth > 0 (got x " + x + ", "
                + mibS + " MiB/s from " + source + ")");
        }
    }
}
