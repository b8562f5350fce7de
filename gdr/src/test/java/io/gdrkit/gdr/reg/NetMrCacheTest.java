/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class NetMrCacheTest {
    private static final long P = 4096;
    private static final long BASE = 0x7f00_0000_0000L;

    private final CountingRegistrar nic = new CountingRegistrar();
    private final NetMrCache cache = new NetMrCache(nic);

    @Test
    void rangesAreWidenedToPages() {
        final CountingRegistrar.Mr mr = (CountingRegistrar.Mr) cache.register(BASE + 100, 10);
        assertEquals(BASE, mr.addr());
        assertEquals(P, mr.len());
        // Straddling a page boundary by two bytes takes both pages.
        final CountingRegistrar.Mr two = (CountingRegistrar.Mr) cache.register(BASE + 10 * P - 1, 2);
        assertEquals(BASE + 9 * P, two.addr());
        assertEquals(2 * P, two.len());
    }

    @Test
    void pageSizeIsAParameter() {
        final NetMrCache big = new NetMrCache(nic, 65536);
        final CountingRegistrar.Mr mr = (CountingRegistrar.Mr) big.register(BASE + 70000, 1);
        assertEquals(BASE + 65536, mr.addr());
        assertEquals(65536, mr.len());
        assertThrows(IllegalArgumentException.class, () -> new NetMrCache(nic, 3000));
        assertThrows(IllegalArgumentException.class, () -> new NetMrCache(nic, 0));
    }

    @Test
    void exactAndContainedRangesAreHitsWithRefsIncremented() {
        final Object mr = cache.register(BASE, 8 * P);
        assertSame(mr, cache.register(BASE, 8 * P));
        assertSame(mr, cache.register(BASE + 3 * P + 17, P));
        assertSame(mr, cache.register(BASE + 7 * P, P)); // last page, still inside
        assertEquals(1, nic.registers);
        assertEquals(4, cache.refs(mr));
    }

    @Test
    void partialOverlapRegistersAnew() {
        final Object a = cache.register(BASE, 4 * P);
        final Object b = cache.register(BASE + 2 * P, 4 * P); // overlaps the tail of a, runs past it
        final Object c = cache.register(BASE, 5 * P);         // same start, longer
        assertNotSame(a, b);
        assertNotSame(a, c);
        assertEquals(3, nic.registers);
        assertEquals(3, cache.population());
        assertEquals(1, cache.refs(a));
    }

    @Test
    void deregisterCountsDownAndReleasesAtZero() {
        final Object mr = cache.register(BASE, P);
        cache.register(BASE, P);
        cache.deregister(mr);
        assertEquals(0, nic.deregisters);
        assertEquals(1, cache.refs(mr));
        cache.deregister(mr);
        assertEquals(1, nic.deregisters);
        assertEquals(0, cache.population());
        assertEquals(0, cache.refs(mr));
    }

    @Test
    void unknownHandleIsAnErrorNamingIt() {
        final Object mr = cache.register(BASE, P);
        cache.deregister(mr);
        final IllegalArgumentException stale = assertThrows(IllegalArgumentException.class, () -> cache.deregister(mr));
        assertTrue(stale.getMessage().contains(mr.toString()), stale.getMessage());
        final IllegalArgumentException foreign =
            assertThrows(IllegalArgumentException.class, () -> cache.deregister("not-an-mr"));
        assertTrue(foreign.getMessage().contains("unknown MR handle not-an-mr"), foreign.getMessage());
        assertEquals(1, nic.deregisters);
    }

    @Test
    void capacityStartsAt32ThenDoubles() {
        assertEquals(0, cache.capacity());
        final List<Object> mrs = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            mrs.add(cache.register(BASE + 2L * i * P, P));
        }
        assertEquals(32, cache.capacity());
        mrs.add(cache.register(BASE + 64 * P, P));
        assertEquals(64, cache.capacity());
        for (int i = 33; i < 65; i++) {
            mrs.add(cache.register(BASE + 2L * i * P, P));
        }
        assertEquals(65, cache.population());
        assertEquals(128, cache.capacity());
        // Emptied, the slots are released (as NCCL frees them) and the next insert starts at 32 again.
        mrs.forEach(cache::deregister);
        assertEquals(0, cache.capacity());
        cache.register(BASE, P);
        assertEquals(32, cache.capacity());
    }

    @Test
    void entriesAreSortedByAddressWhateverTheInsertionOrder() {
        cache.register(BASE + 50 * P, P);
        cache.register(BASE + 10 * P, P);
        cache.register(BASE + 30 * P, P);
        cache.register(BASE, P);
        assertEquals(List.of(BASE, BASE + 10 * P, BASE + 30 * P, BASE + 50 * P), addresses());
    }

    /**
     * NCCL removes by moving the last slot into the hole. With entries A < B < C, removing A leaves [C, B]: the
     * lookup then stops at C for a range inside B (it starts before C) and registers B's pages a second time.
     * This cache shifts the tail instead: the order survives and the range is a hit on B.
     */
    @Test
    void removalKeepsTheOrderSoContainedLookupsStillHit() {
        final Object a = cache.register(BASE, P);
        final Object b = cache.register(BASE + 10 * P, 4 * P);
        final Object c = cache.register(BASE + 20 * P, P);
        cache.deregister(a);
        assertEquals(List.of(BASE + 10 * P, BASE + 20 * P), addresses());

        // What NCCL's swap-with-last would have produced from [A, B, C] on removing A:
        final List<Long> ncclOrder = ncclSwapWithLastRemoval(List.of(BASE, BASE + 10 * P, BASE + 20 * P), 0);
        assertEquals(List.of(BASE + 20 * P, BASE + 10 * P), ncclOrder, "NCCL's removal breaks the order");

        assertSame(b, cache.register(BASE + 11 * P, P));
        assertEquals(3, nic.registers, "no second registration of B's pages");
        assertEquals(2, cache.refs(b));
        assertEquals(1, cache.refs(c));
    }

    @Test
    void removalFromTheMiddleAndEndKeepsOrder() {
        final List<Object> mrs = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            mrs.add(cache.register(BASE + 10L * i * P, P));
        }
        cache.deregister(mrs.get(2));
        cache.deregister(mrs.get(5));
        cache.deregister(mrs.get(0));
        assertEquals(List.of(BASE + 10 * P, BASE + 30 * P, BASE + 40 * P), addresses());
    }

    @Test
    void failingNicLeavesTheCacheUnchanged() {
        cache.register(BASE, P);
        nic.failNextRegister = 1;
        assertThrows(IllegalStateException.class, () -> cache.register(BASE + 10 * P, P));
        assertEquals(1, cache.population());
        assertEquals(List.of(BASE), addresses());
    }

    @Test
    void badRangesAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> cache.register(BASE, 0));
        assertThrows(IllegalArgumentException.class, () -> cache.register(-1, 10));
        assertThrows(IllegalArgumentException.class, () -> cache.register(Long.MAX_VALUE - 10, 100));
        assertEquals(0, nic.registers);
    }

    @Test
    void theCacheIsARegistrarSoCachesStack() {
        final NetMrCache outer = new NetMrCache(cache);
        final Object mr = outer.register(BASE, P);
        assertSame(mr, cache.entries().getFirst().mr());
        outer.deregister(mr);
        assertEquals(1, nic.deregisters);
    }

    private List<Long> addresses() {
        return cache.entries().stream().map(NetMrCache.Entry::addr).toList();
    }

    /** NCCL's removal, for contrast: the last slot moves into the hole. */
    private static List<Long> ncclSwapWithLastRemoval(final List<Long> slots, final int i) {
        final List<Long> out = new ArrayList<>(slots);
        out.set(i, out.getLast());
        out.removeLast();
        return out;
    }
}
