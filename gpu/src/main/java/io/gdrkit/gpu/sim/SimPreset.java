/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.WritesOrdering;

/**
 * Attribute presets of simulated devices. The values follow what CUDA reports on the named generations; the devices
 * themselves are simulated and every name says so.
 *
 * @param label                  short name used on command lines ({@code sim:h200})
 * @param name                   device name, with "(simulated)"
 * @param gpuDirectRdmaSupported attribute 116
 * @param flushWritesOptions     attribute 117
 * @param writesOrdering         attribute 118
 * @param dmaBufSupported        attribute 124
 * @param ccMajor                compute capability major
 * @param ccMinor                compute capability minor
 * @param bar1Bytes              default BAR1 aperture
 */
public record SimPreset(String label, String name, int gpuDirectRdmaSupported, int flushWritesOptions,
                        WritesOrdering writesOrdering, int dmaBufSupported, int ccMajor, int ccMinor,
                        long bar1Bytes) {
    private static final long MIB = 1L << 20;
    private static final long GIB = 1L << 30;

    /** Volta: no native ordering of NIC writes, no DMA-BUF, flush through cuFlushGPUDirectRDMAWrites. */
    public static final SimPreset V100 = new SimPreset("v100", "Tesla V100-SXM2-32GB (simulated)", 1, 1,
        WritesOrdering.NONE, 0, 7, 0, 32 * GIB);
    /** Hopper: the owner consumes NIC writes consistently; DMA-BUF export supported. */
    public static final SimPreset H100 = new SimPreset("h100", "NVIDIA H100 80GB HBM3 (simulated)", 1, 1,
        WritesOrdering.OWNER, 1, 9, 0, 128 * GIB);
    /** Hopper with HBM3e; same GPUDirect attributes as H100. */
    public static final SimPreset H200 = new SimPreset("h200", "NVIDIA H200 (simulated)", 1, 1,
        WritesOrdering.OWNER, 1, 9, 0, 256 * GIB);
    /** A device whose NIC writes every GPU consumes consistently (ordering ALL_DEVICES). */
    public static final SimPreset ALL_DEVICES = new SimPreset("all-devices",
        "gdrkit ordering ALL_DEVICES GPU (simulated)", 1, 1, WritesOrdering.ALL_DEVICES, 1, 9, 0, 256 * GIB);
    /** A GPU without GPUDirect RDMA (attribute 116 = 0), for negative controls; small 256 MiB BAR1 like consumer parts. */
    public static final SimPreset NO_GDR = new SimPreset("no-gdr", "gdrkit GPU without GPUDirect RDMA (simulated)",
        0, 0, WritesOrdering.NONE, 0, 8, 6, 256 * MIB);

    /** Looks a preset up by label ({@code v100}, {@code h100}, {@code h200}, {@code all-devices}, {@code no-gdr}). */
    public static SimPreset byLabel(final String label) {
        for (final SimPreset p : new SimPreset[] {V100, H100, H200, ALL_DEVICES, NO_GDR}) {
            if (p.label.equalsIgnoreCase(label)) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown simulated GPU '" + label + "' (v100, h100, h200, all-devices, no-gdr)");
    }

    /** The same preset with another BAR1 aperture size. */
    public SimPreset withBar1(final long bytes) {
        return new SimPreset(label, name, gpuDirectRdmaSupported, flushWritesOptions, writesOrdering, dmaBufSupported,
            ccMajor, ccMinor, bytes);
    }

    /** The same preset with another writes ordering (for experiments that sweep attribute 118). */
    public SimPreset withOrdering(final WritesOrdering ordering) {
        return new SimPreset(label, name, gpuDirectRdmaSupported, flushWritesOptions, ordering, dmaBufSupported,
            ccMajor, ccMinor, bar1Bytes);
    }
}
