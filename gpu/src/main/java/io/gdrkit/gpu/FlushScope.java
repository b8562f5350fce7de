/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/** {@code CUflushGPUDirectRDMAWritesScope}: how far {@code cuFlushGPUDirectRDMAWrites} makes NIC writes visible. */
public enum FlushScope {
    /** Visible to the context that owns the memory. */
    TO_OWNER(100),
    /** Visible to every context in the system. */
    TO_ALL_DEVICES(200);

    /** {@code CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX}: the only flush target CUDA defines. */
    public static final int TARGET_CURRENT_CTX = 0;

    private final int value;

    FlushScope(final int value) {
        this.value = value;
    }

    public int value() {
        return value;
    }
}
