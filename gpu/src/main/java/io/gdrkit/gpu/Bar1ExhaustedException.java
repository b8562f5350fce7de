/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * Mapping GPU memory for a NIC failed because the BAR1 aperture is full. On real hardware this surfaces as
 * {@code nvidia_p2p_get_pages} returning -ENOMEM and {@code ibv_reg_mr} failing; there is no CUresult for it.
 */
public final class Bar1ExhaustedException extends GpuException {
    public Bar1ExhaustedException(final String message) {
        super("BAR1_EXHAUSTED", -1, message);
    }
}
