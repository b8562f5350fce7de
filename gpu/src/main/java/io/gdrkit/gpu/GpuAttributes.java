/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * Device attributes that decide the GPUDirect RDMA data path.
 *
 * @param name                   device name ({@code cuDeviceGetName}); a simulated one says so
 * @param gpuDirectRdmaSupported attribute 116
 * @param flushWritesOptions     attribute 117, a bitmask of {@link #FLUSH_OPTION_HOST} and {@link #FLUSH_OPTION_MEMOPS}
 * @param writesOrdering         attribute 118
 * @param dmaBufSupported        attribute 124
 * @param ccMajor                attribute 75
 * @param ccMinor                attribute 76
 * @param totalMemBytes          {@code cuDeviceTotalMem_v2}
 * @param bar1Bytes              BAR1 aperture size, or -1 when unknown (see {@code bar1Evidence})
 * @param bar1Evidence           where the BAR1 size came from, or why it is unknown
 * @param mpsEnabled             attribute 133 ({@link MpsState}): {@code UNKNOWN} when the driver does not know it,
 *                               {@code NOT_APPLICABLE} on a simulated GPU
 * @param mpsEvidence            how {@code mpsEnabled} was learnt: the call and its value or error
 */
public record GpuAttributes(String name, int gpuDirectRdmaSupported, int flushWritesOptions,
                            WritesOrdering writesOrdering, int dmaBufSupported, int ccMajor, int ccMinor,
                            long totalMemBytes, long bar1Bytes, String bar1Evidence, MpsState mpsEnabled,
                            String mpsEvidence) {
    public static final int ATTR_GPU_DIRECT_RDMA_SUPPORTED = 116;
    public static final int ATTR_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS = 117;
    public static final int ATTR_GPU_DIRECT_RDMA_WRITES_ORDERING = 118;
    public static final int ATTR_DMA_BUF_SUPPORTED = 124;
    public static final int ATTR_COMPUTE_CAPABILITY_MAJOR = 75;
    public static final int ATTR_COMPUTE_CAPABILITY_MINOR = 76;
    /** {@code CU_DEVICE_ATTRIBUTE_MPS_ENABLED}: contexts created on the device are shared via MPS (1) or not (0). */
    public static final int ATTR_MPS_ENABLED = 133;
    /** {@code CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST}: cuFlushGPUDirectRDMAWrites is supported. */
    public static final int FLUSH_OPTION_HOST = 1;
    /** {@code CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_MEMOPS}: stream memop flush is supported. */
    public static final int FLUSH_OPTION_MEMOPS = 2;

    /** Compute capability as "major.minor". */
    public String computeCapability() {
        return ccMajor + "." + ccMinor;
    }
}
