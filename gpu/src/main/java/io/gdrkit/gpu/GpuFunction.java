/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * A launchable kernel: a Java kernel on the simulated GPU, a {@code CUfunction} from a PTX module on CUDA. Obtain one
 * with {@link GpuDevice#function(String, String)} so that the same experiment code runs on both.
 */
public interface GpuFunction {
    String name();
}
