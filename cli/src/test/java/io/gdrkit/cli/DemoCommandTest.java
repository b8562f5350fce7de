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
            "== 4. a GDR transfer", "== 5. visibility", "== 6. ordering lab", "== 7. perf", "== 8. collectives")) {
            assertTrue(lines.stream().anyMatch(l -> l.startsWith(section)), () -> section + " missing: " + r);
        }
        assertEquals(10, lines.stream().filter(l -> l.startsWith("[ok]")).count(), r::toString);
        // the demo's sentences about CQ events are the capabilities the tour observed (VerbsTourTest: both), and no
        // stale "not modelled" line survives beside them
        final int passed = lines.indexOf("verbs: 10/10 steps passed");
        assertEquals(new io.gdrkit.labs.demo.VerbsTour.Capabilities(true, true).claims().stream()
            .map(c -> "verbs: " + c).toList(), lines.subList(passed + 1, passed + 3), r::toString);
        assertTrue(lines.stream().noneMatch(l -> l.contains("event notification is not modelled")), r::toString);
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
        // section 8: coll's own rows, one per size 8 B .. 2 MiB, in nccl-tests' columns
        assertTrue(page.contains("<th>busbw(GB/s)</th><th>#wrong</th><th>in-place time(us)</th>"), page);
        assertTrue(page.contains("<td class=\"n\">2097152</td><td class=\"n\">524288</td><td>float</td><td>sum</td>"),
            page);
        assertTrue(count(page, "<svg ") >= 5, "charts: visibility, ordering, GDR vs bounce, write_bw, allreduce busbw");
        assertTrue(page.contains("allreduce busbw by message size"), "section 8 has its chart");
        // the table of contents: every section numbered by its own name, once ("4. GDR ...", never "4. 4. GDR")
        final String nav = page.substring(page.indexOf("<nav>"), page.indexOf("</nav>"));
        assertFalse(nav.contains("<ol>"), nav);
        for (final String n : List.of("1. ", "2-3. ", "2b. ", "4. ", "5. Visibility", "6. Ordering", "7. ", "8. ")) {
            assertTrue(nav.contains("\">" + n), n + " in " + nav);
        }
        // numbers as fixed decimals (busbw of 8 B is tiny), "nothing failed" as none, not -1
        final String tables = page.replaceAll("<svg[\\s\\S]*?</svg>", "").replaceAll("<style>[\\s\\S]*?</style>", "");
        assertFalse(java.util.regex.Pattern.compile(">-?\\d+(\\.\\d+)?[eE][-+]?\\d+<").matcher(tables).find(), page);
        assertFalse(tables.contains("<td class=\"n\">-1</td>"), page);
        assertTrue(tables.contains("<td class=\"n\">none</td>"), page);
        assertTrue(Files.exists(dir.resolve("report.json")) && Files.exists(dir.resolve("report.md")));
        final String summary = lines.get(lines.size() - 1);
        assertTrue(summary.startsWith("summary: every check as expected"), summary);
        assertTrue(summary.contains("simulated"), summary);
    }

    /** Section 8's checks on coll's rows: a wrong element, a missing size or another fabric each fail it. */
    @Test
    void theCollectivesSectionFailsOnAWrongElementAMissingSizeOrAnotherFabric() throws Exception {
        final com.fasterxml.jackson.databind.ObjectMapper m = new com.fasterxml.jackson.databind.ObjectMapper();
        final java.util.function.BiFunction<Long, String, com.fasterxml.jackson.databind.JsonNode> row = (bytes, fab) ->
            m.createObjectNode().put("op", "all_reduce").put("bytes", bytes).put("count", bytes / 4).put("np", 2)
                .put("fabric", fab).put("simulated", true).put("wrong", 0).put("inplace_wrong", 0)
                .put("type", "float").put("redop", "sum");
        final List<com.fasterxml.jackson.databind.JsonNode> good = new java.util.ArrayList<>();
        for (long b = 8; b <= 2097152; b *= 8) {
            good.add(row.apply(b, "shm"));
        }
        assertEquals(0, check(good), "7 clean rows over shm pass");
        final List<com.fasterxml.jackson.databind.JsonNode> wrong = new java.util.ArrayList<>(good);
        wrong.set(3, ((com.fasterxml.jackson.databind.node.ObjectNode) row.apply(4096L, "shm")).put("inplace_wrong",
            5));
        assertEquals(1, check(wrong), "one row with wrong elements");
        assertEquals(1, check(good.subList(0, 6)), "a size missing");
        final List<com.fasterxml.jackson.databind.JsonNode> tcp = new java.util.ArrayList<>(good);
        tcp.set(0, row.apply(8L, "tcp"));
        assertEquals(1, check(tcp), "another fabric");
        assertEquals(3, check(List.of()), "no rows at all fails every check");
    }

    private static int check(final List<com.fasterxml.jackson.databind.JsonNode> rows) {
        final DemoCommand d = new DemoCommand();
        d.out = new java.io.PrintWriter(new java.io.StringWriter());
        return d.collectivesChecked(rows, new io.gdrkit.labs.report.Report("t").section("s").table(
            DemoCommand.COLL_COLUMNS));
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
