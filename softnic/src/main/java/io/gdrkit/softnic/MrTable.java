/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.VerbsException;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Key to MR. A key is (index << 8) | generation; a freed index comes back with the next generation, so a stale
 * key never matches a new MR. Readers (the NIC, the poster copying inline data) look up without locks.
 */
final class MrTable {
    private final AtomicReferenceArray<SoftMr> slots;
    private final byte[] generation;
    private int nextFree = 1;
    private int live;

    MrTable(final int capacity) {
        slots = new AtomicReferenceArray<>(capacity);
        generation = new byte[capacity];
    }

    /** Allocates a key; the caller stores the MR with {@link #publish}. Holds the device duty. */
    int allocateKey() {
        final int cap = slots.length();
        for (int n = 0; n < cap; n++) {
            final int i = (nextFree + n) % cap;
            if (i != 0 && slots.get(i) == null) {
                nextFree = i + 1;
                generation[i]++;
                return (i << 8) | (generation[i] & 0xFF);
            }
        }
        throw new VerbsException(Errno.ENOMEM, "MR table full (" + live + " registered, max " + (cap - 1) + ")");
    }

    void publish(final SoftMr mr) {
        slots.set(mr.key >>> 8, mr);
        live++;
        changes++;
    }

    void remove(final SoftMr mr) {
        if (slots.compareAndSet(mr.key >>> 8, mr, null)) {
            live--;
        }
        changes++;
    }

    /**
     * Counts every change of the table (an entry published or removed: registration, deregistration, a window bound
     * or invalidated). Changed under the NIC's duty; a payload read straight into memory over several duty cycles
     * checks it before each read, so no byte lands in memory whose key went meanwhile.
     */
    long changes() {
        return changes;
    }

    private long changes;

    /**
     * A key's index is given up after keys of other generations were handed out on it (a memory window rebinds
     * with new keys): the next allocation of the index continues after {@code key}, so no old rkey opens it.
     */
    void retire(final int key) {
        final int i = key >>> 8;
        if (i > 0 && i < generation.length) {
            generation[i] = (byte) key;
        }
    }

    /** @return the live MR with exactly this key, or null. */
    SoftMr lookup(final int key) {
        final int index = key >>> 8;
        if (index == 0 || index >= slots.length()) {
            return null;
        }
        final SoftMr mr = slots.get(index);
        return mr != null && mr.key == key ? mr : null;
    }

    int live() {
        return live;
    }
}
