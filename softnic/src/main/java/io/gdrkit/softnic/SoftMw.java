/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.MemoryWindow;
import io.gdrkit.verbs.ProtectionDomain;

/**
 * A memory window. Its rkey indexes the device's key table like an MR's: unbound (or invalidated), the slot holds
 * an entry granting nothing; bound, an entry covering the window's range of the MR with the bind's access (and, for
 * type 2, the QP it is bound through), so the responder checks windows exactly as it checks MRs.
 */
final class SoftMw implements MemoryWindow {
    final SoftPd pd;
    final int type;
    /** The rkey the application sees (a type 1 bind changes it when posted, as libibverbs does). */
    volatile int rkey;
    /** The key of the slot's current entry: the NIC's view, written under the device's duty. */
    volatile int entryKey;
    /** The entry granting access while bound, else null; written under duty. */
    volatile SoftMr bound;
    volatile boolean closed;

    SoftMw(final SoftPd pd, final int type, final int rkey) {
        this.pd = pd;
        this.type = type;
        this.rkey = rkey;
    }

    @Override
    public int type() {
        return type;
    }

    @Override
    public int rkey() {
        return rkey;
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public void close() {
        pd.device().deallocMw(this);
    }

    @Override
    public String toString() {
        return "MW type " + type + " rkey 0x" + Integer.toHexString(rkey) + (bound != null ? " bound" : "");
    }
}
