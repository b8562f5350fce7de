/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import org.junit.jupiter.api.Test;

class VisibilityCommandTest {
    @Test
    void textSaysSimulatedOnEveryLineAndShowsTheFailableBaseline() {
        final Cli r = Cli.run("visibility", "--gpu", "sim:v100", "--readback", "off,on", "--size", "8K",
            "--rounds", "4", "--seed", "5");
        assertEquals(0, r.exitCode(), r.toString());
        final List<String> lines = r.lines();
        assertEquals(3, lines.size(), r.toString());
        for (final String l : lines) {
            assertTrue(l.contains("simulated"), l);
        }
        assertTrue(lines.get(0).contains("one process"), lines.get(0));
        assertTrue(lines.get(1).contains("readback=off") && lines.get(1).contains(" FAIL "), lines.get(1));
        assertTrue(lines.get(2).contains("readback=on") && lines.get(2).contains("failures=0 ")
            && lines.get(2).contains(" PASS "), lines.get(2));
    }

    @Test
    void jsonHasOneObjectPerConfigurationWithTheReportFields() throws Exception {
        final Cli r = Cli.run("visibility", "--gpu", "sim:v100,sim:h200", "--consumer", "launch,persistent",
            "--readback", "off", "--wr-split", "16", "--size", "4096", "--rounds", "3", "--json");
        assertEquals(0, r.exitCode(), r.toString());
        final List<String> lines = r.lines();
        assertEquals(4, lines.size(), r.toString());
        final ObjectMapper m = new ObjectMapper();
        for (final String l : lines) {
            final JsonNode o = m.readTree(l);
            for (final String f : new String[] {"gpu", "ordering", "consumer", "flag", "readback", "wr_split", "size",
                "senders", "rounds", "failures", "first_failing_round", "first_failing_position", "what"}) {
                assertTrue(o.has(f), f + " missing in " + l);
            }
            assertTrue(o.get("simulated").asBoolean());
            assertEquals(1, o.get("senders").asInt());
            assertEquals(16, o.get("wr_split").asInt());
            assertEquals("receiver", o.get("flag").asText());
            final boolean shouldFail = o.get("gpu").asText().equals("sim:v100")
                && o.get("consumer").asText().equals("persistent");
            assertEquals(shouldFail, o.get("failures").asInt() > 0, l);
        }
    }

    @Test
    void skippedWriteIsReportedAsStale() throws Exception {
        final Cli r = Cli.run("visibility", "--gpu", "sim:h200", "--readback", "off", "--size", "4096",
            "--rounds", "5", "--skip-write-round", "3", "--json");
        assertEquals(0, r.exitCode(), r.toString());
        final JsonNode o = new ObjectMapper().readTree(r.lines().get(0));
        assertEquals(1, o.get("failures").asInt());
        assertEquals(3, o.get("first_failing_round").asInt());
        assertEquals("stale", o.get("what").asText());
    }

    @Test
    void badOptionsGiveOneClearLineAndExit2() {
        final String[][] bad = {
            {"--flag", "imm"}, {"--flag", "bogus"}, {"--readback", "sometimes"}, {"--wr-split", "3"},
            {"--gpu", "sim:a100"}, {"--gpu", "cuda:0"}, {"--size", "lots"}, {"--consumer", "kernel"},
            {"--skip-write-round", "99"},
        };
        final String[] expect = {"not supported yet", "--flag must be one of", "--readback must be one of",
            "--wr-split must be 1, 16 or 256", "unknown simulated GPU", "simulated GPUs only", "--size must be",
            "--consumer must be one of", "--skip-write-round"};
        for (int i = 0; i < bad.length; i++) {
            final Cli r = Cli.run("visibility", bad[i][0], bad[i][1], "--rounds", "2");
            assertEquals(2, r.exitCode(), r.toString());
            assertTrue(r.err().contains(expect[i]), r.toString());
            assertEquals("", r.out(), "nothing runs: " + r);
        }
    }
}
