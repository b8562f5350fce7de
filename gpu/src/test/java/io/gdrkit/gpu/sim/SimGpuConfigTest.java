/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.core.agent.NanoClock;
import java.time.Duration;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The simulated GPU's Context: the three starting points, set by name, validated once, frozen after. */
class SimGpuConfigTest {

    @Test
    void startingPointsKeepTheirValues() {
        final SimGpuConfig d = SimGpuConfig.defaults(5);
        assertEquals("SimGpuConfig[memBytes=1073741824, smWorkers=4, seed=5, clock=" + NanoClock.SYSTEM
            + ", minDrainNanos=2000, maxDrainNanos=200000, chunkBytes=256, stagingBytes=16777216, maxInFlight=65536,"
            + " autoDrain=true, landUnobserved=false, deferUnsyncedCopies=true, defaultTimeout=PT30S]", d.toString());
        final SimGpuConfig t = SimGpuConfig.throughput(6);
        assertEquals(4096, t.chunkBytes());
        assertEquals(64 << 20, t.stagingBytes());
        assertEquals(50_000, t.maxDrainNanos());
        assertTrue(t.autoDrain());
        assertTrue(t.landUnobserved());
        final ManualClock clock = new ManualClock(0);
        final SimGpuConfig x = SimGpuConfig.deterministic(7, clock);
        assertSame(clock, x.clock());
        assertEquals(64L << 20, x.memBytes());
        assertEquals(4 << 20, x.stagingBytes());
        assertEquals(1 << 14, x.maxInFlight());
        assertFalse(x.autoDrain());
        assertFalse(x.landUnobserved());
        assertEquals(7, x.seed());
    }

    @Test
    void concludeNamesTheBadSetting() {
        bad(c -> c.chunkBytes(0), "chunkBytes must be in (0, stagingBytes]: 0");
        bad(c -> c.chunkBytes(4097).stagingBytes(4096), "chunkBytes must be in (0, stagingBytes]: 4097");
        bad(c -> c.maxInFlight(3), "maxInFlight must be a power of two: 3");
        bad(c -> c.maxInFlight(0), "maxInFlight must be a power of two: 0");
        bad(c -> c.minDrainNanos(10).maxDrainNanos(5),
            "drain delays must satisfy 0 <= min <= max: minDrainNanos 10, maxDrainNanos 5");
        bad(c -> c.minDrainNanos(-1), "drain delays must satisfy 0 <= min <= max: minDrainNanos -1, maxDrainNanos "
            + "200000");
        bad(c -> c.memBytes(0), "memBytes must be > 0: 0");
        bad(c -> c.smWorkers(0), "smWorkers must be in 1..1024: 0");
        bad(c -> c.stagingBytes(0), "stagingBytes must be > 0: 0");
        bad(c -> c.defaultTimeout(Duration.ZERO), "defaultTimeout must be > 0: PT0S");
        bad(c -> c.landUnobserved(true).autoDrain(false),
            "landUnobserved needs autoDrain: a deterministic run steps every chunk");
        assertThrows(NullPointerException.class, () -> SimGpuConfig.defaults(1).clock(null).conclude());
    }

    @Test
    void aConcludedConfigIsFrozenAndShareable() {
        final SimGpuConfig c = SimGpuConfig.deterministic(1, new ManualClock(0));
        assertFalse(c.isConcluded());
        try (SimGpu a = SimGpu.create(SimPreset.H200, c); SimGpu b = SimGpu.create(SimPreset.V100, c)) {
            assertTrue(c.isConcluded());
            assertSame(c, a.system().config());
            assertSame(c, b.system().config());
        }
        assertSame(c, c.conclude());
        final IllegalStateException e = assertThrows(IllegalStateException.class, () -> c.seed(2));
        assertEquals("SimGpuConfig already concluded (a GPU system uses it); make a new one", e.getMessage());
    }

    @Test
    void aBadConfigStartsNoGpu() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> SimGpu.create(SimPreset.H200, SimGpuConfig.defaults(1).maxInFlight(6)));
        assertEquals("maxInFlight must be a power of two: 6", e.getMessage());
    }

    private static void bad(final UnaryOperator<SimGpuConfig> set, final String message) {
        final SimGpuConfig c = set.apply(SimGpuConfig.defaults(1));
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, c::conclude);
        assertEquals(message, e.getMessage());
        assertFalse(c.isConcluded());
    }
}
