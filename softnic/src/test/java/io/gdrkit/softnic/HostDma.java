/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.mem.DmaMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * DMA memory backed by host memory, for tests: counts the NIC's reads and the read buffers it asks for; optionally
 * prefers bulk reads (as a CUDA GPU behind its copy engine does) within a read-buffer domain.
 */
final class HostDma implements DmaMemory {
    final MemorySegment mem;
    private final boolean bulk;
    private final Object domain;
    int reads;
    int readBuffers;

    /** Plain DMA memory: packet-by-packet reads. */
    HostDma(final MemorySegment mem) {
        this(mem, false, null);
    }

    /** {@code bulk}: prefers bulk reads; {@code domain}: its read-buffer domain (null: itself alone). */
    HostDma(final MemorySegment mem, final boolean bulk, final Object domain) {
        this.mem = mem;
        this.bulk = bulk;
        this.domain = domain;
    }

    @Override
    public long address() {
        return mem.address();
    }

    @Override
    public long byteSize() {
        return mem.byteSize();
    }

    @Override
    public void dmaWrite(final long offset, final MemorySegment src, final long srcOffset, final long length) {
        MemorySegment.copy(src, srcOffset, mem, offset, length);
    }

    @Override
    public void dmaRead(final long offset, final MemorySegment dst, final long dstOffset, final long length) {
        reads++;
        MemorySegment.copy(mem, offset, dst, dstOffset, length);
    }

    @Override
    public void completionFence() {
    }

    @Override
    public boolean prefersBulkReads() {
        return bulk;
    }

    @Override
    public MemorySegment allocateReadBuffer(final long bytes) {
        readBuffers++;
        return Arena.ofAuto().allocate(bytes, 4096);
    }

    @Override
    public Object readBufferDomain() {
        return domain != null ? domain : this;
    }

    @Override
    public long dmaAtomic(final long offset, final boolean compareAndSwap, final long operand, final long swap) {
        throw new UnsupportedOperationException();
    }

    @Override
    public String describe() {
        return "host-backed DMA memory (test)";
    }
}
