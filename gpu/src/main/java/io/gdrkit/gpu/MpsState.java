/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * {@code CU_DEVICE_ATTRIBUTE_MPS_ENABLED} (attribute 133): whether the contexts this process creates on the device are
 * shared through the CUDA Multi-Process Service. Without MPS, contexts of different processes on one GPU time-slice;
 * with it, their work runs in one shared server context. Never guessed: a driver that does not know the attribute
 * gives {@link #UNKNOWN}, and a simulated GPU has no contexts to share ({@link #NOT_APPLICABLE}).
 */
public enum MpsState {
    /** Attribute 133 = 1: this process's contexts on the device go through an MPS server. */
    ON("true"),
    /** Attribute 133 = 0: this process has its own context on the device; other processes' contexts time-slice. */
    OFF("false"),
    /** The driver did not answer (an older driver returns CUDA_ERROR_INVALID_VALUE for attribute 133). */
    UNKNOWN("unknown"),
    /** A simulated GPU: no CUDA context exists, so nothing is shared or time-sliced. */
    NOT_APPLICABLE("not applicable");

    private final String label;

    MpsState(final String label) {
        this.label = label;
    }

    /** "true", "false", "unknown" or "not applicable" (what JSON and text print). */
    public String label() {
        return label;
    }

    /** The attribute as read: "1", "0", "unknown" or "n/a" (a simulated GPU). */
    public String attributeText() {
        return switch (this) {
            case ON -> "1";
            case OFF -> "0";
            case UNKNOWN -> "unknown";
            case NOT_APPLICABLE -> "n/a";
        };
    }

    /** The attribute's value as CUDA gives it: 1 is {@link #ON}, 0 {@link #OFF}, anything else {@link #UNKNOWN}. */
    public static MpsState of(final int attribute133) {
        return attribute133 == 1 ? ON : attribute133 == 0 ? OFF : UNKNOWN;
    }
}
