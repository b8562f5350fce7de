/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OrderingCommandTest {
    @Test
    void oneLinePerVariantEachSayingSimulated() {
        final Cli r = Cli.run("ordering", "--variants", "two-qp,one-qp,imm,fence,completion", "--trials", "200",
            "--seed", "3");
        assertEquals(0, r.exitCode(), r.toString());
        final List<String> lines = r.lines();
        assertEquals(6, lines.size(), r.toString());
        for (final String l : lines) {
            assertTrue(l.contains(OrderingCommand.SIM), l);
        }
        assertTrue(lines.get(0).startsWith("# ordering"), lines.get(0));
        assertTrue(lines.get(1).startsWith("variant=two-qp") && lines.get(1).contains("verdict=CORRUPTED"),
            lines.get(1));
        for (final String l : lines.subList(2, 6)) {
            assertTrue(l.contains(" corrupted_reads=0 ") && l.contains("verdict=PASS"), l);
            assertTrue(l.contains(" first_corrupted_trial=none "), "no corrupted trial reads none: " + l);
        }
    }

    @Test
    void expectMakesTheOutcomeCheckableExitOneOnAMismatch() {
        // seed 3, 200 trials: two-qp reads corrupted data, one-qp none (as oneLinePerVariantEachSayingSimulated shows)
        final String[] base = {"ordering", "--variants", "two-qp,one-qp", "--trials", "200", "--seed", "3"};
        final Cli met = Cli.run(concat(base, "--expect", "two-qp=corrupt,one-qp=clean"));
        assertEquals(0, met.exitCode(), met::toString);
        assertEquals("", met.err(), met::toString);
        final Cli unmet = Cli.run(concat(base, "--expect", "two-qp=clean,one-qp=clean,imm=clean"));
        assertEquals(1, unmet.exitCode(), unmet::toString);
        assertEquals(3, unmet.lines().size(), "every row still printed: " + unmet);
        assertTrue(unmet.err().matches("gdrkit ordering: --expect not met: two-qp expected clean, got corrupt \\(\\d+ "
            + "corrupted reads\\); imm expected but not run \\(add it to --variants\\)\n"), unmet::toString);
        final Cli bad = Cli.run(concat(base, "--expect", "two-qp=maybe"));
        assertEquals(2, bad.exitCode(), bad::toString);
        assertTrue(bad.err().startsWith("gdrkit ordering: --expect 'two-qp=maybe': the outcome is corrupt or clean\n"),
            bad::toString);
        final Cli badVariant = Cli.run(concat(base, "--expect", "three-qp=clean"));
        assertEquals(2, badVariant.exitCode(), badVariant::toString);
        assertTrue(badVariant.err().startsWith("gdrkit ordering: --expect 'three-qp=clean': VARIANT=corrupt|clean "
            + "with VARIANT one of two-qp, "), badVariant::toString);
        assertEquals("", bad.out() + badVariant.out(), "a usage error runs nothing");
    }

    private static String[] concat(final String[] a, final String... b) {
        final String[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    @Test
    void reportFolderHasOneRowPerVariant(@TempDir final Path dir) throws Exception {
        final Cli r = Cli.run("ordering", "--variants", "two-qp,one-qp", "--trials", "100", "--report",
            dir.toString());
        assertEquals(0, r.exitCode(), r.toString());
        assertEquals("# report: " + dir.resolve("report.html").toAbsolutePath(), r.lines().get(r.lines().size() - 1));
        final JsonNode rows = new ObjectMapper().readTree(Files.readString(dir.resolve("report.json")))
            .get("sections").get(0).get("rows");
        assertEquals(2, rows.size());
        assertTrue(rows.get(1).get("first_corrupted_trial").isNull(), "one-qp has none: " + rows.get(1));
        final String md = Files.readString(dir.resolve("report.md"));
        assertTrue(md.contains("| none |") && !md.contains("| -1 |"), md);
        assertEquals("two-qp", rows.get(0).get("variant").asText());
        assertEquals(0, rows.get(1).get("corrupted_reads").asInt());
        assertTrue(Files.readString(dir.resolve("report.html")).contains("<svg"));
    }

    @Test
    void jsonHasTheReportFieldsAndReplaysFromTheSeed() throws Exception {
        final String[] args = {"ordering", "--variants", "two-qp,imm", "--trials", "150", "--reorder", "0.1",
            "--seed", "9", "--json"};
        final Cli r = Cli.run(args);
        assertEquals(0, r.exitCode(), r.toString());
        assertEquals(r.out(), Cli.run(args).out(), "same seed, same output");
        final List<String> lines = r.lines();
        assertEquals(2, lines.size(), r.toString());
        final ObjectMapper m = new ObjectMapper();
        for (final String l : lines) {
            final JsonNode o = m.readTree(l);
            for (final String f : new String[] {"variant", "trials", "corrupted_reads", "first_corrupted_trial",
                "reorder", "verdict", "reordered_packets", "seed", "size"}) {
                assertTrue(o.has(f), f + " missing in " + l);
            }
            assertTrue(o.get("simulated").asBoolean(), l);
            assertEquals(150, o.get("trials").asInt());
            assertEquals(0.1, o.get("reorder").asDouble());
        }
        assertEquals("two-qp", m.readTree(lines.get(0)).get("variant").asText());
        assertTrue(m.readTree(lines.get(0)).get("corrupted_reads").asInt() > 0, lines.get(0));
        assertEquals(0, m.readTree(lines.get(1)).get("corrupted_reads").asInt(), lines.get(1));
    }

    @Test
    void badOptionsGiveOneClearLineAndExit2() {
        final String[][] bad = {
            {"--variants", "two-qp,three-qp"}, {"--trials", "0"}, {"--trials", "many"}, {"--size", "0"},
            {"--size", "2000000"}, {"--reorder", "1.5"}, {"--reorder", "-0.1"}, {"--reorder-us", "-1"},
            {"--seed", "x"},
        };
        final String[] expect = {"--variants", "--trials", "--trials", "--size", "--size", "--reorder", "--reorder",
            "--reorder-us", "--seed"};
        for (int i = 0; i < bad.length; i++) {
            final Cli r = Cli.run("ordering", bad[i][0], bad[i][1]);
            assertEquals(2, r.exitCode(), r.toString());
            assertTrue(r.err().contains(expect[i]), r.toString());
            assertEquals("", r.out(), "nothing runs: " + r);
        }
    }
}
