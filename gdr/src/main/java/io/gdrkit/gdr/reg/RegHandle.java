/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import java.util.ArrayList;
import java.util.List;

/**
 * A user buffer registered with a communicator (NCCL's {@code struct ncclReg}): the page-widened range, how many
 * registrations share it, and the NET MRs made for it. Opaque to callers beyond the accessors; pass it back to
 * {@link CommRegistrationCache#deregister(RegHandle)}.
 */
public final class RegHandle {
    private final long begAddr;
    private final long endAddr;
    private final List<NetConnection> netConnections = new ArrayList<>();
    private final List<Object> netMrs = new ArrayList<>();
    int refs = 1;

    RegHandle(final long begAddr, final long endAddr) {
        this.begAddr = begAddr;
        this.endAddr = endAddr;
    }

    /** The first byte of the first page. */
    public long begAddr() {
        return begAddr;
    }

    /** One past the last byte of the last page. */
    public long endAddr() {
        return endAddr;
    }

    /** The outstanding registrations; 0 once released. */
    public int refs() {
        return refs;
    }

    /** The NET MRs made for this buffer, one per GDR connection. */
    public int netRegistrations() {
        return netMrs.size();
    }

    boolean contains(final long beg, final long end) {
        return begAddr <= beg && endAddr >= end;
    }

    void addNet(final NetConnection connection, final Object mr) {
        netConnections.add(connection);
        netMrs.add(mr);
    }

    /** Deregisters every NET MR, all of them even if one fails; the first failure is rethrown. */
    void releaseNet() {
        RuntimeException failure = null;
        for (int i = netMrs.size() - 1; i >= 0; i--) {
            try {
                netConnections.get(i).nic().deregister(netMrs.get(i));
            } catch (final RuntimeException ex) {
                if (failure == null) {
                    failure = ex;
                } else {
                    failure.addSuppressed(ex);
                }
            }
        }
        netMrs.clear();
        netConnections.clear();
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "RegHandle[0x" + Long.toHexString(begAddr) + "-0x" + Long.toHexString(endAddr) + " refs=" + refs +
            " net=" + netMrs.size() + "]";
    }
}
