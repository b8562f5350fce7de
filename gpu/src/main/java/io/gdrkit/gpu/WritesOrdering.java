/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/** {@code CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING} (attribute 118): who can consume NIC writes without a flush. */
public enum WritesOrdering {
    /** The device does not order remote writes; a flush (or a read on the same path) is needed. */
    NONE(0),
    /** The owning GPU consumes remote writes consistently; other GPUs may not. */
    OWNER(100),
    /** Every GPU in the system consumes remote writes consistently. */
    ALL_DEVICES(200);

    private final int value;

    WritesOrdering(final int value) {
        this.value = value;
    }

    public int value() {
        return value;
    }

    /**
     * True when a flush to {@code scope} is a no-op on a device with this ordering: the CUDA docs compare the
     * numeric values, smaller scopes having smaller values.
     */
    public boolean covers(final FlushScope scope) {
        return scope.value() <= value;
    }

    public static WritesOrdering of(final int value) {
        for (final WritesOrdering o : values()) {
            if (o.value == value) {
                return o;
            }
        }
        throw new IllegalArgumentException("unknown CUGPUDirectRDMAWritesOrdering value " + value);
    }
}
