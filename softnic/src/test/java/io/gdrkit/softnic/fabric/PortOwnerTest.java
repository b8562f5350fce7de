/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

/** Ports of an in-JVM fabric find each other's owners by LID, typed, and never as the wrong type. */
class PortOwnerTest {
    private record Nic(String name) implements PortOwner {
    }

    private record OtherNic(int id) implements PortOwner {
    }

    @Test
    void peerIsTheOwnerOfThatLidWhenItHasTheAskedType() {
        try (InJvmFabric fabric = new InJvmFabric(1 << 16, null)) {
            final FabricPort a = fabric.attach(0);
            final FabricPort b = fabric.attach(0);
            final Nic nicB = new Nic("b");
            assertNull(a.peer(b.lid(), Nic.class), "no owner yet");
            b.owner(nicB);
            assertSame(nicB, a.peer(b.lid(), Nic.class));
            assertSame(nicB, b.peer(b.lid(), Nic.class), "a port finds its own owner (loopback)");
            assertNull(a.peer(b.lid(), OtherNic.class), "another kind of NIC is not handed back");
            assertNull(a.peer(a.lid(), Nic.class), "a port without an owner");
            assertNull(a.peer(0, Nic.class), "LID 0 is no port");
            assertNull(a.peer(99, Nic.class), "an unknown LID");
            assertNull(a.peer(-1, Nic.class), "a negative LID");
        }
    }
}
