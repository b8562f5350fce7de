/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.gdrkit.core.config.SettingsReader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The software MTU the collectives give IbTransport: 64 KiB by default on the shm fabric only, a set
 * {@code gdrkit.ib.software.mtu} wins everywhere, and every row says which MTU and from where ({@code nic_mtu}).
 * With a 16 KiB MTU a 1 MiB allreduce moves in many packets per chunk and is still exact.
 */
class NicMtuTest {
    @Test
    void theDefaultIsLargeOnlyOnTheShmFabric() {
        assertEquals(65536, CollWorld.softwareMtuDefault("shm"));
        assertEquals(0, CollWorld.softwareMtuDefault("tcp"));
        assertEquals(0, CollWorld.softwareMtuDefault("injvm"));
    }

    @Test
    void aSetMtuIsUsedSaidAndExact() throws Exception {
        final SettingsReader set = new SettingsReader(Map.of(), Map.of("gdrkit.ib.software.mtu", "16384"), Map.of());
        final int count = 1 << 18;
        final Throwable[] err = ThreadRanks.run(2, CollWorld.TransportKind.IB, rank -> new CollContext(), set,
            Duration.ofSeconds(60), (rank, c, a) -> {
                assertEquals("16384 B (gdrkit.ib.software.mtu=16384 (property))", c.nicMtu());
                final MemorySegment s = a.allocate(count * 4L, 64);
                for (int i = 0; i < count; i++) {
                    s.setAtIndex(ValueLayout.JAVA_FLOAT, i, rank + i % 1000);
                }
                final RegisteredBuffer b = c.register(s);
                Collectives.allReduce(c, b, b, count, DataType.FLOAT32, RedOp.SUM);
                for (int i = 0; i < count; i++) {
                    assertEquals(1f + 2 * (i % 1000), s.getAtIndex(ValueLayout.JAVA_FLOAT, i), "element " + i);
                }
                c.deregister(b);
            });
        assertNull(err[0]);
        assertNull(err[1]);
        final Throwable[] dflt = ThreadRanks.run(2, CollWorld.TransportKind.IB, rank -> new CollContext(),
            new SettingsReader(Map.of(), Map.of(), Map.of()), Duration.ofSeconds(60), (rank, c, a) ->
                assertEquals("the path MTU (gdrkit.ib.software.mtu not set: the default)", c.nicMtu()));
        assertNull(dflt[0]);
        assertNull(dflt[1]);
    }
}
