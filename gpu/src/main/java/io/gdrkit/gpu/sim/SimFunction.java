/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.GpuFunction;

/** A named Java kernel, launchable on a {@link SimGpu}. */
public record SimFunction(String name, SimKernel kernel) implements GpuFunction {
}
