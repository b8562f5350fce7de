/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * A GPU operation failed. Carries CUDA's error name (for example {@code CUDA_ERROR_INVALID_VALUE}) so that
 * simulated and real failures read the same, plus the numeric code where CUDA defines one (-1 otherwise).
 */
public class GpuException extends RuntimeException {
    private final String errorName;
    private final int code;

    public GpuException(final String errorName, final int code, final String message) {
        super(errorName + (code >= 0 ? " (" + code + ")" : "") + ": " + message);
        this.errorName = errorName;
        this.code = code;
    }

    /** CUDA's name of the error, e.g. {@code CUDA_ERROR_INVALID_VALUE}. */
    public String errorName() {
        return errorName;
    }

    /** CUresult value, or -1 when the error is not a CUDA one (e.g. simulated BAR1 exhaustion). */
    public int code() {
        return code;
    }
}
