/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/** Grid or block dimensions of a kernel launch. */
public record Dim3(int x, int y, int z) {
    public Dim3 {
        if (x <= 0 || y <= 0 || z <= 0) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "dimensions must be positive: " + x + "x" + y + "x" + z);
        }
    }

    public static Dim3 of(final int x) {
        return new Dim3(x, 1, 1);
    }

    public long count() {
        return (long) x * y * z;
    }
}
