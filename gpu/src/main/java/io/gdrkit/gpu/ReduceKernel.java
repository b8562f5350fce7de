/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * The collectives' reduction kernel, {@code coll_reduce} in module {@value #MODULE} ({@code coll.cu} on CUDA, its Java
 * twin {@code SimKernels.COLL_REDUCE} on the simulated GPU's SM workers):
 * {@code coll_reduce(u8* dst, u64 dst_off, const u8* src, u64 src_off, u64 count, u32 type, u32 op)} computes
 * {@code dst[i] = op(dst[i], src[i])} for {@code count} elements at the byte offsets, any 1-D grid (a grid-stride
 * loop). Half and bfloat16 are computed in float and rounded to nearest even, as NCCL's kernels and gdrkit's host
 * reducer do; float and double in their own precision.
 */
public final class ReduceKernel {
    public static final String MODULE = "coll";
    public static final String NAME = "coll_reduce";

    /** Element types (the {@code type} argument). */
    public static final int INT8 = 0;
    public static final int INT32 = 1;
    public static final int INT64 = 2;
    public static final int FLOAT16 = 3;
    public static final int BFLOAT16 = 4;
    public static final int FLOAT32 = 5;
    public static final int FLOAT64 = 6;

    /** Operations (the {@code op} argument). */
    public static final int SUM = 0;
    public static final int PROD = 1;
    public static final int MIN = 2;
    public static final int MAX = 3;

    private ReduceKernel() {
    }

    /** Bytes of one element of {@code type}; an unknown code is an IllegalArgumentException. */
    public static int size(final int type) {
        return switch (type) {
            case INT8 -> 1;
            case INT32, FLOAT32 -> 4;
            case INT64, FLOAT64 -> 8;
            case FLOAT16, BFLOAT16 -> 2;
            default -> throw new IllegalArgumentException("coll_reduce type " + type);
        };
    }

    /** Arguments in the kernel's order. */
    public static KernelArgs args(final KernelArgs a, final DeviceBuffer dst, final long dstOff, final DeviceBuffer src,
                                  final long srcOff, final long count, final int type, final int op) {
        return a.clear().ptr(dst).u64(dstOff).ptr(src).u64(srcOff).u64(count).u32(type).u32(op);
    }
}
