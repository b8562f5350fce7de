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

class VisibilityCommandTest {
    @Test
    void expectMakesTheOutcomeTheExitCode() {
        final String[] run = {"visibility", "--gpu", "sim:v100", "--readback", "off,on", "--size", "8K", "--rounds",
            "4", "--seed", "5", "--fabric", "jvm"};
        final Cli met = Cli.run(concat(run, "--expect", "off=fail,on=pass"));
        assertEquals(0, met.exitCode(), met.toString());
        final Cli unmet = Cli.run(concat(run, "--expect", "off=pass"));
        assertEquals(1, unmet.exitCode(), unmet.toString());
        assertTrue(unmet.err().startsWith("gdrkit visibility: --expect not met: readback=off gpu=sim:v100 expected "
            + "pass, got fail ("), unmet.toString());
        final Cli notRun = Cli.run(concat(run, "--expect", "flush=pass"));
        assertEquals(1, notRun.exitCode(), notRun.toString());
        assertTrue(notRun.err().contains("readback=flush expected but not run (add it to --readback)"),
            notRun.toString());
        final Cli bad = Cli.run(concat(run, "--expect", "off=maybe"));
        assertEquals(2, bad.exitCode(), bad.toString());
        assertTrue(bad.err().contains("--expect 'off=maybe': the outcome is pass or fail"), bad.toString());
    }

