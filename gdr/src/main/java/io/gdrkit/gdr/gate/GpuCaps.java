/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.gpu.GpuDevice;

/**
 * What a GPU offers GPUDirect RDMA, with where each value came from.
 *
 * @param gdrSupported    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED (116)
 * @param computeCap      major * 10 + minor
 * @param dmabufSupported CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (124)
 * @param driverVersion   cuDriverGetVersion, e.g. 13000
 * @param nvlinkPeer      another GPU is NVLink-connected to this one
 * @param singleGpu       the only GPU of the job on this node
 * @param source          "CUDA driver", "simulated H200", ...
 */
public record GpuCaps(int ordinal, boolean gdrSupported, int computeCap, boolean dmabufSupported, int driverVersion,
                      boolean nvlinkPeer, boolean singleGpu, String source) {
    /** From a {@link GpuDevice}'s attributes (simulated or real). */
    public static GpuCaps of(final GpuDevice gpu, final int driverVersion, final boolean nvlinkPeer,
                             final boolean singleGpu) {
        final var a = gpu.attributes();
        return new GpuCaps(gpu.ordinal(), a.gpuDirectRdmaSupported() != 0, a.ccMajor() * 10 + a.ccMinor(),
            a.dmaBufSupported() != 0, driverVersion, nvlinkPeer, singleGpu,
            gpu.isSimulated() ? "simulated GPU (" + gpu.describe() + ")" : "CUDA driver (" + gpu.describe() + ")");
    }
}
