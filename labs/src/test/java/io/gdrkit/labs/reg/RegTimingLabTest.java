/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.reg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/** Shape and bookkeeping of the timing lab; no time is asserted. */
class RegTimingLabTest {
    @Test
    void everyLayerAndSizeHasARowWithOrderedStatistics() {
        final RegTimingLab.Result r = RegTimingLab.run(new RegTimingLab.Config(16, 3, 4096, null));
        final List<Long> sizes = List.of(1L, 4L, 16L);
        assertEquals(sizes.size() * 10, r.rows().size(), r.rows().toString());
        for (final long pages : sizes) {
            for (final String layer : List.of("NET MR cache", "comm cache")) {
                for (final String op : List.of("cold register (miss)", "cache hit (exact)", "contained hit",
                    "deregister (last ref)")) {
                    assertTrue(r.rows().stream().anyMatch(x -> x.layer().equals(layer) && x.operation().equals(op)
                        && x.pages() == pages), layer + " " + op + " " + pages);
                }
            }
            assertTrue(r.rows().stream().anyMatch(x -> x.layer().equals("software NIC")
                && x.operation().equals("ibv_reg_mr") && x.pages() == pages && x.bytes() == pages * 4096));
        }
        for (final RegTimingLab.Row x : r.rows()) {
            assertEquals(3, x.samples(), x.toString());
            assertTrue(x.minNs() > 0 && x.minNs() <= x.medianNs() && x.medianNs() <= x.maxNs(), x.toString());
            assertEquals(-1, x.p99Ns(), "3 samples have no p99 of their own: " + x);
            assertTrue(x.simulated(), "software NIC rows are simulated: " + x);
        }
        assertTrue(r.pinning().getFirst().contains("no page is locked or touched"), r.pinning().toString());
        assertTrue(r.notes().stream().anyMatch(n -> n.startsWith("CUDA rows skipped: no --gpu given")),
            r.notes().toString());
    }

    @Test
    void gpusWithoutDriverCostsAreSkippedWithTheReason() {
        final RegTimingLab.Result sim = RegTimingLab.run(new RegTimingLab.Config(1, 3, 4096, "sim:h200"));
        assertTrue(sim.notes().stream().anyMatch(n -> n.startsWith("CUDA rows skipped: ") && n.contains(
            "is simulated, so the driver's costs do not exist there")), sim.notes().toString());
        assertTrue(sim.rows().stream().noneMatch(x -> x.layer().equals("CUDA")));
        final RegTimingLab.Result cuda = RegTimingLab.run(new RegTimingLab.Config(1, 3, 4096, "cuda:0"));
        if (cuda.rows().stream().noneMatch(x -> x.layer().equals("CUDA"))) {
            // this CI machine has no GPU: the reason is the probe's, not an exception
            assertTrue(cuda.notes().stream().anyMatch(n -> n.startsWith("CUDA rows skipped: GPU cuda:0: no CUDA "
                + "GPU here")), cuda.notes().toString());
        } else {
            assertTrue(cuda.rows().stream().anyMatch(x -> x.operation().equals("cuMemHostRegister")
                && !x.simulated()), cuda.rows().toString());
        }
    }

    @Test
    void statisticsUseNearestRank() {
        final RegTimingLab.Row five = RegTimingLab.row("l", "o", 1, 4096, new long[] {5, 1, 3, 2, 4}, true);
        assertEquals(List.of(1L, 3L, -1L, 5L), List.of(five.minNs(), five.medianNs(), five.p99Ns(), five.maxNs()),
            "below 100 samples the nearest-rank p99 is the max: not reported");
        final RegTimingLab.Row hundred = RegTimingLab.row("l", "o", 1, 4096,
            LongStream.rangeClosed(1, 100).map(i -> 101 - i).toArray(), true);
        assertEquals(99, hundred.p99Ns());
        assertEquals(50, hundred.medianNs(), "(50 + 51) / 2 in integer nanoseconds");
    }

    @Test
    void badConfigsAreRefusedByName() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new RegTimingLab.Config(1L << 19, 3, 4096,
            null)).getMessage().contains("must be 1 .. 262144 (2^18)"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new RegTimingLab.Config(4, 2, 4096, null))
            .getMessage().contains("reps 2 must be 3 .. 100000"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new RegTimingLab.Config(4, 3, 3000, null))
            .getMessage().contains("must be a power of two"));
    }
}
