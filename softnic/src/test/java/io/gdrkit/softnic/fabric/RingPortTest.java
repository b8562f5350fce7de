/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Link-level behaviour of ring ports: CRC, drop, duplicate, delay. */
class RingPortTest {
    private static List<String> drain(final FabricPort port) {
        final List<String> got = new ArrayList<>();
        port.poll((buf, off, len) -> got.add(len + ":" + buf.get(ValueLayout.JAVA_BYTE, off)), 100);
        return got;
    }

    private static void send(final FabricPort from, final int dlid, final int len, final byte first) {
        final long off = from.tryClaim(dlid, len);
        final MemorySegment b = from.claimBuffer();
        b.asSlice(off, len).fill((byte) 7);
        b.set(ValueLayout.JAVA_BYTE, off, first);
        from.commit();
    }

    @Test
    void crcPassesIntactPacketsAndDropsCorruptOnes() {
        final boolean[] corrupt = {false};
        try (InJvmFabric fabric = new InJvmFabric(1 << 16, (s, d, buf, off, len) -> {
            if (corrupt[0]) {
                buf.set(ValueLayout.JAVA_BYTE, off + 3, (byte) 99);
            }
            return LinkHook.DELIVER;
        }, true)) {
            final FabricPort a = fabric.attach(0);
            final FabricPort b = fabric.attach(0);
            send(a, b.lid(), 40, (byte) 1);
            assertEquals(List.of("40:1"), drain(b));
            corrupt[0] = true;
            send(a, b.lid(), 40, (byte) 2);
            assertEquals(List.of(), drain(b));
            assertEquals(1, b.crcErrors());
        }
    }

    @Test
    void duplicateAndDelay() {
        final int[] verdict = {LinkHook.DUPLICATE};
        final LinkHook hook = new LinkHook() {
            @Override
            public int onPacket(final int s, final int d, final MemorySegment buf, final long off, final int len) {
                return verdict[0];
            }

            @Override
            public long delayNanos() {
                return 1000;
            }
        };
        try (InJvmFabric fabric = new InJvmFabric(1 << 16, hook, true)) {
            final FabricPort a = fabric.attach(0);
            final FabricPort b = fabric.attach(0);
            send(a, b.lid(), 24, (byte) 1);
            assertEquals(List.of("24:1", "24:1"), drain(b));
            verdict[0] = LinkHook.DELAY;
            a.doWork(0);
            send(a, b.lid(), 24, (byte) 2);
            verdict[0] = LinkHook.DELIVER;
            send(a, b.lid(), 24, (byte) 3);
            assertEquals(List.of("24:3"), drain(b), "the delayed packet is overtaken");
            a.doWork(500);
            assertEquals(List.of(), drain(b), "not yet due");
            a.doWork(1000);
            assertEquals(List.of("24:2"), drain(b), "released when due, CRC intact");
        }
    }
}
