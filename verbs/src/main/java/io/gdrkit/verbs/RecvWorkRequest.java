/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** A receive work request (ibv_recv_wr); mutable and reusable, chained with {@link #next}. */
public final class RecvWorkRequest {
    public long wrId;
    public RecvWorkRequest next;
    private final Sge[] sgList;
    private int numSge;

    public RecvWorkRequest() {
        this(4);
    }

    public RecvWorkRequest(final int maxSge) {
        sgList = new Sge[maxSge];
        for (int i = 0; i < maxSge; i++) {
            sgList[i] = new Sge();
        }
    }

    public Sge sge(final int index) {
        return sgList[index];
    }

    public int numSge() {
        return numSge;
    }

    public RecvWorkRequest numSge(final int numSge) {
        if (numSge < 0 || numSge > sgList.length) {
            throw new IllegalArgumentException("numSge " + numSge + " outside 0.." + sgList.length);
        }
        this.numSge = numSge;
        return this;
    }

    public RecvWorkRequest sge(final MemoryRegion mr, final long offset, final int length) {
        sgList[0].set(mr, offset, length);
        numSge = 1;
        return this;
    }

    public RecvWorkRequest sge(final long addr, final int length, final int lkey) {
        sgList[0].set(addr, length, lkey);
        numSge = 1;
        return this;
    }

    public RecvWorkRequest wrId(final long wrId) {
        this.wrId = wrId;
        return this;
    }

    public RecvWorkRequest next(final RecvWorkRequest next) {
        this.next = next;
        return this;
    }
}
