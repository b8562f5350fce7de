/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** gdrkit model: inputs, coefficients and held-back error printed, from files and live; bad input named. */
class ModelCommandTest {
    @TempDir
    Path dir;

    @Test
    void qpsFromRecordedLinesPrintsInputsFitAndHeldBackError() throws IOException {
        final Path f = dir.resolve("q.jsonl");
        final StringBuilder sb = new StringBuilder();
        for (final int q : new int[] {1, 2, 4, 8}) {
            // 1/bw = 1e-4 + 2e-4/q exactly: the held-back 8 is predicted with no error
            sb.append("{\"test\":\"write_bw\",\"fabric\":\"injvm\",\"qps\":").append(q)
                .append(",\"bytes\":65536,\"bw_avg_mib_s\":").append(1 / (1e-4 + 2e-4 / q)).append("}\n");
        }
        Files.writeString(f, sb);
        final Cli r = Cli.run("model", "qps", "--input", f.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().contains("held back: QPs 8 measured 8000.0 MiB/s, predicted 8000.0 MiB/s, error +0.0 %"),
            r::toString);
        assertTrue(r.out().contains("saturates at 10000.00 MiB/s (1/a); half of it at 2.00 QPs (b/a)"), r::toString);
        final Cli j = Cli.run("model", "qps", "--input", f.toString(), "--json");
        assertEquals(0, j.exitCode(), j::toString);
        final JsonNode o = new ObjectMapper().readTree(j.out());
        assertEquals("qps", o.get("model").asText());
        assertEquals(4, o.get("inputs").size());
        assertEquals(8, o.get("held_back").get("x").asInt());
        assertEquals(0.0, o.get("held_back").get("relative_error").asDouble(), 1e-4);
        assertTrue(o.get("simulated").asBoolean());
    }

    @Test
    void crossoverAndTopologyFromAGpuPathTable() throws IOException {
        final Path f = dir.resolve("g.txt");
        final StringBuilder sb = new StringBuilder("#path   bytes      iters  MiB/s      check\n");
        for (final long s : new long[] {65536, 1 << 20, 4 << 20}) {
            sb.append(String.format(java.util.Locale.ROOT, "gdr %d 10 %.6f byte-exact%n", s,
                s / (5e-6 + s / 2e9) / (1 << 20)));
            sb.append(String.format(java.util.Locale.ROOT, "bounce %d 10 %.6f byte-exact%n", s,
                s / (40e-6 + s / 8e9) / (1 << 20)));
        }
        Files.writeString(f, sb);
        final Cli r = Cli.run("model", "crossover", "--input", f.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().contains("hybrid threshold: use gdr below 93334 B and bounce from 93334 B on"), r::toString);
        assertTrue(r.out().contains("held back: bytes 4194304"), r::toString);
        final Cli t = Cli.run("model", "topology", "--input", f.toString(), "--json");
        assertEquals(0, t.exitCode(), t::toString);
        final JsonNode o = new ObjectMapper().readTree(t.out());
        assertEquals("PIX", o.get("placements").get(0).get("path_type").asText());
        assertEquals("gdr", o.get("placements").get(0).get("data_path").asText());
        assertEquals("SYS", o.get("placements").get(1).get("path_type").asText());
        assertEquals("bounce", o.get("placements").get(1).get("data_path").asText());
        assertEquals(93334, o.get("crossover").get("crossover_bytes").asLong(), 1);
    }

    @Test
    void liveOnTheSimulator() throws IOException {
        final Cli r = Cli.run("model", "crossover", "--sizes", "4096,16384,65536", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        final JsonNode o = new ObjectMapper().readTree(r.out());
        assertTrue(o.get("source").asText().contains("measured live: gpu-path on"), r::toString);
        assertTrue(o.get("source").asText().contains("(simulated)"), r::toString);
        assertEquals(3, o.get("gdr").get("inputs").size());
        assertTrue(o.get("gdr").get("held_back").has("relative_error"));
        final Cli q = Cli.run("model", "qps", "--qps", "1,2,3", "-s", "4096", "-n", "500", "--runs", "1");
        assertEquals(0, q.exitCode(), q::toString);
        assertTrue(q.out().contains("held back: QPs 3 measured"), q::toString);
    }

    @Test
    void badInputIsANamedError() throws IOException {
        final Cli a = Cli.run("model", "crossover", "--input", dir.resolve("missing").toString());
        assertEquals(2, a.exitCode(), a::toString);
        assertTrue(a.err().contains("gdrkit model crossover: --input " + dir.resolve("missing") + ": no such file"),
            a::toString);
        final Path bad = dir.resolve("bad.jsonl");
        Files.writeString(bad, "{\"qps\":1,\n");
        final Cli b = Cli.run("model", "qps", "--input", bad.toString());
        assertEquals(2, b.exitCode(), b::toString);
        assertTrue(b.err().contains("--input " + bad + ":1: malformed JSON"), b::toString);
        assertTrue(!b.err().contains("Exception"), b::toString);
        final Cli c = Cli.run("model", "qps", "--qps", "0,2");
        assertEquals(2, c.exitCode(), c::toString);
        final Cli d = Cli.run("model", "crossover", "--gpu", "tpu:0");
        assertEquals(2, d.exitCode(), d::toString);
    }
}
