/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A communicator's user-buffer registration cache: what {@code ncclCommRegister}/{@code ncclCommDeregister} keep
 * (src/register/register.cc, {@code ncclRegCache}).
 *
 * <ul>
 *   <li>Ranges are widened to pages. Entries are sorted by start address; the lookup walks them in order and the
 *       first entry that contains the range (exact or inside) is reused, its count incremented. A range no entry
 *       contains (disjoint or partially overlapping) gets a new handle. The slot array starts at 32 and doubles.</li>
 *   <li>With {@code NCCL_LOCAL_REGISTER=0} registration succeeds with a {@code null} handle and registers
 *       nothing; deregistering {@code null} is a successful no-op, so callers need no special case.</li>
 *   <li>NET registration happens when a new handle is made, and only if the NET backend registers globally
 *       (once, independent of the operation); a backend without global registration makes none here. Even then
 *       only the connections that use GDR register: the others never DMA into the user buffer.</li>
 *   <li>Deregistering a handle the cache does not hold (released already, or from another communicator) is
 *       {@link InvalidUsageException invalid usage}. The last deregistration releases the NET MRs and removes
 *       the entry, keeping the rest in order.</li>
 * </ul>
 */
public final class CommRegistrationCache {
    private final RegSettings settings;
    private final boolean netGlobalRegistration;
    private final List<NetConnection> connections;
    private final long pageSize;
    private RegHandle[] slots = new RegHandle[0];
    private int population;

    /**
     * @param settings              the communicator's registration settings
     * @param netGlobalRegistration the NET backend registers buffers globally (NCCL's {@code regIsGlobal})
     * @param connections           the communicator's NET connections
     */
    public CommRegistrationCache(
        final RegSettings settings, final boolean netGlobalRegistration, final List<NetConnection> connections) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.netGlobalRegistration = netGlobalRegistration;
        this.connections = List.copyOf(connections);
        this.pageSize = settings.pageSize();
    }

    /**
     * Registers {@code [addr, addr + len)}.
     *
     * @return the handle, shared with earlier registrations that contain the range; {@code null} when local
     *         registration is switched off
     */
    public synchronized RegHandle register(final long addr, final long len) {
        if (!settings.localRegister()) {
            return null;
        }
        final PageRange range = PageRange.of(addr, len, pageSize);
        final long beg = range.addr();
        final long end = beg + range.pages() * pageSize;
        for (int slot = 0; ; slot++) {
            if (slot == population || beg < slots[slot].begAddr()) {
                return insert(slot, beg, end);
            }
            final RegHandle h = slots[slot];
            if (h.contains(beg, end)) {
                h.refs++;
                return h;
            }
        }
    }

    private RegHandle insert(final int slot, final long beg, final long end) {
        final RegHandle handle = new RegHandle(beg, end);
        if (netGlobalRegistration) {
            try {
                for (final NetConnection c : connections) {
                    if (c.usesGdr()) {
                        handle.addNet(c, c.nic().register(beg, end - beg));
                    }
                }
            } catch (final RuntimeException ex) {
                // Undo the NET registrations already made so a failed register leaves nothing behind.
                try {
                    handle.releaseNet();
                } catch (final RuntimeException suppressed) {
                    ex.addSuppressed(suppressed);
                }
                throw ex;
            }
        }
        if (population == slots.length) {
            final RegHandle[] grown = new RegHandle[slots.length < NetMrCache.INITIAL_CAPACITY
                ? NetMrCache.INITIAL_CAPACITY : slots.length * 2];
            System.arraycopy(slots, 0, grown, 0, population);
            slots = grown;
        }
        System.arraycopy(slots, slot, slots, slot + 1, population - slot);
        slots[slot] = handle;
        population++;
        return handle;
    }

    /**
     * Releases one registration. A {@code null} handle (from a registration that was switched off) is accepted
     * and does nothing.
     *
     * @throws InvalidUsageException if the cache does not hold {@code handle}
     */
    public synchronized void deregister(final RegHandle handle) {
        if (handle == null) {
            return;
        }
        int slot = 0;
        while (slot < population && slots[slot] != handle) {
            slot++;
        }
        if (slot == population) {
            throw new InvalidUsageException("deregister: could not find handle " + handle +
                " among " + population + " registrations of this communicator (stale or foreign handle)");
        }
        if (--handle.refs > 0) {
            return;
        }
        // Keep the address order: shift the tail down (register() depends on it, see NetMrCache).
        System.arraycopy(slots, slot + 1, slots, slot, population - slot - 1);
        slots[--population] = null;
        handle.releaseNet();
    }

    /** The number of live handles. */
    public synchronized int population() {
        return population;
    }

    /** The number of slots allocated. */
    public synchronized int capacity() {
        return slots.length;
    }

    /** The live handles in slot order (sorted by start address). */
    public synchronized List<RegHandle> handles() {
        final List<RegHandle> out = new ArrayList<>(population);
        for (int i = 0; i < population; i++) {
            out.add(slots[i]);
        }
        return out;
    }
}
