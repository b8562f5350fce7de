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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code shmem-perf --report DIR}: the report folder the other commands write, built from the result record. */
class ShmemPerfCommandTest {
    @Test
    void reportFolderHasRowsBreakdownAndDoorbells(@TempDir final Path dir) throws Exception {
        final Cli c = Cli.run("shmem-perf", "put_signal_lat", "--mode", "ibrc", "-b", "8", "-e", "16", "-n", "20",
            "--report", dir.toString());
        assertEquals(0, c.exitCode(), c.toString());
        assertTrue(c.out().contains("# breakdown (median us over 20 ops of the largest size: issue->proxy pick-up "),
            c.toString());
        assertTrue(c.out().lines().anyMatch(l -> l.startsWith("# report: ") && l.endsWith("report.html")),
            c.toString());
        final String md = Files.readString(dir.resolve("report.md")).replace("\\", ""); // markdown escapes _ and >
        assertTrue(md.contains("put_signal_lat over ibrc") && md.contains("Where the time goes")
            && md.contains("Who rang the doorbell"), md);
        final JsonNode j = new ObjectMapper().readTree(Files.readString(dir.resolve("report.json")));
        final String json = j.toString();
        assertTrue(json.contains("\"simulated\":true"), json);
        assertTrue(json.contains("landing->answer seen") && json.contains("NIC pick-up->landing"), json);
        assertTrue(json.contains("median_us") && json.contains("cpu_doorbells"), json);
        assertTrue(Files.size(dir.resolve("report.html")) > 0);
    }

    @Test
    void jsonThenReportLine(@TempDir final Path dir) throws Exception {
        final Cli c = Cli.run("shmem-perf", "msg_rate", "--mode", "ibgda", "-b", "8", "-e", "8", "-n", "64",
            "--threads", "4", "--json", "--report", dir.toString());
        assertEquals(0, c.exitCode(), c.toString());
        final var lines = c.lines();
        assertEquals(2, lines.size(), c.toString());
        final JsonNode r = new ObjectMapper().readTree(lines.get(0)).path("result");
        assertTrue(r.path("gpuDoorbells").asLong() > 0, c.toString());
        assertTrue(new ObjectMapper().readTree(lines.get(1)).path("report").asText().endsWith("report.html"));
        final String md = Files.readString(dir.resolve("report.md")).replace("\\", ""); // markdown escapes _ and >
        assertTrue(md.contains("mib_per_s") && md.contains("mops"), md);
    }
}
