/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Reads DMA memory (a GPU through its BAR1 stand-in) a span at a time for an engine that sends it a packet at a
 * time: one {@code dmaRead} of up to {@value #BYTES} bytes of the current SGE or READ response, then each packet
 * is copied out of that. A read of GPU memory costs a copy-engine round trip; paying it per 4 KiB packet capped
 * the real-GPU path at a fraction of a GB/s.
 *
 * <p>Snapshot semantics: the bytes of one work request (or one READ response) are read when its first packet,
 * or the first packet past the snapshot, is built. The verbs contract allows that: a buffer belongs to the NIC from
 * the post to the completion. A new work request ({@code key}) or the first packet of one ({@code fresh}) always
 * reads again, so nothing older than the request is ever served.
 *
 * <p>One per QP and engine (single writer); the buffer is allocated on first use, by QPs that read DMA memory only.
 */
final class DmaReadAhead {
    /** 1 MiB: a 1 MiB message is one read; larger ones take one read per MiB. */
    static final int BYTES = 1 << 20;

    private MemorySegment buffer;
    /** The {@link io.gdrkit.core.mem.DmaMemory#readBufferDomain} {@link #buffer} serves. */
    private Object bufferDomain;
    private SoftMr mr;
    private long key = Long.MIN_VALUE;
    private long base;
    private long filled;

    /**
     * The one NIC read of a packet's bytes (a requester's gather, a READ response): memory that prefers bulk reads
     * (a CUDA GPU behind its copy engine, {@link SoftMr#bulkReads}) through this read-ahead, up to {@code spanEnd}
     * at once; any other memory straight from the MR.
     */
    void read(final SoftMr mr, final long key, final boolean fresh, final long va, final long spanEnd,
              final MemorySegment dst, final long dstOffset, final int len) {
        if (mr.bulkReads) {
            copyOut(mr, key, fresh, va, spanEnd, dst, dstOffset, len);
        } else {
            mr.copyOut(va, dst, dstOffset, len);
        }
    }

    /**
     * Copies {@code len} bytes at {@code va} of {@code mr} (DMA memory) to {@code dst}, reading ahead up to
     * {@code spanEnd} (the end of the SGE or the response, exclusive) on a miss.
     */
    void copyOut(final SoftMr mr, final long key, final boolean fresh, final long va, final long spanEnd,
                 final MemorySegment dst, final long dstOffset, final int len) {
        if (fresh || mr != this.mr || key != this.key || va < base || va + len > base + filled) {
            final long ahead = Math.min(BYTES, spanEnd - va);
            if (ahead < len) {
                mr.copyOut(va, dst, dstOffset, len); // cannot happen for a packet; stay correct anyway
                return;
            }
            final Object domain = mr.dma != null ? mr.dma.readBufferDomain() : null;
            if (buffer == null || bufferDomain != domain) {
                // from the memory read: pinned for a CUDA GPU, so its copy engine reads straight into it. Asked again
                // only when a memory of another domain is read (another GPU: its pinned memory lives and dies with
                // that GPU's context); a collective that reads its input and output buffers in turn keeps one
                buffer = mr.dma != null ? mr.dma.allocateReadBuffer(BYTES) : Arena.ofAuto().allocate(BYTES, 4096);
                bufferDomain = domain;
            }
            this.mr = null; // a failed read leaves nothing that looks valid
            mr.copyOut(va, buffer, 0, ahead);
            this.mr = mr;
            this.key = key;
            this.base = va;
            this.filled = ahead;
        }
        MemorySegment.copy(buffer, va - base, dst, dstOffset, len);
    }
}
