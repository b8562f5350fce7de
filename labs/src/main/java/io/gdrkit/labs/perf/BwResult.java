/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

/** One bandwidth row: bytes per message, messages completed, peak and average MiB/s, million messages/s. */
public record BwResult(int bytes, long iterations, double bwPeakMibS, double bwAvgMibS, double msgRateMpps) {
}
