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
        // the ping-pong's rows are half round trips, its split's communication full ones: named so, everywhere
        assertTrue(c.out().contains("#bytes     iters    half_rtt_min[us] half_rtt_med[us] half_rtt_max[us]"),
            c.toString());
        assertTrue(c.out().contains("# time split per size, us per operation (total = kernel + comm + cpu-wait; comm "
            + "is the full round trip, twice half_rtt):"), c.toString());
        assertTrue(c.out().contains("#   8 B: total ") && c.out().contains("#   16 B: total ")
            && c.out().contains(" (full round trips) + cpu-wait ") && c.out().contains("; proxy "), c.toString());
        assertTrue(md.contains("half_rtt_median_us") && md.contains("Time split per size")
            && md.contains("comm_rtt_us") && md.contains("cpu_wait_us") && md.contains("proxy_us"), md);
        assertTrue(json.contains("\"half_rtt_median_us\"") && json.contains("\"comm_rtt_us\""), json);
    }

    /** --json: each row says what its latency measures and carries its time split, in the record's own keys. */
    @Test
    void jsonRowsCarryTheirSplit() throws Exception {
        final Cli c = Cli.run("shmem-perf", "put_lat", "--mode", "ibgda", "-b", "8", "-e", "16", "-n", "20", "--json");
        assertEquals(0, c.exitCode(), c.toString());
        final JsonNode rows = new ObjectMapper().readTree(c.lines().get(0)).path("result").path("rows");
        assertEquals(2, rows.size(), c.toString());
        for (final JsonNode row : rows) {
            assertEquals("op", row.path("latency").asText(), row.toString());
            final JsonNode x = row.path("split");
            final double total = x.path("totalUs").asDouble(-1);
            assertEquals(total, x.path("kernelUs").asDouble() + x.path("commUs").asDouble()
                + x.path("cpuWaitUs").asDouble(), 1e-9 * total, row.toString());
            assertTrue(x.path("rttUs").isNull() && x.path("proxyUs").isNull(), row.toString());
        }
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
