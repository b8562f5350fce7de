/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The per-NIC memory region cache of NCCL's IB transport ({@code ncclIbMrCache}): registering a range that an
 * existing MR already covers returns that MR instead of pinning the pages again.
 *
 * <ul>
 *   <li>Ranges are widened to whole pages ({@link #DEFAULT_PAGE_SIZE} unless given) before anything else.</li>
 *   <li>Entries are kept sorted by start address. A lookup walks them in order: the first entry that
 *       <em>contains</em> the widened range gets {@code refs++} and is returned; reaching an entry that starts
 *       after the range (or the end) registers the range anew and inserts it there. A partial overlap is
 *       therefore a new registration, never an extension of an old one.</li>
 *   <li>The slot array starts at {@link #INITIAL_CAPACITY} entries and doubles when full; it is released when
 *       the cache becomes empty, as NCCL does.</li>
 *   <li>{@link #deregister(Object)} decrements the count; at zero the entry is removed and the MR deregistered.
 *       An MR this cache does not hold is an error.</li>
 * </ul>
 *
 * <p>One deliberate difference from NCCL: NCCL removes an entry by moving the <em>last</em> slot into the hole,
 * which breaks the address order its own lookup relies on (the walk stops at the first entry starting after the
 * range, so a containing entry moved behind it is missed and the range is registered twice). Here the tail is
 * shifted down instead, so the order holds after every removal.
 *
 * <p>The cache is also a {@link Registrar}, so it can stand in front of a NIC wherever one is expected. Methods
 * are synchronized: like NCCL's per-device mutex, several connections (proxy threads) share one NIC's cache.
 */
public final class NetMrCache implements Registrar {
    /** The page size used when none is given. */
    public static final long DEFAULT_PAGE_SIZE = 4096;
    /** Slots allocated on the first insertion; the array doubles from there. */
    public static final int INITIAL_CAPACITY = 32;

    private static final Slot[] NO_SLOTS = new Slot[0];

    private final Registrar nic;
    private final long pageSize;
    private Slot[] slots = NO_SLOTS;
    private int population;

    /** A cache in front of {@code nic} with the default page size. */
    public NetMrCache(final Registrar nic) {
        this(nic, DEFAULT_PAGE_SIZE);
    }

    /**
     * A cache in front of {@code nic}.
     *
     * @param pageSize a positive power of two
     */
    public NetMrCache(final Registrar nic, final long pageSize) {
        this.nic = Objects.requireNonNull(nic, "nic");
        this.pageSize = PageRange.checkPageSize(pageSize);
    }

    /**
     * Returns an MR covering {@code [addr, addr + len)} widened to pages: a cached one that contains it (its count
     * incremented), or a new registration.
     */
    @Override
    public synchronized Object register(final long addr, final long len) {
        final PageRange range = PageRange.of(addr, len, pageSize);
        for (int slot = 0; ; slot++) {
            if (slot == population || range.addr() < slots[slot].addr) {
                return insert(slot, range);
            }
            final Slot s = slots[slot];
            // Contained: starts at or after the entry and ends at or before it (in pages, so no overflow).
            if (range.addr() >= s.addr && (range.addr() - s.addr) / pageSize + range.pages() <= s.pages) {
                s.refs++;
                return s.mr;
            }
        }
    }

    private Object insert(final int slot, final PageRange range) {
        // Register before touching the array: a failing NIC leaves the cache exactly as it was.
        final Object mr = nic.register(range.addr(), range.pages() * pageSize);
        if (mr == null) {
            throw new IllegalStateException("NIC returned a null MR for addr=0x" + Long.toHexString(range.addr()) +
                " pages=" + range.pages());
        }
        if (population == slots.length) {
            final Slot[] grown = new Slot[slots.length == 0 ? INITIAL_CAPACITY : slots.length * 2];
            System.arraycopy(slots, 0, grown, 0, population);
            slots = grown;
        }
        System.arraycopy(slots, slot, slots, slot + 1, population - slot);
        slots[slot] = new Slot(range.addr(), range.pages(), mr);
        population++;
        return mr;
    }

    /**
     * Releases one reference to {@code mr}; the last one removes the entry and deregisters the MR.
     *
     * @throws IllegalArgumentException if this cache does not hold {@code mr}
     */
    @Override
    public synchronized void deregister(final Object mr) {
        final int slot = indexOf(mr);
        if (slot < 0) {
            throw new IllegalArgumentException("unknown MR handle " + mr + ": not in this cache of " + population +
                " entries (already deregistered, or registered elsewhere)");
        }
        final Slot s = slots[slot];
        if (--s.refs > 0) {
            return;
        }
        // Shift the tail down rather than moving the last slot into the hole (NCCL's way): the lookup in
        // register() stops at the first entry starting after the range, so it needs the order kept.
        System.arraycopy(slots, slot + 1, slots, slot, population - slot - 1);
        slots[--population] = null;
        if (population == 0) {
            slots = NO_SLOTS;
        }
        nic.deregister(s.mr);
    }

    private int indexOf(final Object mr) {
        for (int i = 0; i < population; i++) {
            if (slots[i].mr == mr) {
                return i;
            }
        }
        return -1;
    }

    /** The page size ranges are widened to. */
    public long pageSize() {
        return pageSize;
    }

    /** The number of cached MRs. */
    public synchronized int population() {
        return population;
    }

    /** The number of slots allocated: 0 when empty, then 32, 64, 128 ... */
    public synchronized int capacity() {
        return slots.length;
    }

    /** The reference count of {@code mr}, or 0 when this cache does not hold it. */
    public synchronized int refs(final Object mr) {
        final int slot = indexOf(mr);
        return slot < 0 ? 0 : slots[slot].refs;
    }

    /** A snapshot of the entries in slot order (sorted by address). */
    public synchronized List<Entry> entries() {
        final List<Entry> out = new ArrayList<>(population);
        for (int i = 0; i < population; i++) {
            final Slot s = slots[i];
            out.add(new Entry(s.addr, s.pages, s.refs, s.mr));
        }
        return out;
    }

    /**
     * One cached MR, as a snapshot.
     *
     * @param addr  the first byte of the first page
     * @param pages the pages covered
     * @param refs  the outstanding registrations
     * @param mr    the NIC's handle
     */
    public record Entry(long addr, long pages, int refs, Object mr) {
    }

    private static final class Slot {
        final long addr;
        final long pages;
        final Object mr;
        int refs = 1;

        Slot(final long addr, final long pages, final Object mr) {
            this.addr = addr;
            this.pages = pages;
            this.mr = mr;
        }
    }
}
