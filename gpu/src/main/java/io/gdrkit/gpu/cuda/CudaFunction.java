package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.GpuFunction;

import java.lang.foreign.MemorySegment;

/** A {@code CUfunction} from a PTX module loaded with {@code cuModuleLoadData}. */
public record CudaFunction(String name, String moduleResource, MemorySegment handle) implements GpuFunction {
}
