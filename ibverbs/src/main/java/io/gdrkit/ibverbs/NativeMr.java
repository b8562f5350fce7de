/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static io.gdrkit.ibverbs.IbvLayouts.MR;
import static io.gdrkit.ibverbs.IbvLayouts.offset;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import java.lang.foreign.MemorySegment;

/** {@code struct ibv_mr}: keys and range as the kernel returned them. */
final class NativeMr implements MemoryRegion {
    private final NativePd pd;
    private final MemorySegment mr;
    private final MemorySegment segment;
    private final int access;
    private boolean deregistered;
    /* copied at registration: the struct ibv_mr is freed by ibv_dereg_mr, and a caller may still ask afterwards */
    private final long address;
    private final long length;
    private final int lkey;
    private final int rkey;

    NativeMr(final NativePd pd, final MemorySegment mr, final MemorySegment segment, final int access) {
        this.pd = pd;
        this.mr = mr;
        this.segment = segment;
        this.access = access;
        this.address = mr.get(ADDRESS, offset(MR, "addr")).address();
        this.length = mr.get(JAVA_LONG, offset(MR, "length"));
        this.lkey = mr.get(JAVA_INT, offset(MR, "lkey"));
        this.rkey = mr.get(JAVA_INT, offset(MR, "rkey"));
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
        return lkey;
    }

    @Override
    public int rkey() {
        return rkey;
    }

    @Override
    public int access() {
        return access;
    }

    @Override
    public void deregister() {
        if (!deregistered) {
            deregistered = true;
            Native.check("ibv_dereg_mr", Native.call(() -> (int) pd.ctx.lib.deregMr.invokeExact(mr)));
        }
    }
}
