/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** A port taken off the in-JVM fabric: nobody routes to it or reads its rings, and its LID is not given out again. */
class InJvmDetachTest {
    private record Nic(String name) implements PortOwner {
    }

    private static int drain(final FabricPort p) {
        final int[] got = {0};
        p.poll((buffer, offset, length) -> got[0]++, 64);
        return got[0];
    }

    private static void send(final FabricPort from, final int dlid, final long word) {
        final long at = from.tryClaim(dlid, 64);
        assertTrue(at >= 0, "claim to LID " + dlid + ": " + at);
        from.claimBuffer().set(ValueLayout.JAVA_LONG_UNALIGNED, at, word);
        from.commit();
    }

    @Test
    void aDetachedPortIsUnroutableUnreadAndItsLidStaysRetired() {
        try (InJvmFabric fabric = new InJvmFabric(1 << 16, null)) {
            final FabricPort a = fabric.attach(0);
            final FabricPort b = fabric.attach(0);
            final FabricPort c = fabric.attach(0);
            b.owner(new Nic("b"));
            // packets in flight either way when b leaves are lost with it, as on a real network
            send(a, b.lid(), 1);
            send(b, a.lid(), 2);
            fabric.detach(b);
            assertEquals(-2, a.tryClaim(b.lid(), 64), "a packet to the detached LID is unroutable");
            assertEquals(-2, c.tryClaim(b.lid(), 64));
            assertEquals(-2, b.tryClaim(a.lid(), 64), "the detached port reaches nobody, itself included");
            assertEquals(-2, b.tryClaim(b.lid(), 64));
            assertNull(a.peer(b.lid(), Nic.class), "its owner is no longer found by LID");
            assertEquals(0, drain(a), "a no longer polls the ring from b");
            // the others still talk, both ways and to themselves
            send(a, c.lid(), 3);
            send(c, a.lid(), 4);
            send(c, c.lid(), 5);
            assertEquals(1, drain(a));
            assertEquals(2, drain(c));
            // LIDs go in order: b's is retired, the next port gets 4
            final FabricPort d = fabric.attach(0);
            assertEquals(4, d.lid());
            send(d, a.lid(), 6);
            assertEquals(1, drain(a));
            // detaching twice, or a port of another fabric, changes nothing
            fabric.detach(b);
            try (InJvmFabric other = new InJvmFabric(1 << 16, null)) {
                fabric.detach(other.attach(0));
            }
            final Nic nicC = new Nic("c");
            c.owner(nicC);
            assertSame(nicC, a.peer(c.lid(), Nic.class));
            send(a, c.lid(), 7);
            assertEquals(1, drain(c));
        }
    }
}
