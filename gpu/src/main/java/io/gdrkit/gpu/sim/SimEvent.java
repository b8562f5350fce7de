/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuEvent;

/** A simulated CUDA event: stamped with the GPU clock when the stream reaches it. */
public final class SimEvent implements GpuEvent {
    private final SimGpu gpu;
    volatile SimStream stream;
    volatile long seq;
    volatile long stampNanos;

    SimEvent(final SimGpu gpu) {
        this.gpu = gpu;
    }

    @Override
    public GpuDevice device() {
        return gpu;
    }
}
