/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/** Device memory: an allocation on one GPU, known by its device address. Freed with {@link GpuDevice#free}. */
public interface DeviceBuffer {
    /** The device virtual address ({@code CUdeviceptr}); for a simulated GPU a stable synthetic address. */
    long address();

    long size();

    /** The GPU that owns this memory. */
    GpuDevice device();
}
