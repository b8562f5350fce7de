/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import io.gdrkit.gdr.gate.NcclSettings;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CommRegistrationCacheTest {
    private static final long P = 4096;
    private static final long BASE = 0x7e00_0000_0000L;

    private final CountingRegistrar gdrNic = new CountingRegistrar();
    private final CountingRegistrar bounceNic = new CountingRegistrar();
    private final List<NetConnection> connections = List.of(
        new NetConnection("send ch0", true, gdrNic),
        new NetConnection("recv ch0", false, bounceNic));

    private CommRegistrationCache comm(final boolean global) {
        return new CommRegistrationCache(RegSettings.defaults(), global, connections);
    }

    @Test
    void exactAndContainedRangesReuseTheHandle() {
        final CommRegistrationCache comm = comm(true);
        final RegHandle h = comm.register(BASE + 5, 8 * P);
        assertSame(h, comm.register(BASE + 5, 8 * P));
        assertSame(h, comm.register(BASE + 2 * P, P));
        assertEquals(3, h.refs());
        assertEquals(1, comm.population());
        assertEquals(BASE, h.begAddr());
        assertEquals(BASE + 9 * P, h.endAddr(), "8 pages starting 5 bytes in take 9 pages");
    }

    @Test
    void disjointAndPartiallyOverlappingRangesGetNewHandles() {
        final CommRegistrationCache comm = comm(true);
        final RegHandle a = comm.register(BASE, 4 * P);
        final RegHandle b = comm.register(BASE + 100 * P, P);
        final RegHandle c = comm.register(BASE + 3 * P, 2 * P);
        assertNotSame(a, b);
        assertNotSame(a, c);
        assertEquals(List.of(a, c, b), comm.handles(), "sorted by start address");
    }

    @Test
    void staleOrForeignHandleIsInvalidUsage() {
        final CommRegistrationCache comm = comm(true);
        final RegHandle h = comm.register(BASE, P);
        comm.deregister(h);
        final InvalidUsageException stale = assertThrows(InvalidUsageException.class, () -> comm.deregister(h));
        assertEquals("ncclInvalidUsage", stale.result());
        assertTrue(stale.getMessage().startsWith("ncclInvalidUsage: deregister: could not find handle"),
            stale.getMessage());

        final RegHandle foreign = comm(true).register(BASE, P);
        assertThrows(InvalidUsageException.class, () -> comm.deregister(foreign));
    }

    @Test
    void localRegisterOffSucceedsWithNullHandleAndRegistersNothing() {
        final RegSettings off = NcclSettings.ofEnv(Map.of(RegSettings.LOCAL_REGISTER, "0")).reg();
        final CommRegistrationCache comm = new CommRegistrationCache(off, true, connections);
        final RegHandle h = comm.register(BASE, P);
        assertNull(h);
        assertEquals(0, comm.population());
        assertEquals(0, gdrNic.registers);
        assertDoesNotThrow(() -> comm.deregister(h), "deregistering the null handle is a success");
    }

    @Test
    void localRegisterSettingParsesLikeNccl() {
        assertTrue(NcclSettings.ofEnv(Map.of()).reg().localRegister());
        assertTrue(NcclSettings.ofEnv(Map.of(RegSettings.LOCAL_REGISTER, "2")).reg().localRegister());
        final IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
            () -> NcclSettings.ofEnv(Map.of(RegSettings.LOCAL_REGISTER, "yes")));
        assertTrue(bad.getMessage().contains("NCCL_LOCAL_REGISTER=yes is not an integer"), bad.getMessage());
    }

    @Test
    void backendWithoutGlobalRegistrationMakesNoNetRegistrations() {
        final CommRegistrationCache comm = comm(false);
        final RegHandle h = comm.register(BASE, 16 * P);
        comm.register(BASE + 100 * P, P);
        assertEquals(0, h.netRegistrations());
        assertEquals(0, gdrNic.registers + bounceNic.registers);
        comm.deregister(h);
        assertEquals(0, gdrNic.deregisters + bounceNic.deregisters);
    }

    @Test
    void netRegistrationOnlyOnGdrConnections() {
        final CommRegistrationCache comm = comm(true);
        final RegHandle h = comm.register(BASE, 2 * P);
        assertEquals(1, h.netRegistrations());
        assertEquals(1, gdrNic.registers);
        assertEquals(0, bounceNic.registers, "the host-bounce connection never registers the user buffer");
        comm.register(BASE, P); // a hit: no new NET registration
        assertEquals(1, gdrNic.registers);
        comm.deregister(h);
        assertEquals(0, gdrNic.deregisters, "still referenced");
        comm.deregister(h);
        assertEquals(1, gdrNic.deregisters);
        assertEquals(0, h.netRegistrations());
    }

    @Test
    void netRegistrationsGoThroughTheNicsMrCache() {
        final CountingRegistrar nic = new CountingRegistrar();
        final NetMrCache nicCache = new NetMrCache(nic);
        final CommRegistrationCache comm = new CommRegistrationCache(RegSettings.defaults(), true, List.of(
            new NetConnection("send ch0", true, nicCache), new NetConnection("send ch1", true, nicCache)));
        final RegHandle h = comm.register(BASE, 4 * P);
        assertEquals(2, h.netRegistrations());
        assertEquals(1, nic.registers, "two channels on one NIC share one MR through the NIC's cache");
        assertEquals(2, nicCache.refs(nicCache.entries().getFirst().mr()));
        comm.deregister(h);
        assertEquals(1, nic.deregisters);
        assertEquals(0, nicCache.population());
    }

    @Test
    void failedNetRegistrationLeavesNothingBehind() {
        final CountingRegistrar second = new CountingRegistrar();
        second.failNextRegister = 1;
        final CommRegistrationCache comm = new CommRegistrationCache(RegSettings.defaults(), true, List.of(
            new NetConnection("a", true, gdrNic), new NetConnection("b", true, second)));
        assertThrows(IllegalStateException.class, () -> comm.register(BASE, P));
        assertEquals(0, comm.population());
        assertEquals(0, gdrNic.live());
    }

    @Test
    void capacityStartsAt32ThenDoublesAndRemovalKeepsOrder() {
        final CommRegistrationCache comm = comm(false);
        final RegHandle[] hs = new RegHandle[40];
        for (int i = 0; i < hs.length; i++) {
            hs[i] = comm.register(BASE + 2L * (hs.length - i) * P, P); // inserted in descending order
        }
        assertEquals(64, comm.capacity());
        comm.deregister(hs[39]); // the lowest address, slot 0
        comm.deregister(hs[20]);
        final List<RegHandle> handles = comm.handles();
        for (int i = 1; i < handles.size(); i++) {
            assertTrue(handles.get(i - 1).begAddr() < handles.get(i).begAddr(), "order kept at " + i);
        }
        assertEquals(38, handles.size());
    }
}
