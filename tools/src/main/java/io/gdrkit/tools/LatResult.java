/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.tools;

/** One latency row, all times in microseconds; t_typical is the median. */
record LatResult(int bytes, long iterations, double tMinUs, double tMaxUs, double tTypicalUs, double tAvgUs,
                 double tStdevUs, double p99Us, double p999Us) {
}
