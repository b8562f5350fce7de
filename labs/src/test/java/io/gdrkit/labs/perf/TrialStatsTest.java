/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class TrialStatsTest {
    @Test
    void minMedianMaxAndCoefficientOfVariation() {
        final TrialStats s = TrialStats.of(4, 2, 6);
        assertEquals(3, s.trials());
        assertEquals(2, s.min());
        assertEquals(4, s.median());
        assertEquals(6, s.max());
        assertEquals(4, s.mean());
        assertEquals(0.5, s.cv(), 1e-12); // sample stdev 2 over mean 4
        assertEquals(5, TrialStats.of(6, 4, 2, 8).median());
        assertEquals(0, TrialStats.of(7).cv());
        assertEquals(0, TrialStats.of(0, 0).cv());
        assertThrows(IllegalArgumentException.class, TrialStats::of);
    }
}
