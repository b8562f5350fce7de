/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import java.lang.foreign.MemorySegment;

/**
 * A scatter/gather element (ibv_sge): a virtual address inside a registered MR, a length and the MR's lkey. For an
 * inline send the memory need not be registered and the lkey is not checked (as libibverbs says): give the bytes
 * as a segment with {@link #set(MemorySegment, long, int)}.
 */
public final class Sge {
    public long addr;
    public int length;
    public int lkey;
    /**
     * Unregistered memory holding the bytes, for {@link SendFlags#INLINE} sends only: the bytes are read from here
     * at post time (bounds-checked) instead of through an MR; null otherwise.
     */
    public MemorySegment memory;

    public Sge set(final long addr, final int length, final int lkey) {
        this.addr = addr;
        this.length = length;
        this.lkey = lkey;
        this.memory = null;
        return this;
    }

    /**
     * Points at {@code length} bytes at {@code offset} inside unregistered native memory, lkey 0: valid only in an
     * inline send, which copies the bytes when it is posted.
     */
    public Sge set(final MemorySegment memory, final long offset, final int length) {
        set(memory.address() + offset, length, 0);
        this.memory = memory;
        return this;
    }

    /** Points at {@code length} bytes at {@code offset} inside {@code mr}. */
    public Sge set(final MemoryRegion mr, final long offset, final int length) {
        return set(mr.address() + offset, length, mr.lkey());
    }

    @Override
    public String toString() {
        return "Sge{addr=0x" + Long.toHexString(addr) + ", length=" + length + ", lkey=0x" + Integer.toHexString(lkey) + '}';
    }
}
