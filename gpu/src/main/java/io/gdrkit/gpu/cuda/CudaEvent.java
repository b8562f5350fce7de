/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuEvent;

import java.lang.foreign.MemorySegment;

/** A {@code CUevent}. */
public record CudaEvent(CudaGpu gpu, MemorySegment handle) implements GpuEvent {
    @Override
    public GpuDevice device() {
        return gpu;
    }
}
