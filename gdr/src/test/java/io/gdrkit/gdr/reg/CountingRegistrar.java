/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import java.util.IdentityHashMap;
import java.util.Map;

/** A fake NIC that hands out distinct MR objects and counts calls; it rejects double or foreign deregistration. */
final class CountingRegistrar implements Registrar {
    record Mr(int id, long addr, long len) {
    }

    private final Map<Object, Boolean> live = new IdentityHashMap<>();
    int registers;
    int deregisters;
    int failNextRegister;

    @Override
    public Object register(final long addr, final long len) {
        if (failNextRegister > 0) {
            failNextRegister--;
            throw new IllegalStateException("injected registration failure");
        }
        final Mr mr = new Mr(++registers, addr, len);
        live.put(mr, Boolean.TRUE);
        return mr;
    }

    @Override
    public void deregister(final Object mr) {
        if (live.remove(mr) == null) {
            throw new AssertionError("NIC asked to deregister an MR it does not hold: " + mr);
        }
        deregisters++;
    }

    int live() {
        return live.size();
    }
}
