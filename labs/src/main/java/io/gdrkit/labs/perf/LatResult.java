/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

/** One latency row, all times in microseconds; t_typical is the median. */
public record LatResult(int bytes, long iterations, double tMinUs, double tMaxUs, double tTypicalUs, double tAvgUs,
                 double tStdevUs, double p99Us, double p999Us) {
}
