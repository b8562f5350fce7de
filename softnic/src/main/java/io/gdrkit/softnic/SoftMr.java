/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
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
    /**
     * DMA memory the CPU can address ({@link DmaMemory#cpuView}, a simulated GPU's), or null: a packet of this
     * process may reference it too, and the peer copies from this view after {@link DmaMemory#readFence}, the
     * ordering half of a NIC read. Never across processes: a reference there names a host address.
     */
    final MemorySegment dmaView;
    /**
     * {@link DmaMemory#prefersBulkReads()}, asked once here rather than per packet (an interface call on the hot
     * path): read a work request's span at once and cut packets from it. False for host memory.
     */
    final boolean bulkReads;
    /** A thread that owns nothing: a segment it may access is accessible from any thread. */
    static final Thread NOBODY = Thread.ofPlatform().unstarted(() -> { });
    /** Run once at deregistration: detaches an imported DMA-BUF; null when there is nothing to release. */
    final Runnable release;
    volatile boolean valid = true;
    /**
     * A requester's {@link DmaSourceRing}: a responder that places from it holds every ACK covering such a packet
     * until its completion fence (the ring is reused once those PSNs are acknowledged, mid-message too). Set before
     * the MR is published.
     */
    boolean nicRing;
    /**
     * The registration that replaced this one (ibv_rereg_mr), or null. The NIC only ever sees table entries, which
     * never change; the application keeps the object it registered first, and its accessors follow this link to
     * the current registration.
     */
    private volatile SoftMr successor;

    /**
     * For a memory window's table entry: the QP a type 2 window is bound through (remote access only through it),
     * null for MRs and type 1 windows.
     */
    final SoftQp boundQp;
    /** For a memory window's table entry: the MR it is bound to (null for MRs and unbound windows). */
    final SoftMr parent;
    /** A memory window's entry: an rkey only, never an lkey. */
    final boolean window;

    SoftMr(final SoftPd pd, final MemorySegment segment, final int access, final int key) {
        this(pd, segment, access, key, null, null, false, null);
    }

    /** Host memory with what unpins it at deregistration ({@link io.gdrkit.core.mem.HostPinner}), or null. */
    SoftMr(final SoftPd pd, final MemorySegment segment, final int access, final int key, final Runnable release) {
        this(pd, segment, access, key, null, null, false, release);
    }

    /** A memory window's entry over host memory: {@code segment} is the window's slice of the MR's. */
    SoftMr(final SoftPd pd, final MemorySegment segment, final int access, final int key, final SoftQp boundQp,
           final SoftMr parent, final boolean window) {
        this(pd, segment, access, key, boundQp, parent, window, null);
    }

    private SoftMr(final SoftPd pd, final MemorySegment segment, final int access, final int key,
                   final SoftQp boundQp, final SoftMr parent, final boolean window, final Runnable release) {
        this.boundQp = boundQp;
        this.parent = parent;
        this.window = window;
        this.pd = pd;
        this.segment = segment;
        this.dma = null;
        this.address = segment.address();
        this.length = segment.byteSize();
        this.access = access;
        this.key = key;
        this.release = release;
        this.referable = segment.isAccessibleBy(NOBODY);
        this.dmaView = null;
        this.bulkReads = false;
    }

    SoftMr(final SoftPd pd, final DmaMemory dma, final int access, final int key, final Runnable release) {
        this(pd, dma, access, key, release, null, null);
    }

    /** A memory window's entry over DMA memory (or an MR's, with null window fields). */
    SoftMr(final SoftPd pd, final DmaMemory dma, final int access, final int key, final Runnable release,
           final SoftQp boundQp, final SoftMr parent) {
        this.boundQp = boundQp;
        this.parent = parent;
        this.window = parent != null;
        this.pd = pd;
        this.segment = null;
        this.dma = dma;
        this.address = dma.address();
        this.length = dma.byteSize();
        this.access = access;
        this.key = key;
        this.release = release;
        this.referable = false;
        final MemorySegment view = dma.cpuView();
        this.dmaView = view != null && view.byteSize() == length && view.isAccessibleBy(NOBODY) ? view : null;
        this.bulkReads = dma.prefersBulkReads();
    }

    /** Copies {@code len} bytes at virtual address {@code va} of this MR out to {@code dst} (a NIC read). */
    void copyOut(final long va, final MemorySegment dst, final long dstOffset, final long len) {
        if (segment != null) {
            MemorySegment.copy(segment, va - address, dst, dstOffset, len);
        } else {
            dma.dmaRead(va - address, dst, dstOffset, len);
        }
    }

    /**
     * {@link #copyOut} of a request's source ({@link DmaMemory#dmaReadSource}): DMA memory need not order it behind
     * the NIC's writes still in flight.
     */
    void copyOutSource(final long va, final MemorySegment dst, final long dstOffset, final long len) {
        if (segment != null) {
            MemorySegment.copy(segment, va - address, dst, dstOffset, len);
        } else {
            dma.dmaReadSource(va - address, dst, dstOffset, len);
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

    /**
     * {@link #copyIn} from memory the caller holds unchanged until this MR's next completion fence is done (the
     * sender's registered memory, referenced by a packet: see {@link DmaMemory#dmaWriteHeldSource}); DMA memory may
     * read it later instead of copying it now.
     */
    void copyInHeldSource(final MemorySegment src, final long srcOffset, final long va, final long len) {
        if (segment != null) {
            MemorySegment.copy(src, srcOffset, segment, va - address, len);
        } else {
            dma.dmaWriteHeldSource(va - address, src, srcOffset, len);
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

    /** ATOMIC_WRITE: the 8 bytes (native order, as they came) stored in one piece at the aligned {@code va}. */
    void atomicWrite(final long va, final long value) {
        if (segment != null) {
            ATOMIC_LONG.setVolatile(segment, va - address, value);
            return;
        }
        long seen = dma.dmaAtomic(va - address, false, 0, 0); // fetch-add 0: the current value
        long prev;
        while ((prev = dma.dmaAtomic(va - address, true, seen, value)) != seen) {
            seen = prev;
        }
    }

    @Override
    public DmaMemory dma() {
        return current().dma;
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
        return current().pd;
    }

    @Override
    public MemorySegment segment() {
        return current().segment;
    }

    @Override
    public long address() {
        return current().address;
    }

    @Override
    public long length() {
        return current().length;
    }

    @Override
    public int lkey() {
        return current().key;
    }

    @Override
    public int rkey() {
        return current().key;
    }

    @Override
    public int access() {
        return current().access;
    }

    /** The registration in force: this one, or the last that replaced it. */
    SoftMr current() {
        SoftMr m = this;
        while (m.successor != null) {
            m = m.successor;
        }
        return m;
    }

    /** Under the device's duty: {@code next} replaces this registration. */
    void replacedBy(final SoftMr next) {
        successor = next;
    }

    @Override
    public void reregMr(final int flags, final ProtectionDomain pd, final MemorySegment segment, final int access) {
        this.pd.device().reregMr(this, flags, pd, segment, access);
    }

    @Override
    public void deregister() {
        final SoftMr cur = current();
        cur.pd.device().deregisterMr(cur);
    }

    @Override
    public String toString() {
        final SoftMr c = current();
        return "MR{addr=0x" + Long.toHexString(c.address) + ", len=" + c.length + ", key=0x" + Integer.toHexString(c.key)
            + '}';
    }
}
