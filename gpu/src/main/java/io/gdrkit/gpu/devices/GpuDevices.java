/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.devices;

import io.gdrkit.gpu.GpuDevice;

import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.gpu.cuda.CudaProbe;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;

/** Opens the GPU a {@code --gpu} option names: {@code sim:<preset>} or {@code cuda:N}. */
public final class GpuDevices {
    private GpuDevices() {
    }

    /** @throws IllegalArgumentException naming what was wrong; never invents a device */
    public static GpuDevice open(final String spec) {
        if (spec.startsWith("sim:")) {
            return SimGpu.create(SimPreset.byLabel(spec.substring(4)), SimGpuConfig.throughput(1));
        }
        if (spec.startsWith("cuda:")) {
            final int ordinal;
            try {
                ordinal = Integer.parseInt(spec.substring(5));
            } catch (final NumberFormatException e) {
                throw new IllegalArgumentException("GPU spec cuda:N needs a device number, not '" + spec + "'");
            }
            final CudaProbe probe = CudaGpu.probe();
            if (!probe.found()) {
                throw new IllegalArgumentException("GPU " + spec + ": no CUDA GPU here (" + probe + ")");
            }
            return CudaGpu.open(ordinal);
        }
        throw new IllegalArgumentException("a GPU spec is sim:<v100|h100|h200|all-devices> or cuda:N, not '" + spec
            + "'");
    }
}
