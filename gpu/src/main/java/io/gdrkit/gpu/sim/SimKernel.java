/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

/**
 * A kernel for the simulated GPU, written in Java. It runs once per block on an SM worker thread and loops over its
 * block's threads itself; it reads and writes memory only through {@link KernelContext#view}.
 */
@FunctionalInterface
public interface SimKernel {
    void run(KernelContext ctx);
}
