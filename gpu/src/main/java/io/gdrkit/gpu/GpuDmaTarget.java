/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

import java.lang.foreign.MemorySegment;

/**
 * How a NIC touches GPU memory: through a BAR1 mapping, with posted writes and non-posted reads, which is what
 * GPUDirect RDMA does on PCIe. The software NIC calls these from its engine threads; they allocate nothing.
 *
 * <p>Ordering contract (NVIDIA GPUDirect RDMA, "Synchronization and Memory Ordering"): a write is <em>posted</em>,
 * it returns before the bytes are visible to GPU kernels; a later {@link #nicRead} on the same path is ordered
 * behind the earlier posted writes and so flushes them; {@link #nicCompletionFence} is what the NIC calls right
 * before it reports a completion, and it gives the visibility that the device's
 * {@link WritesOrdering writes ordering} promises, no more.
 */
public interface GpuDmaTarget {
    /**
     * Maps {@code buffer} into the BAR1 aperture so that a NIC can reach it (what {@code ibv_reg_mr} over GPU memory
     * does through {@code nvidia_p2p_get_pages} or DMA-BUF).
     *
     * @throws Bar1ExhaustedException when the aperture cannot hold the buffer
     */
    NicMapping mapForNic(DeviceBuffer buffer);

    /** A posted NIC write of {@code len} bytes from {@code src} into the mapped buffer at {@code offset}. */
    void nicWrite(NicMapping mapping, long offset, MemorySegment src, long srcOffset, long len);

    /**
     * {@link #nicWrite} whose source the NIC holds unchanged until a completion fence started after it has completed
     * ({@link io.gdrkit.core.mem.DmaMemory#dmaWriteHeldSource}): the GPU may read it later by DMA where it is pinned
     * host memory the GPU knows, as a GPUDirect NIC reads registered memory. The default: {@link #nicWrite}.
     */
    default void nicWriteHeldSource(final NicMapping mapping, final long offset, final MemorySegment src,
                                    final long srcOffset, final long len) {
        nicWrite(mapping, offset, src, srcOffset, len);
    }

    /**
     * Pins host memory for the NIC's writes into this GPU ({@link io.gdrkit.core.mem.HostPinner}): afterwards a
     * {@link #nicWriteHeldSource} from it is read by DMA. Returns what unpins it, or null when the memory stays
     * unpinned (the reason goes into the target's NIC counters). The default: nothing to pin.
     */
    default Runnable nicPinHost(final MemorySegment host) {
        return null;
    }

    /**
     * A NIC read of the mapped buffer into {@code dst}. Reads do not pass posted writes on the same path: every write
     * posted before this call lands first, then the bytes are read.
     */
    void nicRead(NicMapping mapping, long offset, MemorySegment dst, long dstOffset, long len);

    /**
     * The mapped buffer's bytes as a segment a NIC thread may copy from after {@link #nicReadFence}: a read without
     * a copy into a packet first. Null (the default) when the CPU cannot address device memory (a real GPU).
     */
    default MemorySegment nicCpuView(final NicMapping mapping) {
        return null;
    }

    /**
     * The ordering half of {@link #nicRead}: every write posted before this call lands, so a read of
     * {@link #nicCpuView} that follows sees it, exactly as {@link #nicRead} would. False when the mapping is closed.
     */
    default boolean nicReadFence(final NicMapping mapping) {
        return mapping.isOpen();
    }

    /** Called by the NIC just before it reports a completion for writes into this GPU. */
    void nicCompletionFence();

    /**
     * A read of a request's source ({@link io.gdrkit.core.mem.DmaMemory#dmaReadSourceStart}), started without waiting
     * and not ordered behind NIC writes still in flight: a token for {@link #nicReadAwait}, or 0 when the bytes are
     * there already. The default: {@link #nicRead}, and 0.
     */
    default long nicReadSourceStart(final NicMapping mapping, final long offset, final MemorySegment dst,
                                    final long dstOffset, final long len) {
        nicRead(mapping, offset, dst, dstOffset, len);
        return 0;
    }

    /** Waits until the read of {@code token} ({@link #nicReadSourceStart}) has landed; 0 returns at once. */
    default void nicReadAwait(final long token) {
    }

    /** Whether one large {@link #nicRead} costs much less than many small ones (a copy-engine round trip each). */
    default boolean nicPrefersBulkReads() {
        return false;
    }

    /**
     * A host buffer that {@link #nicRead}s land in fastest, freed when unreachable: pinned memory that a CUDA copy
     * engine writes directly (no staging copy). The default: plain native memory.
     */
    default MemorySegment nicReadBuffer(final long bytes) {
        return java.lang.foreign.Arena.ofAuto().allocate(bytes, 4096);
    }

    /**
     * The completion fence without waiting: starts it for every write posted so far and returns a token for
     * {@link #nicFenceDone}. A NIC that must not stall (its ACK can wait, its engine should not) uses this pair.
     */
    default long nicFenceStart() {
        nicCompletionFence();
        return 0;
    }

    /** Whether the fence that {@link #nicFenceStart} returned {@code token} for has completed; never blocks. */
    default boolean nicFenceDone(final long token) {
        return true;
    }

    /** How the NIC's writes into this GPU moved their bytes so far; null (the default) where nothing is counted. */
    default NicWriteCounters nicWriteCounters() {
        return null;
    }

    /** Bytes of BAR1 aperture currently mapped for NICs. */
    long bar1MappedBytes();
}
