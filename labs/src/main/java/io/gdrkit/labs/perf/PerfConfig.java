/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.softnic.SoftNicContext;

/** The validated settings of one perf run, for one message size at a time. */
public record PerfConfig(PerfKind test, int size, long iters, long warmup, int numQps, int txDepth, int rxDepth,
                  int cqMod, int mtu, int inlineSize, double durationSeconds, long bufferBytes,
                  SoftNicContext.ProgressMode progress) {

    public PerfConfig withSize(final int newSize, final long newWarmup) {
        return new PerfConfig(test, newSize, iters, newWarmup, numQps, txDepth, rxDepth, cqMod, mtu, inlineSize,
            durationSeconds, bufferBytes, progress);
    }

    public boolean timed() {
        return durationSeconds > 0;
    }
}
