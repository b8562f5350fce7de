/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import java.util.List;

/**
 * What looking for CUDA found. When {@link #found()} is false nothing was invented: {@link #evidence()} names the
 * library looked for and the failure (load error, {@code cuInit} result, device count).
 *
 * @param found         true when the driver loaded, initialized and reported at least one device
 * @param library       the library looked for ({@code libcuda.so.1})
 * @param driverVersion {@code cuDriverGetVersion} (e.g. 12040 for 12.4), or -1
 * @param deviceCount   {@code cuDeviceGetCount}, or 0
 * @param devices       names of the devices ({@code cuDeviceGetName})
 * @param evidence      what was done and what it returned
 */
public record CudaProbe(boolean found, String library, int driverVersion, int deviceCount, List<String> devices,
                        String evidence) {
    @Override
    public String toString() {
        return found ? "CUDA found: " + evidence : "CUDA not found: " + evidence;
    }
}
