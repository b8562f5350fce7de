/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.perf.Loopback;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
        // each section is checked from its lab's records (VerbsTourTest, DoctorLabTest, GpuPathLabTest,
        // ShmLoopbackPerfTest assert on them); here: every section ran and every check came out as expected
        for (final String section : List.of("== 1. verbs", "== 2. doctor", "== 3. GDR decision",
            "== 4. a GDR transfer", "== 5. visibility", "== 6. ordering lab", "== 7. perf")) {
            assertTrue(lines.stream().anyMatch(l -> l.startsWith(section)), () -> section + " missing: " + r);
        }
        assertEquals(10, lines.stream().filter(l -> l.startsWith("[ok]")).count(), r::toString);
        assertTrue(lines.stream().noneMatch(l -> l.startsWith("[FAIL]") || l.startsWith("  FAIL   ")), r::toString);
        assertTrue(lines.stream().filter(l -> l.startsWith("  PASS   ")).count() >= 15, r::toString);
        final String report = lines.stream().filter(l -> l.startsWith("report: ")).findFirst().orElseThrow();
        final Path html = Path.of(report.substring("report: ".length()));
        assertEquals(dir.resolve("report.html").toAbsolutePath(), html);
        final String page = Files.readString(html);
        assertTrue(page.contains("<svg") && page.contains("Visibility") && page.contains("Ordering"), page);
        // the records as real tables: the doctor's checklist with its status coloured, perf in perftest's columns
        // (one header row per table, none repeated as data), charts where they read better
        assertTrue(page.contains("<thead><tr><th>layer</th><th>check</th><th>status</th><th>evidence</th></tr>"),
            page);
        assertTrue(page.contains("<td class=\"st st-pass\">PASS</td>"), page);
        assertTrue(page.contains("<th>setting</th><th>value</th><th>source</th><th>effect</th>"), page);
        assertEquals(1, count(page, "<th>BW peak[MiB/sec]</th>"), "bandwidth columns once");
        assertEquals(1, count(page, "<th>99.9% percentile[usec]</th>"), "latency columns once");
        assertFalse(page.contains("<td>#bytes"), "no header line repeated as a row");
        assertTrue(page.contains("<td class=\"st st-pass\">byte-exact</td>"), page);
        assertTrue(count(page, "<svg ") >= 4, "charts: visibility, ordering, GDR vs bounce, write_bw");
        assertTrue(Files.exists(dir.resolve("report.json")) && Files.exists(dir.resolve("report.md")));
        final String summary = lines.get(lines.size() - 1);
        assertTrue(summary.startsWith("summary: every check as expected"), summary);
        assertTrue(summary.contains("simulated"), summary);
    }

    private static int count(final String text, final String what) {
        int n = 0;
        for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + 1)) {
            n++;
        }
        return n;
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
