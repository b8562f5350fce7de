/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The registration of one buffer on a merged NIC: a set of physical NICs presented as one device (NCCL's
 * virtual/merged device). A memory region belongs to one protection domain of one physical NIC, so the merged
 * device registers one MR per physical NIC and hands out the set as a single handle.
 */
public final class MergedNicMr {
    private final List<Registrar> nics;
    private final List<Object> mrs;

    private MergedNicMr(final List<Registrar> nics, final List<Object> mrs) {
        this.nics = nics;
        this.mrs = mrs;
    }

    /**
     * Registers {@code [addr, addr + len)} on every physical NIC of the merged device. If one registration fails
     * the ones already made are deregistered before the failure propagates, so nothing leaks.
     *
     * @param physicalNics one registrar per physical NIC, in device order; at least one
     */
    public static MergedNicMr register(final List<Registrar> physicalNics, final long addr, final long len) {
        Objects.requireNonNull(physicalNics, "physicalNics");
        if (physicalNics.isEmpty()) {
            throw new IllegalArgumentException("a merged NIC needs at least one physical NIC");
        }
        final List<Registrar> nics = List.copyOf(physicalNics);
        final List<Object> mrs = new ArrayList<>(nics.size());
        try {
            for (final Registrar nic : nics) {
                mrs.add(Objects.requireNonNull(nic.register(addr, len), "registrar returned a null MR"));
            }
        } catch (final RuntimeException ex) {
            for (int i = mrs.size() - 1; i >= 0; i--) {
                try {
                    nics.get(i).deregister(mrs.get(i));
                } catch (final RuntimeException suppressed) {
                    ex.addSuppressed(suppressed);
                }
            }
            throw ex;
        }
        return new MergedNicMr(nics, List.copyOf(mrs));
    }

    /** The MRs, one per physical NIC, in device order. */
    public List<Object> mrs() {
        return mrs;
    }

    /** How many physical NICs (and so MRs) this registration spans. */
    public int nicCount() {
        return mrs.size();
    }

    /** Deregisters the MR on every physical NIC. */
    public void deregister() {
        for (int i = 0; i < mrs.size(); i++) {
            nics.get(i).deregister(mrs.get(i));
        }
    }
}
