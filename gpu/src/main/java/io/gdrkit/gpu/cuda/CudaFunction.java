/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.GpuFunction;

import java.lang.foreign.MemorySegment;

/** A {@code CUfunction} from a PTX module loaded with {@code cuModuleLoadData}. */
public record CudaFunction(String name, String moduleResource, MemorySegment handle) implements GpuFunction {
}
