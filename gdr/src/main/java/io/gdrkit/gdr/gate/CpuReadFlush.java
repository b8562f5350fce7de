/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.core.mem.DmaMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The CPU-read flush alternative (NCCL with GDRCopy: a read of the receive buffer through the CPU's BAR mapping):
 * one byte read on the same path as the NIC's posted writes, which orders them before it.
 */
public final class CpuReadFlush {
    private final MemorySegment scratch = Arena.ofAuto().allocate(8, 8);

    public void flush(final DmaMemory received) {
        received.dmaRead(0, scratch, 0, 1);
    }
}
