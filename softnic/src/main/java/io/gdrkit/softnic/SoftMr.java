package io.gdrkit.softnic;

import io.gdrkit.core.mem.DmaMemory;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/** A memory region of the software NIC. lkey == rkey: 24-bit table index, 8-bit generation. */
final class SoftMr implements MemoryRegion {
    final SoftPd pd;
    private static final VarHandle ATOMIC_LONG = ValueLayout.JAVA_LONG.varHandle();
    /** Host memory, or null for DMA memory. */
    final MemorySegment segment;
    /** DMA memory (GPU ...), or null for host memory. */
    final DmaMemory dma;
    final long address;
    final long length;
    final int access;
    final int key;
    /**
     * Whether a packet may reference this MR's bytes instead of carrying them (the single-copy path): host memory
     * that any thread may read, since the peer NIC's thread does the copy. Not DMA memory, not a confined arena.
     */
    final boolean referable;
    /** A thread that owns nothing: a segment it may access is accessible from any thread. */
    static final Thread NOBODY = Thread.ofPlatform().unstarted(() -> { });
    /** Run once at deregistration: detaches an imported DMA-BUF; null when there is nothing to release. */
    final Runnable release;
    volatile boolean valid = true;

    SoftMr(final SoftPd pd, final MemorySegment segment, final int access, final int key) {
        this.pd = pd;
        this.segment = segment;
        this.dma = null;
        this.address = segment.address();
        this.length = segment.byteSize();
        this.access = access;
        this.key = key;
        this.release = null;
        this.referable = segment.isAccessibleBy(NOBODY);
    }

    SoftMr(final SoftPd pd, final DmaMemory dma, final int access, final int key, final Runnable release) {
        this.pd = pd;
        this.segment = null;
        this.dma = dma;
        this.address = dma.address();
        this.length = dma.byteSize();
        this.access = access;
        this.key = key;
        this.release = release;
        this.referable = false;
    }

    /** Copies {@code len} bytes at virtual address {@code va} of this MR out to {@code dst} (a NIC read). */
    void copyOut(final long va, final MemorySegment dst, final long dstOffset, final long len) {
        if (segment != null) {
            MemorySegment.copy(segment, va - address, dst, dstOffset, len);
        } else {
            dma.dmaRead(va - address, dst, dstOffset, len);
        }
    }

    /** Copies {@code len} bytes from {@code src} into this MR at virtual address {@code va} (a NIC write). */
    void copyIn(final MemorySegment src, final long srcOffset, final long va, final long len) {
        if (segment != null) {
            MemorySegment.copy(src, srcOffset, segment, va - address, len);
        } else {
            dma.dmaWrite(va - address, src, srcOffset, len);
        }
    }

    /** An 8-byte atomic at {@code va}; returns the original value. */
    long atomic(final long va, final boolean compareAndSwap, final long operand, final long swap) {
        if (segment != null) {
            return compareAndSwap
                ? (long) ATOMIC_LONG.compareAndExchange(segment, va - address, operand, swap)
                : (long) ATOMIC_LONG.getAndAdd(segment, va - address, operand);
        }
        return dma.dmaAtomic(va - address, compareAndSwap, operand, swap);
    }

    @Override
    public DmaMemory dma() {
        return dma;
    }

    /**
     * Is [va, va+len) inside this MR, and is its memory usable from this thread? Overflow-safe. Memory whose
     * arena was closed before deregistration, or a confined arena's memory on another thread, is treated like an
     * invalid key (as rxe treats invalid memory): the requester completes with LOC_PROT_ERR, the responder NAKs
     * with remote access error. Never an exception out of a NIC engine.
     */
    boolean contains(final long va, final long len) {
        return len >= 0 && va >= address && va - address <= length - len
            && (segment == null || segment.scope().isAlive() && (referable
                || segment.isAccessibleBy(Thread.currentThread())));
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long length() {
        return length;
    }

    @Override
    public int lkey() {
        return key;
    }

    @Override
    public int rkey() {
        return key;
    }

    @Override
    public int access() {
        return access;
    }

    @Override
    public void deregister() {
        pd.device().deregisterMr(this);
    }

    @Override
    public String toString() {
        return "MR{addr=0x" + Long.toHexString(address) + ", len=" + length + ", key=0x" + Integer.toHexString(key)
            + '}';
    }
}
