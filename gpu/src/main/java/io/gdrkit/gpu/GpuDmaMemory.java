/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

import io.gdrkit.core.mem.DmaMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * GPU memory as a NIC sees it (GPUDirect RDMA): a buffer mapped into the BAR1 aperture, written with posted
 * writes and read with reads that flush them, through the GPU's {@link GpuDmaTarget}. Register it with
 * {@code pd.registerMr(new GpuDmaMemory(gpu, buffer), access)}; closing it unmaps the aperture. Mapping sets
 * {@code CU_POINTER_ATTRIBUTE_SYNC_MEMOPS} on the buffer.
 *
 * <p>RDMA atomics on GPU memory are executed as a read and a posted write of 8 bytes by the NIC, serialized with
 * the NIC's other accesses but not atomic with respect to kernels writing the same word at the same time (PCIe
 * atomics are not modelled).
 */
public final class GpuDmaMemory implements DmaMemory, AutoCloseable {
    private final GpuDevice gpu;
    private final DeviceBuffer buffer;
    private final NicMapping mapping;
    private final MemorySegment word = Arena.ofAuto().allocate(8, 8);

    /** @throws Bar1ExhaustedException when the BAR1 aperture cannot hold the buffer */
    public GpuDmaMemory(final GpuDevice gpu, final DeviceBuffer buffer) {
        this.gpu = gpu;
        this.buffer = buffer;
        // as NCCL does for buffers it registers with a NIC: synchronous memory operations on the buffer complete
        // before returning, so a NIC reading it right after a cuMemcpy sees the copy (a caller may clear it after)
        gpu.setSyncMemops(buffer, true);
        this.mapping = gpu.dmaTarget().mapForNic(buffer);
    }

    public DeviceBuffer buffer() {
        return buffer;
    }

    @Override
    public long address() {
        return buffer.address();
    }

    @Override
    public long byteSize() {
        return buffer.size();
    }

    @Override
    public void dmaWrite(final long offset, final MemorySegment src, final long srcOffset, final long length) {
        mapping.write(offset, src, srcOffset, length);
    }

    @Override
    public void dmaWriteHeldSource(final long offset, final MemorySegment src, final long srcOffset,
                                   final long length) {
        gpu.dmaTarget().nicWriteHeldSource(mapping, offset, src, srcOffset, length);
    }

    @Override
    public void dmaRead(final long offset, final MemorySegment dst, final long dstOffset, final long length) {
        mapping.read(offset, dst, dstOffset, length);
    }

    @Override
    public long dmaReadSourceStart(final long offset, final MemorySegment dst, final long dstOffset,
                                   final long length) {
        return mapping.readSourceStart(offset, dst, dstOffset, length);
    }

    @Override
    public void dmaReadAwait(final long token) {
        gpu.dmaTarget().nicReadAwait(token);
    }

    /**
     * Where the CPU can address the GPU's device memory (a simulated GPU): the buffer itself, read after
     * {@link #readFence}; null for a real GPU.
     */
    @Override
    public MemorySegment cpuView() {
        return gpu.dmaTarget().nicCpuView(mapping);
    }

    @Override
    public boolean readFence() {
        return gpu.dmaTarget().nicReadFence(mapping);
    }

    @Override
    public void completionFence() {
        gpu.dmaTarget().nicCompletionFence();
    }

    @Override
    public boolean prefersBulkReads() {
        return gpu.dmaTarget().nicPrefersBulkReads();
    }

    @Override
    public MemorySegment allocateReadBuffer(final long bytes) {
        return gpu.dmaTarget().nicReadBuffer(bytes);
    }

    /** Every buffer of this GPU: the read buffer is the GPU's pinned memory, good for any of its buffers. */
    @Override
    public Object readBufferDomain() {
        return gpu.dmaTarget();
    }

    @Override
    public long completionFenceStart() {
        return gpu.dmaTarget().nicFenceStart();
    }

    @Override
    public boolean completionFenceDone(final long token) {
        return gpu.dmaTarget().nicFenceDone(token);
    }

    @Override
    public long dmaAtomic(final long offset, final boolean compareAndSwap, final long operand, final long swap) {
        mapping.read(offset, word, 0, 8);
        final long original = word.get(ValueLayout.JAVA_LONG, 0);
        final long updated = compareAndSwap ? (original == operand ? swap : original) : original + operand;
        if (updated != original) {
            word.set(ValueLayout.JAVA_LONG, 0, updated);
            mapping.write(offset, word, 0, 8);
            // the atomic's response carries no completion fence, and a posted write may wait for one (a CUDA
            // GPU's staged copy): land it now, as a NIC's atomic lands before its response
            gpu.dmaTarget().nicCompletionFence();
        }
        return original;
    }

    @Override
    public String describe() {
        return "GPU " + gpu.ordinal() + " device memory at 0x" + Long.toHexString(buffer.address()) + " ("
            + buffer.size() + " bytes, " + (gpu.isSimulated() ? "simulated GPU, " : "")
            + "mapped through BAR1 for the NIC)";
    }

    @Override
    public void close() {
        mapping.close();
    }
}
