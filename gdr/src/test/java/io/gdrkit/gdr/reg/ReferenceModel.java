/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The registration rules written as plainly as possible, for property tests: an unsorted list in insertion
 * order, a linear scan for containing entries, and the capacity arithmetic spelled out. Nothing here shares code
 * with the caches under test.
 */
final class ReferenceModel {
    static final class Entry {
        final long beg;
        final long end;
        final long seq;
        Object handle;
        int refs = 1;

        Entry(final long beg, final long end, final long seq) {
            this.beg = beg;
            this.end = end;
            this.seq = seq;
        }
    }

    private final long pageSize;
    private final boolean releaseSlotsWhenEmpty;
    final List<Entry> entries = new ArrayList<>();
    private long nextSeq;
    int capacity;

    ReferenceModel(final long pageSize, final boolean releaseSlotsWhenEmpty) {
        this.pageSize = pageSize;
        this.releaseSlotsWhenEmpty = releaseSlotsWhenEmpty;
    }

    long alignDown(final long addr) {
        return addr - addr % pageSize;
    }

    long alignUp(final long addr) {
        return (addr + pageSize - 1) / pageSize * pageSize;
    }

    /**
     * The entry a lookup of {@code [beg, end)} hits, or null. Among several containing entries the cache walks in
     * address order and the earlier registration comes first among equal addresses.
     */
    Entry hit(final long beg, final long end) {
        Entry best = null;
        for (final Entry e : entries) {
            if (e.beg <= beg && e.end >= end &&
                (best == null || e.beg < best.beg || (e.beg == best.beg && e.seq < best.seq))) {
                best = e;
            }
        }
        return best;
    }

    Entry add(final long beg, final long end) {
        if (entries.size() == capacity) {
            capacity = capacity == 0 ? 32 : capacity * 2;
        }
        final Entry e = new Entry(beg, end, nextSeq++);
        entries.add(e);
        return e;
    }

    Entry find(final Object handle) {
        for (final Entry e : entries) {
            if (e.handle == handle) {
                return e;
            }
        }
        return null;
    }

    /** Drops one reference; true when that removed the entry. */
    boolean release(final Entry e) {
        if (--e.refs > 0) {
            return false;
        }
        entries.remove(e);
        if (entries.isEmpty() && releaseSlotsWhenEmpty) {
            capacity = 0;
        }
        return true;
    }

    /** The order the cache must show: by address, then registration order. */
    List<Entry> sorted() {
        final List<Entry> out = new ArrayList<>(entries);
        out.sort(Comparator.<Entry>comparingLong(e -> e.beg).thenComparingLong(e -> e.seq));
        return out;
    }
}
