/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** SRQ creation attributes (ibv_srq_init_attr): the queue's size and the limit armed at creation (0: none). */
public final class SrqInitAttr {
    public final SrqAttr attr = new SrqAttr().maxWr(128).maxSge(4);

    public SrqInitAttr maxWr(final int v) {
        attr.maxWr = v;
        return this;
    }

    public SrqInitAttr maxSge(final int v) {
        attr.maxSge = v;
        return this;
    }

    public SrqInitAttr srqLimit(final int v) {
        attr.srqLimit = v;
        return this;
    }
}