    private static String[] concat(final String[] a, final String... b) {
        final String[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    @Test
    void textSaysSimulatedOnEveryLineAndShowsTheFailableBaseline() {
        final Cli r = Cli.run("visibility", "--gpu", "sim:v100", "--readback", "off,on", "--size", "8K",
            "--rounds", "4", "--seed", "5", "--fabric", "jvm");
        assertEquals(0, r.exitCode(), r.toString());
        final List<String> lines = r.lines();
        assertEquals(3, lines.size(), r.toString());
        for (final String l : lines) {
            assertTrue(l.contains("simulated"), l);
        }
        assertTrue(lines.get(0).contains("sender thread(s)") && lines.get(0).contains("notifications over TCP"),
            lines.get(0));
        assertTrue(lines.get(1).contains("readback=off") && lines.get(1).contains(" FAIL "), lines.get(1));
        assertTrue(lines.get(2).contains("readback=on") && lines.get(2).contains("failures=0 ")
            && lines.get(2).contains(" PASS "), lines.get(2));
    }

    @Test
    void jsonHasOneObjectPerConfigurationWithTheReportFields() throws Exception {
        final Cli r = Cli.run("visibility", "--gpu", "sim:v100,sim:h200", "--consumer", "launch,persistent",
            "--flag", "receiver,sender-same-qp", "--readback", "off", "--wr-split", "16", "--size", "4096",
            "--rounds", "3", "--senders", "2", "--fabric", "jvm", "--json");
        assertEquals(0, r.exitCode(), r.toString());
        final List<String> lines = r.lines();
        // launch x sender-same-qp is skipped (a launched kernel reads no flag): 2 GPUs x 3 combinations
        assertEquals(6, lines.size(), r.toString());
        final ObjectMapper m = new ObjectMapper();
        for (final String l : lines) {
            final JsonNode o = m.readTree(l);
            for (final String f : new String[] {"gpu", "ordering", "consumer", "flag", "readback", "wr_split", "size",
                "senders", "rounds", "failures", "first_failing_round", "first_failing_position", "what",
                "sync_memops", "refill", "source", "error_completions", "launch_failures", "processes", "round_us_median",
                "readback_us_median"}) {
                assertTrue(o.has(f), f + " missing in " + l);
            }
            assertTrue(o.get("simulated").asBoolean());
            assertTrue(o.get("round_us_median").asDouble() > 0, l);
            assertTrue(o.get("readback_us_median").asDouble() >= 0, l);
            assertEquals(2, o.get("senders").asInt());
            assertEquals(16, o.get("wr_split").asInt());
            final boolean shouldFail = o.get("gpu").asText().equals("sim:v100")
                && o.get("consumer").asText().equals("persistent");
            assertEquals(shouldFail, o.get("failures").asInt() > 0, l);
        }
    }

    @Test
    void skippedWriteIsReportedAsStale() throws Exception {
        final Cli r = Cli.run("visibility", "--gpu", "sim:h200", "--readback", "off", "--size", "4096",
            "--rounds", "5", "--inject", "skip-write@3", "--fabric", "jvm", "--json");
        assertEquals(0, r.exitCode(), r.toString());
        final JsonNode o = new ObjectMapper().readTree(r.lines().get(0));
        assertEquals(1, o.get("failures").asInt());
        assertEquals(3, o.get("first_failing_round").asInt());
        assertEquals("stale", o.get("what").asText());
        assertEquals(1, o.get("failures_told_senders").asInt());
    }

    @Test
    void refillMakesTheSyncMemopsAxisDifferOnTheSimulatedGpu() throws Exception {
        final Cli r = Cli.run("visibility", "--gpu", "sim:h200", "--consumer", "launch", "--readback", "off",
            "--size", "4096", "--rounds", "3", "--sync-memops", "0,1", "--refill", "--fabric", "jvm", "--json");
        assertEquals(0, r.exitCode(), r.toString());
        assertEquals(2, r.lines().size(), r.toString());
        final ObjectMapper m = new ObjectMapper();
        final JsonNode off = m.readTree(r.lines().get(0));
        final JsonNode on = m.readTree(r.lines().get(1));
        assertEquals(0, off.get("sync_memops").asInt());
        assertEquals(1, off.get("refill").asInt());
        assertEquals(3, off.get("failures").asInt(), off.toString());
        assertEquals("stale", off.get("what").asText());
        assertEquals(1, off.get("first_failing_round").asInt());
        assertEquals(1, on.get("sync_memops").asInt());
        assertEquals(0, on.get("failures").asInt(), on.toString());
        final Cli text = Cli.run("visibility", "--gpu", "sim:h200", "--consumer", "launch", "--size", "4096",
            "--rounds", "2", "--refill", "--fabric", "jvm", "--no-progress");
        assertTrue(text.lines().stream().anyMatch(l -> l.contains(" refill=1 ") && l.contains("what=stale")),
            text.toString());
    }

    @Test
    void reportFolderHasOneRowPerConfigurationAndAFailuresChart(@TempDir final Path dir) throws Exception {
        final Cli r = Cli.run("visibility", "--gpu", "sim:v100", "--readback", "off,on", "--size", "4096",
            "--rounds", "3", "--fabric", "jvm", "--report", dir.toString(), "--no-progress");
        assertEquals(0, r.exitCode(), r.toString());
        final String last = r.lines().get(r.lines().size() - 1);
        assertEquals("# report: " + dir.resolve("report.html").toAbsolutePath(), last);
        final JsonNode json = new ObjectMapper().readTree(Files.readString(dir.resolve("report.json")));
        assertTrue(json.get("simulated").asBoolean());
        final JsonNode rows = json.get("sections").get(0).get("rows");
        assertEquals(2, rows.size(), json.toString());
        assertEquals("off", rows.get(0).get("readback").asText());
        assertEquals("FAIL", rows.get(0).get("verdict").asText());
        assertEquals("PASS", rows.get(1).get("verdict").asText());
        assertTrue(Files.readString(dir.resolve("report.html")).contains("<svg"));
        assertEquals("", r.err(), "no progress lines with --no-progress");
    }

    @Test
    void sendersInSeparateProcessesByDefault() {
        final Cli r = Cli.run("visibility", "--gpu", "sim:h200", "--readback", "off", "--size", "4096",
            "--rounds", "2");
        assertEquals(0, r.exitCode(), r.toString());
        assertTrue(r.lines().get(0).contains("1 sender process(es), shm fabric"), r.toString());
        assertTrue(r.lines().get(1).contains(" PASS "), r.toString());
    }

    @Test
    void badOptionsGiveOneClearLineAndExit2() {
        final String[][] bad = {
            {"--flag", "bogus"}, {"--readback", "sometimes"}, {"--wr-split", "3"}, {"--gpu", "sim:a100"},
            {"--gpu", "gpu0"}, {"--size", "lots"}, {"--consumer", "kernel"}, {"--inject", "skip-write@99"},
            {"--senders", "200"}, {"--sync-memops", "2"}, {"--source", "disk"}, {"--poll", "plain"},
            {"--fabric", "udp"}, {"--inject", "melt"},
        };
        final String[] expect = {"--flag must be one of", "--readback must be one of",
            "--wr-split must be 1, 16 or 256", "'sim:a100' names no simulated GPU", "'gpu0' is not a GPU",
            "'lots' is not a byte count (e.g. 8, 64K, 16M, 1G)",
            "--consumer must be one of", "beyond --rounds", "--senders must be", "--sync-memops must be",
            "--source must be", "--poll plain is a CUDA experiment",
            "Invalid value for option '--fabric': 'udp' is not one of injvm, shm, tcp", "--inject must be"};
        for (int i = 0; i < bad.length; i++) {
            final Cli r = Cli.run("visibility", bad[i][0], bad[i][1], "--rounds", "2");
            assertEquals(2, r.exitCode(), r.toString());
            assertTrue(r.err().contains(expect[i]), r.toString());
            assertEquals("", r.out(), "nothing runs: " + r);
        }
        final Cli launchOnly = Cli.run("visibility", "--consumer", "launch", "--flag", "sender-same-qp");
        assertEquals(2, launchOnly.exitCode(), launchOnly.toString());
        assertTrue(launchOnly.err().contains("reads no flag"), launchOnly.toString());
        if (!io.gdrkit.gpu.cuda.CudaGpu.probe().found()) {
            final Cli cuda = Cli.run("visibility", "--gpu", "cuda:0", "--rounds", "2");
            assertEquals(Main.EXIT_NO_HARDWARE, cuda.exitCode(), cuda.toString());
            assertTrue(cuda.err().contains("--gpu cuda:0: this host has no CUDA GPU"), cuda.toString());
            assertEquals("", cuda.out(), "no process started: " + cuda);
        }
        final Cli sender = Cli.run("visibility-sender", "--connect", "nohost");
        assertEquals(2, sender.exitCode(), sender.toString());
        assertTrue(sender.err().contains("host:port"), sender.toString());
    }
}
