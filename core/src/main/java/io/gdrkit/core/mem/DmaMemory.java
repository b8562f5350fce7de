/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.mem;

import java.lang.foreign.MemorySegment;

/**
 * Memory a NIC reaches by DMA but the CPU does not address directly: GPU memory through a BAR1 mapping, for
 * example. Registering it ({@link ProtectionDomain#registerMr(DmaMemory, int)}) lets remote WRITE/READ/ATOMIC
 * and local SGEs use it like host memory, while every byte moves through these calls, so the memory's own
 * ordering and visibility rules (posted writes, flushes) apply.
 */
public interface DmaMemory {
    /** The address SGEs and remote addresses use for the first byte (a device virtual address for a GPU). */
    long address();

    long byteSize();

    /** A NIC write (posted: it may become visible to the memory's consumers later). */
    void dmaWrite(long offset, MemorySegment src, long srcOffset, long length);

    /**
     * A NIC write whose source the caller holds: the bytes at {@code src} stay unchanged and readable until a
     * {@link #completionFenceStart} made after this call reports done through {@link #completionFenceDone} (or a
     * {@link #completionFence} made after it returns). That is the case for the requester's registered memory
     * referenced by a packet of the same process: RC leaves the source to the NIC until the work request completes,
     * and the responder holds the ACK that completes it until the fence. Not for a packet's buffer in a link (the
     * slot is reused as soon as the packet is handled). A memory that can read registered host memory by DMA (a
     * CUDA GPU's copy engine) may then read the source later, without copying it first. The default: {@link #dmaWrite}.
     */
    default void dmaWriteHeldSource(final long offset, final MemorySegment src, final long srcOffset,
                                    final long length) {
        dmaWrite(offset, src, srcOffset, length);
    }

    /** A NIC read; it is ordered behind earlier writes on the same path. */
    void dmaRead(long offset, MemorySegment dst, long dstOffset, long length);

    /**
     * A NIC read of a request's source (the requester's gather), started without waiting for it: the memory as the
     * application left it when it posted, so it need not wait for NIC writes still in flight, which no completion has
     * reported (a CUDA GPU reads on a stream of its own, beside the writes' copies). Returns a token for
     * {@link #dmaReadAwait}, or 0 when the bytes are in {@code dst} already. The default: {@link #dmaRead}, and 0.
     */
    default long dmaReadSourceStart(final long offset, final MemorySegment dst, final long dstOffset,
                                    final long length) {
        dmaRead(offset, dst, dstOffset, length);
        return 0;
    }

    /** {@link #dmaReadSourceStart} and {@link #dmaReadAwait}: the request's source read, complete when it returns. */
    default void dmaReadSource(final long offset, final MemorySegment dst, final long dstOffset, final long length) {
        dmaReadAwait(dmaReadSourceStart(offset, dst, dstOffset, length));
    }

    /** Waits until the read that {@link #dmaReadSourceStart} returned {@code token} for has landed. */
    default void dmaReadAwait(final long token) {
    }

    /**
     * Called by the NIC before it reports the completion of writes into this memory (an ACK, a receive
     * completion): it gives what the memory's ordering promises at completion, no more.
     */
    void completionFence();

    /**
     * Whether one read of many bytes costs much less than many reads of a few: a GPU behind a copy engine pays a
     * round trip per read, so a NIC reads a work request's span at once and cuts packets from it. False (the
     * default): reading packet by packet is as cheap. A property of the memory, not of the moment: a NIC asks it
     * once when the memory is registered.
     */
    default boolean prefersBulkReads() {
        return false;
    }

    /**
     * A host buffer for the NIC's bulk reads of this memory ({@link #prefersBulkReads}), {@code bytes} long: what a
     * read lands in fastest (pinned host memory for a GPU's copy engine, which then writes it directly instead of
     * through a staging copy). Freed when it becomes unreachable. The default: plain native memory.
     */
    default MemorySegment allocateReadBuffer(final long bytes) {
        return java.lang.foreign.Arena.ofAuto().allocate(bytes, 4096);
    }

    /**
     * What a buffer from {@link #allocateReadBuffer} serves: memories with the same domain may share one (every
     * buffer of one GPU: its pinned memory belongs to the GPU's context, not to a buffer). The default: this
     * memory alone. A NIC that reads several memories in turn keeps one read buffer per domain instead of
     * allocating (and pinning) a new one at every switch.
     */
    default Object readBufferDomain() {
        return this;
    }

    /**
     * {@link #completionFence} split so that the NIC need not wait: starts the fence for every write made so far
     * and returns a token; {@link #completionFenceDone} says, without blocking, when it has completed. The default
     * fences at once.
     */
    default long completionFenceStart() {
        completionFence();
        return 0;
    }

    /** Whether the fence started by the {@link #completionFenceStart} that returned {@code token} is complete. */
    default boolean completionFenceDone(final long token) {
        return true;
    }

    /**
     * The memory's bytes as a segment that a NIC thread of this process may copy from directly, after
     * {@link #readFence}: one copy where {@link #dmaRead} into a packet and a write out of it would take two. Byte
     * 0 of the segment is byte 0 of this memory and it spans {@link #byteSize}. Null (the default) when the CPU cannot
     * address the memory (a real GPU's device memory): every read goes through {@link #dmaRead}.
     */
    default MemorySegment cpuView() {
        return null;
    }

    /**
     * What {@link #dmaRead} does before it reads, without the read: every write posted before this call becomes
     * visible to a read of {@link #cpuView} (a read does not pass posted writes on the same path). Returns false
     * when the memory can no longer be read (its mapping was closed); the caller then reads nothing. The default:
     * nothing to fence.
     */
    default boolean readFence() {
        return true;
    }

    /**
     * An 8-byte RDMA atomic executed by the memory's side of the link.
     *
     * @param compareAndSwap true: CMP_AND_SWP(compare = operand, swap); false: FETCH_AND_ADD(add = operand)
     * @return the original value
     */
    long dmaAtomic(long offset, boolean compareAndSwap, long operand, long swap);

    /** What this memory is, for logs and reports: "GPU 0 (simulated H200) via BAR1", and so on. */
    String describe();

    /**
     * A view of {@code [offset, offset + length)} of this memory whose first byte has the address {@code address}:
     * what an MR over part of a buffer (or a DMA-BUF registered at an iova) reaches. Accesses add the offset and
     * delegate; nothing is copied or allocated per access.
     *
     * @throws IllegalArgumentException when the range is empty or outside this memory
     */
    default DmaMemory window(final long offset, final long length, final long address) {
        return new DmaWindow(this, offset, length, address);
    }
}
