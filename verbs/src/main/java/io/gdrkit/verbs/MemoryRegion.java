/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import io.gdrkit.core.mem.DmaMemory;

import java.lang.foreign.MemorySegment;

/** A registered memory region (ibv_mr). */
public interface MemoryRegion extends AutoCloseable {
    /** ibv_rereg_mr flags: IBV_REREG_MR_CHANGE_TRANSLATION, _PD, _ACCESS. */
    int REREG_CHANGE_TRANSLATION = 1;
    int REREG_CHANGE_PD = 1 << 1;
    int REREG_CHANGE_ACCESS = 1 << 2;

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

    /**
     * Re-registers this MR (ibv_rereg_mr): with {@link #REREG_CHANGE_TRANSLATION} onto {@code segment}, with
     * {@link #REREG_CHANGE_PD} into {@code pd}, with {@link #REREG_CHANGE_ACCESS} to {@code access}; what is not
     * flagged stays. The keys change (as libibverbs allows): the old ones are refused from then on, by local and
     * remote access alike, and {@link #lkey()}/{@link #rkey()} return the new ones. On failure nothing changed.
     *
     * @throws VerbsException EINVAL for no or unknown flags, bad access bits, a heap or empty segment, a PD of
     *                        another device, an MR of DMA memory with CHANGE_TRANSLATION, or a deregistered MR
     */
    default void reregMr(final int flags, final ProtectionDomain pd, final java.lang.foreign.MemorySegment segment,
                         final int access) {
        throw new VerbsException(io.gdrkit.core.Errno.EOPNOTSUPP, "this provider cannot re-register an MR");
    }

    /** Deregisters (ibv_dereg_mr): afterwards the keys are refused, by local and remote access alike. */
    void deregister();

    @Override
    default void close() {
        deregister();
    }
}
