/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.mem;

import java.lang.foreign.MemorySegment;

/** A range of a {@link DmaMemory} at an address of its own; see {@link DmaMemory#window}. */
final class DmaWindow implements DmaMemory {
    private final DmaMemory memory;
    private final long offset;
    private final long length;
    private final long address;

    DmaWindow(final DmaMemory memory, final long offset, final long length, final long address) {
        if (offset < 0 || length <= 0 || offset > memory.byteSize() - length) {
            throw new IllegalArgumentException("window [" + offset + ", " + offset + " + " + length + ") is empty or "
                + "outside " + memory.byteSize() + " bytes of " + memory.describe());
        }
        this.memory = memory;
        this.offset = offset;
        this.length = length;
        this.address = address;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long byteSize() {
        return length;
    }

    @Override
    public void dmaWrite(final long off, final MemorySegment src, final long srcOffset, final long len) {
        memory.dmaWrite(offset + off, src, srcOffset, len);
    }

    @Override
    public void dmaWriteHeldSource(final long off, final MemorySegment src, final long srcOffset, final long len) {
        memory.dmaWriteHeldSource(offset + off, src, srcOffset, len);
    }

    @Override
    public void dmaRead(final long off, final MemorySegment dst, final long dstOffset, final long len) {
        memory.dmaRead(offset + off, dst, dstOffset, len);
    }

    @Override
    public void completionFence() {
        memory.completionFence();
    }

    @Override
    public boolean prefersBulkReads() {
        return memory.prefersBulkReads();
    }

    @Override
    public MemorySegment allocateReadBuffer(final long bytes) {
        return memory.allocateReadBuffer(bytes);
    }

    @Override
    public Object readBufferDomain() {
        return memory.readBufferDomain();
    }

    @Override
    public long completionFenceStart() {
        return memory.completionFenceStart();
    }

    @Override
    public boolean completionFenceDone(final long token) {
        return memory.completionFenceDone(token);
    }

    @Override
    public MemorySegment cpuView() {
        final MemorySegment whole = memory.cpuView();
        return whole == null ? null : whole.asSlice(offset, length);
    }

    @Override
    public boolean readFence() {
        return memory.readFence();
    }

    @Override
    public long dmaAtomic(final long off, final boolean compareAndSwap, final long operand, final long swap) {
        return memory.dmaAtomic(offset + off, compareAndSwap, operand, swap);
    }

    @Override
    public String describe() {
        return "bytes [" + offset + ", " + (offset + length) + ") at 0x" + Long.toHexString(address) + " of "
            + memory.describe();
    }
}
