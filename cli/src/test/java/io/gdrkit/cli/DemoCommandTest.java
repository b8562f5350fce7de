/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.perf.Loopback;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DemoCommandTest {
    @Test
    void demoShowsEverySectionAsExpectedAndWritesItsReport(@TempDir final Path dir) throws Exception {
        final Cli r = Cli.run("demo", "--report", dir.toString());
        assertEquals(0, r.exitCode(), r::toString);
        final List<String> lines = r.lines();
        assertEquals(Loopback.SIMULATED_HEADER, lines.get(0));
        assertTrue(lines.get(1).contains("simulated GPUs"), r::toString);
        // 1. verbs: every opcode and flag, byte-checked
        final List<String> steps = lines.stream().filter(l -> l.startsWith("[")).toList();
        assertEquals(10, steps.size(), r::toString);
        for (final String s : steps) {
            assertTrue(s.startsWith("[ok]"), s);
        }
        for (final String op : List.of("RDMA_WRITE ", "INLINE", "FENCE", "SOLICITED", "RDMA_WRITE_WITH_IMM",
            "SEND ", "SEND_WITH_IMM", "RDMA_READ", "ATOMIC_FETCH_AND_ADD", "ATOMIC_CMP_AND_SWP", "unsignaled")) {
            assertTrue(steps.stream().anyMatch(s -> s.contains(op)), () -> "no step with " + op);
        }
        for (final String section : List.of("== 2. doctor", "== 3. GDR decision", "== 4. a GDR transfer",
            "== 5. visibility", "== 6. ordering lab", "== 7. perf")) {
            assertTrue(lines.stream().anyMatch(l -> l.startsWith(section)), () -> section + " missing: " + r);
        }
        final List<String> checks = lines.stream().filter(l -> l.startsWith("  PASS   ") || l.startsWith("  FAIL   "))
            .toList();
        assertTrue(checks.size() >= 15, r::toString);
        checks.forEach(c -> assertTrue(c.startsWith("  PASS"), c));
        assertTrue(lines.stream().anyMatch(l -> l.contains("verdict: GDR_READY (simulated)")), r::toString);
        assertTrue(lines.stream().anyMatch(l -> l.contains("via NET/IB/") && l.contains("GDRDMA")), r::toString);
        // the failable baseline: OFF fails, ON passes (each line says what was expected)
        assertTrue(lines.stream().anyMatch(l -> l.contains("persistent readback=off") && l.contains("-> FAIL")
            && l.contains("(expected fail)")), r::toString);
        assertTrue(lines.stream().anyMatch(l -> l.contains("persistent readback=on") && l.contains("-> PASS")),
            r::toString);
        assertTrue(lines.stream().anyMatch(l -> l.contains("sender process(es), shm fabric")), r::toString);
        assertTrue(lines.stream().anyMatch(l -> l.contains("two-qp") && l.contains("CORRUPTED")), r::toString);
        assertTrue(lines.stream().anyMatch(l -> l.strip().startsWith("write_bw  #bytes")), r::toString);
        final String report = lines.stream().filter(l -> l.startsWith("report: ")).findFirst().orElseThrow();
        final Path html = Path.of(report.substring("report: ".length()));
        assertEquals(dir.resolve("report.html").toAbsolutePath(), html);
        final String page = Files.readString(html);
        assertTrue(page.contains("<svg") && page.contains("Visibility") && page.contains("Ordering"), page);
        assertTrue(Files.exists(dir.resolve("report.json")) && Files.exists(dir.resolve("report.md")));
        final String summary = lines.get(lines.size() - 1);
        assertTrue(summary.startsWith("summary: every check as expected"), summary);
        assertTrue(summary.contains("simulated"), summary);
    }

    @Test
    void devicesListSoftNicsOnlyWhenAskedAndSaySimulated() {
        final Cli r = Cli.run("devices", "--soft", "2");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.lines().get(0).startsWith("# native provider (libibverbs, FFM): "), r::toString);
        assertTrue(r.out().contains(Loopback.SIMULATED_HEADER + ": 2 started here because --soft asked"), r::toString);
        final List<String> devs = r.lines().stream().filter(l -> l.startsWith("soft")).toList();
        assertEquals(2, devs.size(), r::toString);
        devs.forEach(d -> assertTrue(d.contains("software NIC (simulated)") && d.contains("link_layer"), d));
        final Cli plain = Cli.run("devices");
        assertTrue(plain.lines().stream().noneMatch(l -> l.startsWith("soft")), plain::toString);
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
