/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The warm-up's rounds; only lower bounds that follow from the loop, never a measured speed. */
class WarmupTest {
    private static PerfConfig cfg(final long iters, final long ms) {
        return new PerfConfig(PerfKind.WRITE_BW).iters(10).warmup(iters).warmupMs(ms).conclude();
    }

    @Test
    void roundsRepeatUntilTheTimeHasPassed() {
        final List<Long> rounds = new ArrayList<>();
        final long t0 = System.nanoTime();
        Warmup.run(cfg(5, 30), n -> {
            rounds.add(n);
            try {
                Thread.sleep(5);
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertTrue(System.nanoTime() - t0 >= 30_000_000L, "returned before 30 ms");
        assertTrue(rounds.size() >= 2, "rounds: " + rounds);
        assertEquals(Warmup.MIN_ROUND, rounds.get(0), "a round is at least MIN_ROUND iterations with a time");
    }

    @Test
    void iterationsAloneRunOnceAndNothingRunsWithout() {
        final List<Long> rounds = new ArrayList<>();
        assertEquals(1, Warmup.run(cfg(7, 0), rounds::add));
        assertEquals(List.of(7L), rounds);
        assertEquals(0, Warmup.run(cfg(0, 0), rounds::add));
        assertEquals(1, rounds.size());
    }

    @Test
    void aBandwidthRunWarmsForTheTimeGiven() {
        final PerfConfig c = new PerfConfig(PerfKind.WRITE_BW).size(64).iters(20).warmup(0).warmupMs(20).conclude();
        try (Loopback lb = new Loopback(c, null, null)) {
            final BwResult r = new BwRun(lb, c).run();
            assertEquals(20, r.iterations()); // the warm-up is not reported
        }
    }
}
