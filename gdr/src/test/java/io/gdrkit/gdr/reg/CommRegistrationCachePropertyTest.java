/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link CommRegistrationCache} against {@link ReferenceModel} over random register/deregister sequences. */
class CommRegistrationCachePropertyTest {
    private static final long SEED = 0x636F_6D6D_7265_67L;
    private static final int SEQUENCES = 2000;
    private static final int STEPS = 80;

    @Test
    void randomSequencesMatchTheReferenceModel() {
        final SplittableRandom seeds = new SplittableRandom(SEED);
        for (int s = 0; s < SEQUENCES; s++) {
            final long seed = seeds.nextLong();
            try {
                runSequence(new SplittableRandom(seed));
            } catch (final AssertionError ex) {
                fail("sequence " + s + " (seed " + seed + ") diverged from the model: " + ex.getMessage(), ex);
            }
        }
    }

    private static void runSequence(final SplittableRandom rnd) {
        final long pageSize = rnd.nextBoolean() ? 4096 : 1024;
        final boolean localRegister = rnd.nextInt(10) != 0;
        final boolean global = rnd.nextBoolean();
        final int nConn = rnd.nextInt(4);
        final List<NetConnection> conns = new ArrayList<>();
        final List<CountingRegistrar> nics = new ArrayList<>();
        int gdrConns = 0;
        for (int i = 0; i < nConn; i++) {
            final boolean gdr = rnd.nextBoolean();
            gdrConns += gdr ? 1 : 0;
            final CountingRegistrar nic = new CountingRegistrar();
            nics.add(nic);
            conns.add(new NetConnection("conn" + i, gdr, nic));
        }
        final int netPerHandle = global ? gdrConns : 0;
        final CommRegistrationCache comm =
            new CommRegistrationCache(new RegSettings(localRegister, pageSize), global, conns);
        final ReferenceModel model = new ReferenceModel(pageSize, false);
        final List<RegHandle> outstanding = new ArrayList<>();
        final List<RegHandle> released = new ArrayList<>();
        final long base = 0x2000_0000L;
        final long span = 32 * pageSize;
        int created = 0;
        int removed = 0;

        for (int step = 0; step < STEPS; step++) {
            final int op = rnd.nextInt(100);
            if (op < 55 || outstanding.isEmpty()) {
                final long addr = base + rnd.nextLong(span);
                final long len = 1 + rnd.nextLong(rnd.nextInt(4) == 0 ? 12 * pageSize : 2 * pageSize);
                final RegHandle h = comm.register(addr, len);
                if (!localRegister) {
                    assertNull(h, "LOCAL_REGISTER=0 gives a null handle");
                    comm.deregister(h);
                    continue;
                }
                final long beg = model.alignDown(addr);
                final long end = model.alignUp(addr + len);
                final ReferenceModel.Entry hit = model.hit(beg, end);
                if (hit != null) {
                    assertSame(hit.handle, h, "a containing handle must be reused");
                    hit.refs++;
                } else {
                    created++;
                    assertEquals(beg, h.begAddr());
                    assertEquals(end, h.endAddr());
                    assertEquals(netPerHandle, h.netRegistrations());
                    model.add(beg, end).handle = h;
                }
                outstanding.add(h);
            } else if (op < 95) {
                final RegHandle h = outstanding.remove(rnd.nextInt(outstanding.size()));
                final ReferenceModel.Entry e = model.find(h);
                assertNotNull(e);
                comm.deregister(h);
                if (model.release(e)) {
                    removed++;
                    released.add(h);
                }
            } else if (!released.isEmpty()) {
                final RegHandle stale = released.get(rnd.nextInt(released.size()));
                if (model.find(stale) == null) {
                    assertThrows(InvalidUsageException.class, () -> comm.deregister(stale));
                }
            }
            check(comm, model, conns, nics, global ? created : 0, global ? removed : 0);
        }
        for (final RegHandle h : outstanding) {
            comm.deregister(h);
            if (model.release(model.find(h))) {
                removed++;
            }
        }
        check(comm, model, conns, nics, global ? created : 0, global ? removed : 0);
        assertEquals(0, comm.population());
    }

    private static void check(final CommRegistrationCache comm, final ReferenceModel model,
                              final List<NetConnection> conns, final List<CountingRegistrar> nics,
                              final int netRegisters, final int netDeregisters) {
        // Per GDR connection: one NET registration per handle created, one deregistration per handle removed.
        for (int i = 0; i < conns.size(); i++) {
            final CountingRegistrar nic = nics.get(i);
            if (conns.get(i).usesGdr()) {
                assertEquals(netRegisters, nic.registers, "NET registrations on " + conns.get(i).name());
                assertEquals(netDeregisters, nic.deregisters, "NET deregistrations on " + conns.get(i).name());
            } else {
                assertEquals(0, nic.registers, "no NET registration without GDR on " + conns.get(i).name());
            }
        }
        assertEquals(model.capacity, comm.capacity(), "capacity");
        final List<RegHandle> actual = comm.handles();
        final List<ReferenceModel.Entry> expected = model.sorted();
        assertEquals(expected.size(), actual.size(), "population");
        for (int i = 0; i < actual.size(); i++) {
            final RegHandle a = actual.get(i);
            if (i > 0) {
                assertTrue(actual.get(i - 1).begAddr() <= a.begAddr(), "sorted at slot " + i);
            }
            assertSame(expected.get(i).handle, a, "handle at slot " + i);
            assertEquals(expected.get(i).refs, a.refs(), "refs at slot " + i);
        }
    }
}
