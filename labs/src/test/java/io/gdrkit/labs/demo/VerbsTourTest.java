/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class VerbsTourTest {
    @Test
    void everyOpcodeAndFlagPassesAndEachStepIsReportedAsItFinishes() {
        final List<VerbsTour.Step> heard = new ArrayList<>();
        final List<String> setup = new ArrayList<>();
        final VerbsTour.Result r = VerbsTour.run(s -> {
            assertTrue(heard.isEmpty(), "the setup comes before the first step");
            setup.add(s);
        }, heard::add);
        assertEquals(r.steps(), heard);
        assertEquals(List.of(r.setup()), setup);
        assertEquals(10, r.steps().size());
        assertTrue(r.allPassed(), r::toString);
        assertEquals(10, r.passed());
        for (final String op : List.of("RDMA_WRITE ", "INLINE", "FENCE", "SOLICITED", "RDMA_WRITE_WITH_IMM",
            "SEND ", "SEND_WITH_IMM", "RDMA_READ", "ATOMIC_FETCH_AND_ADD", "ATOMIC_CMP_AND_SWP", "unsignaled")) {
            assertTrue(r.steps().stream().anyMatch(s -> s.name().contains(op)), () -> "no step with " + op);
        }
        assertTrue(r.setup().contains("in RTS, MTU 4096"), r.setup());
        final VerbsTour.Step atomic = r.steps().get(8);
        assertEquals("ATOMIC_FETCH_AND_ADD", atomic.name());
        assertTrue(atomic.detail().endsWith("fetched 40, remote 40 -> 42"), atomic.detail());
    }
}
