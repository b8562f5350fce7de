/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PacedIdleStrategyTest {

    @Test
    void plainParksThePeriodAfterEveryCycleWorkOrNot() {
        final List<Long> parks = new ArrayList<>();
        final PacedIdleStrategy s = new PacedIdleStrategy(200_000, false, parks::add);
        s.idle(0);
        s.idle(5);
        s.idle(1);
        assertEquals(List.of(200_000L, 200_000L, 200_000L), parks);
        assertFalse(s.followsWork());
    }

    @Test
    void followingWorkParksOnlyAfterCyclesThatFoundNone() {
        final List<Long> parks = new ArrayList<>();
        final PacedIdleStrategy s = new PacedIdleStrategy(200_000, true, parks::add);
        s.idle(3);
        s.idle(1);
        assertEquals(List.of(), parks, "cycles that found work step again at once");
        s.idle(0);
        assertEquals(List.of(200_000L), parks);
        s.idle(7);
        s.idle(0);
        assertEquals(List.of(200_000L, 200_000L), parks);
        assertTrue(s.followsWork());
    }

    @Test
    void aPeriodThatIsNotPositiveIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new PacedIdleStrategy(0, true));
        assertThrows(IllegalArgumentException.class, () -> new PacedIdleStrategy(-1));
    }
}
