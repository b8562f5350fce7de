/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** SRQ attributes (ibv_srq_attr); the mask bits of {@link SharedReceiveQueue#modifySrq} are libibverbs'. */
public final class SrqAttr {
    /** IBV_SRQ_MAX_WR: resize (refused: the software NIC does not resize SRQs). */
    public static final int MAX_WR = 1;
    /** IBV_SRQ_LIMIT: arm the limit. */
    public static final int LIMIT = 1 << 1;

    public int maxWr;
    public int maxSge;
    public int srqLimit;

    public SrqAttr maxWr(final int v) {
        maxWr = v;
        return this;
    }

    public SrqAttr maxSge(final int v) {
        maxSge = v;
        return this;
    }

    public SrqAttr srqLimit(final int v) {
        srqLimit = v;
        return this;
    }

    @Override
    public String toString() {
        return "SrqAttr{max_wr=" + maxWr + ", max_sge=" + maxSge + ", srq_limit=" + srqLimit + '}';
    }
}
