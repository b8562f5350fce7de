/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import java.lang.foreign.MemorySegment;

/** A protection domain of the software NIC. */
final class SoftPd implements ProtectionDomain {
    private final SoftVerbsContext context;

    SoftPd(final SoftVerbsContext context) {
        this.context = context;
    }

    SoftDevice device() {
        return context.device();
    }

    /** The context that allocated this PD: its QPs' and SRQs' async events go there. */
    SoftVerbsContext owner() {
        return context;
    }

    @Override
    public VerbsContext context() {
        return context;
    }

    @Override
    public MemoryRegion registerMr(final MemorySegment segment, final int accessFlags) {
        return context.device().registerMr(this, segment, accessFlags);
    }

    @Override
    public MemoryRegion registerMr(final io.gdrkit.core.mem.DmaMemory memory, final int accessFlags) {
        return context.device().registerMr(this, memory, accessFlags);
    }

    @Override
    public MemoryRegion registerDmaBufMr(final long offset, final long length, final long iova, final int fd,
                                         final int accessFlags) {
        return context.device().registerDmaBufMr(this, offset, length, iova, fd, accessFlags);
    }

    @Override
    public QueuePair createQp(final QpInitAttr attr) {
        return context.device().createQp(this, attr);
    }

    @Override
    public io.gdrkit.verbs.MemoryWindow allocMw(final int type) {
        return context.device().allocMw(this, type);
    }

    @Override
    public io.gdrkit.verbs.AddressHandle createAh(final io.gdrkit.verbs.AhAttr attr) {
        return SoftAh.create(this, attr);
    }

    @Override
    public io.gdrkit.verbs.SharedReceiveQueue createSrq(final io.gdrkit.verbs.SrqInitAttr attr) {
        return context.device().createSrq(this, attr);
    }

    @Override
    public void close() {
        // MRs and QPs hold their own references; like ibv_dealloc_pd on a busy PD we refuse if anything lives
        context.device().checkPdUnused(this);
    }
}
