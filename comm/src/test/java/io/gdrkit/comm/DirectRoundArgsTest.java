/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A direct round that does not fit its slots (through shared memory or the eager connections) is refused with a
 * named IllegalArgumentException before anything moves, and the communicator stays usable: the next sweep on it is
 * right.
 */
class DirectRoundArgsTest {
    private static final SettingsReader NONE = new SettingsReader(Map.of(), Map.of(), Map.of());

    @ParameterizedTest(name = "shm direct {0}")
    @ValueSource(booleans = {true, false})
    void oversizeAndNegativeRoundsAreRefusedAndChangeNothing(final boolean shm) {
        final CollRun.Config cfg = new CollRun.Config(CollOp.ALLREDUCE, DataType.INT32, RedOp.SUM, 0, 8, 1024, 8, 0,
            2, 1, true, "ib", "injvm", true);
        final Map<Integer, String> refused = new ConcurrentHashMap<>();
        final Map<Integer, Long> wrongAfter = new ConcurrentHashMap<>();
        final List<CollResult> rows = CollLocal.run(2, CollWorld.TransportKind.IB, cfg, new CollContext()
            .buffSize(65536).steps(4).channels(1).directBytes(4096).shmDirect(shm).settings(NONE), NONE,
            Duration.ofSeconds(30), r -> { }, (rank, c) -> {
                final StringBuilder sb = new StringBuilder();
                for (final int[] sizes : new int[][] {{1 << 20, 1 << 20}, {8, 1 << 20}, {-1, 8}, {8, -8}}) {
                    final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> c.directRound(null, 0, sizes[0], sizes[1], 0x4443L << 48, Communicator.ALL,
                            Communicator.ALL));
                    sb.append(e.getMessage()).append('\n');
                }
                refused.put(rank, sb.toString());
                // still usable: a sweep on the same communicator is right
                final List<CollResult> again = CollRun.run(c, cfg, x -> { });
                wrongAfter.put(rank, again.stream().mapToLong(x -> x.wrong() + x.inPlaceWrong()).sum());
            }, null);
        assertEquals(CollRun.sizes(cfg, 2).size(), rows.size());
        for (int r = 0; r < 2; r++) {
            final String m = refused.get(r);
            assertTrue(m.contains("a direct round of 1048576/1048576 bytes with " + (shm ? "shared slots of " + Communicator.SHM_SLOT_BYTES
                : "eager slots of 8192 (the 8-byte header included)")), m);
            assertTrue(m.contains("a direct round of -1/8 bytes"), m);
            assertTrue(m.contains("a direct round of 8/-8 bytes"), m);
            assertEquals(0L, wrongAfter.get(r));
        }
    }
}
