/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link NetMrCache} against {@link ReferenceModel} over random register/deregister sequences. */
class NetMrCachePropertyTest {
    private static final long SEED = 0x6D72_6361_6368_65L;
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
        final long pageSize = rnd.nextBoolean() ? 4096 : 512;
        final long base = 0x1000_0000L;
        final long span = (rnd.nextBoolean() ? 16 : 64) * pageSize;
        final CountingRegistrar nic = new CountingRegistrar();
        final NetMrCache cache = new NetMrCache(nic, pageSize);
        final ReferenceModel model = new ReferenceModel(pageSize, true);
        final List<Object> outstanding = new ArrayList<>(); // one element per registration not yet released
        final List<Object> released = new ArrayList<>();
        int registers = 0;
        int deregisters = 0;

        for (int step = 0; step < STEPS; step++) {
            final int op = rnd.nextInt(100);
            if (op < 55 || outstanding.isEmpty()) {
                final long addr = base + rnd.nextLong(span);
                final long len = 1 + rnd.nextLong(rnd.nextInt(4) == 0 ? 16 * pageSize : 2 * pageSize);
                final long beg = model.alignDown(addr);
                final long end = model.alignUp(addr + len);
                final ReferenceModel.Entry hit = model.hit(beg, end);
                final Object mr = cache.register(addr, len);
                if (hit != null) {
                    assertSame(hit.handle, mr, "a containing entry must be reused");
                    hit.refs++;
                } else {
                    registers++;
                    final CountingRegistrar.Mr fresh = (CountingRegistrar.Mr) mr;
                    assertEquals(beg, fresh.addr(), "registered start");
                    assertEquals(end - beg, fresh.len(), "registered length");
                    model.add(beg, end).handle = mr;
                }
                outstanding.add(mr);
            } else if (op < 95) {
                final Object mr = outstanding.remove(rnd.nextInt(outstanding.size()));
                final ReferenceModel.Entry e = model.find(mr);
                assertNotNull(e);
                cache.deregister(mr);
                if (model.release(e)) {
                    deregisters++;
                    released.add(mr);
                }
            } else {
                final Object bogus = !released.isEmpty() && rnd.nextBoolean()
                    ? released.get(rnd.nextInt(released.size())) : new Object();
                if (model.find(bogus) == null) {
                    assertThrows(IllegalArgumentException.class, () -> cache.deregister(bogus));
                }
            }
            check(cache, nic, model, registers, deregisters);
        }

        for (final Object mr : outstanding) {
            cache.deregister(mr);
            if (model.release(model.find(mr))) {
                deregisters++;
            }
            check(cache, nic, model, registers, deregisters);
        }
        assertEquals(0, cache.population());
        assertEquals(0, nic.live(), "every MR deregistered at the NIC");
    }

    private static void check(final NetMrCache cache, final CountingRegistrar nic, final ReferenceModel model,
                              final int registers, final int deregisters) {
        assertEquals(registers, nic.registers, "NIC register calls");
        assertEquals(deregisters, nic.deregisters, "NIC deregister calls");
        assertEquals(model.capacity, cache.capacity(), "capacity");
        final List<NetMrCache.Entry> actual = cache.entries();
        final List<ReferenceModel.Entry> expected = model.sorted();
        assertEquals(expected.size(), actual.size(), "population");
        for (int i = 0; i < actual.size(); i++) {
            final NetMrCache.Entry a = actual.get(i);
            final ReferenceModel.Entry e = expected.get(i);
            if (i > 0) {
                assertTrue(actual.get(i - 1).addr() <= a.addr(), "sorted by address at slot " + i);
            }
            assertEquals(e.beg, a.addr(), "addr at slot " + i);
            assertEquals((e.end - e.beg) / cache.pageSize(), a.pages(), "pages at slot " + i);
            assertEquals(e.refs, a.refs(), "refs at slot " + i);
            assertSame(e.handle, a.mr(), "mr at slot " + i);
        }
    }
}
