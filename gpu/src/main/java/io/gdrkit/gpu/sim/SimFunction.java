package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.GpuFunction;

/** A named Java kernel, launchable on a {@link SimGpu}. */
public record SimFunction(String name, SimKernel kernel) implements GpuFunction {
}
