/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class DemoCommandTest {
    @Test
    void demoPassesEveryStep() {
        final Cli r = Cli.run("demo");
        assertEquals(0, r.exitCode(), r::toString);
        final List<String> lines = r.lines();
        assertEquals(Loopback.SIMULATED_HEADER, lines.get(0));
        assertTrue(lines.get(1).startsWith("setup: soft0"), r::toString);
        final List<String> steps = lines.stream().filter(l -> l.startsWith("[")).toList();
        assertEquals(10, steps.size(), r::toString);
        for (final String s : steps) {
            assertTrue(s.startsWith("[ok]"), s);
        }
        for (final String op : List.of("RDMA_WRITE ", "INLINE", "FENCE", "SOLICITED", "RDMA_WRITE_WITH_IMM",
            "SEND ", "SEND_WITH_IMM", "RDMA_READ", "ATOMIC_FETCH_AND_ADD", "ATOMIC_CMP_AND_SWP", "unsignaled")) {
            assertTrue(steps.stream().anyMatch(s -> s.contains(op)), () -> "no step with " + op);
        }
        final String summary = lines.get(lines.size() - 1);
        assertTrue(summary.startsWith("summary: 10/10 steps passed"), summary);
        assertTrue(summary.contains("simulated"), summary);
        assertEquals("", r.err());
    }

    @Test
    void devicesSaySimulated() {
        final Cli r = Cli.run("devices");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(Loopback.SIMULATED_HEADER, r.lines().get(0));
        final List<String> devs = r.lines().stream().filter(l -> l.startsWith("soft")).toList();
        assertEquals(2, devs.size(), r::toString);
        devs.forEach(d -> assertTrue(d.contains("software NIC (simulated)"), d));
    }

    @Test
    void versionAndHelp() {
        final Cli v = Cli.run("--version");
        assertEquals(0, v.exitCode());
        assertTrue(v.out().contains("simulated"), v::toString);
        final Cli h = Cli.run("--help");
        assertEquals(0, h.exitCode());
        for (final String c : List.of("demo", "perf", "devices")) {
            assertTrue(h.out().contains(c), h::toString);
        }
    }
}
