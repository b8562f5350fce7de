/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import java.util.Map;

/**
 * The machine's limits measured in this JVM: {@code MemorySegment.copy} MiB/s by size and the median
 * cache-line ping-pong round trip between two threads.
 */
public record BaselineResult(Map<Integer, Double> memcpy, double rttNs) {
    /** memcpy MiB/s at {@code bytes}, measured now when the table lacks that size. */
    public double memcpyAt(final int bytes) {
        final Double v = memcpy.get(bytes);
        return v != null ? v : Baseline.memcpyMibPerSec(Math.max(bytes, 1), 200);
    }
}
