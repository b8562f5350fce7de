/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.mem;

import java.lang.foreign.MemorySegment;

/**
 * Pins host memory that a NIC registers, so that a device the NIC serves can read it by DMA without a copy first:
 * what a GPUDirect-capable stack does for registered memory (a CUDA GPU: {@code cuMemHostRegister}). A NIC that has
 * one asks it at every host MR registration and runs what it returns at deregistration.
 */
public interface HostPinner {
    /**
     * Pins {@code segment} (a native segment the NIC is registering). Returns what unpins it, run once when the MR
     * is deregistered, after the NIC stopped handing its bytes out; or null when the memory stays unpinned (the
     * pinner refused; it keeps the reason for its own reports). Never throws for a refusal: the registration goes
     * on and the memory's bytes are copied as before.
     */
    Runnable pin(MemorySegment segment);
}
