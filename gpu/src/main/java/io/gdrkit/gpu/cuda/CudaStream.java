/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuStream;

import java.lang.foreign.MemorySegment;

/** A {@code CUstream}; {@link MemorySegment#NULL} is the legacy default stream. */
public record CudaStream(CudaGpu gpu, MemorySegment handle) implements GpuStream {
    @Override
    public GpuDevice device() {
        return gpu;
    }
}
