package io.gdrkit.verbs;

import io.gdrkit.core.mem.DmaMemory;

import java.lang.foreign.MemorySegment;

/** A registered memory region (ibv_mr). */
public interface MemoryRegion extends AutoCloseable {
    ProtectionDomain pd();

    /** The host memory of the MR, or null when it is {@link #dma() DMA memory}. */
    MemorySegment segment();

    /** The DMA memory (GPU memory ...) of the MR, or null for host memory. */
    default DmaMemory dma() {
        return null;
    }

    /** Virtual address of the first byte. */
    long address();

    long length();

    int lkey();

    int rkey();

    int access();

    /** Deregisters (ibv_dereg_mr): afterwards the keys are refused, by local and remote access alike. */
    void deregister();

    @Override
    default void close() {
        deregister();
    }
}
