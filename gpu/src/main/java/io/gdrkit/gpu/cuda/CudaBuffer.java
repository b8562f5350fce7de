/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;

/** Device memory from {@code cuMemAlloc_v2}. */
public record CudaBuffer(CudaGpu gpu, long address, long size) implements DeviceBuffer {
    @Override
    public GpuDevice device() {
        return gpu;
    }

    @Override
    public String toString() {
        return "CudaBuffer[gpu" + gpu.ordinal() + " 0x" + Long.toHexString(address) + ", " + size + " B]";
    }
}
