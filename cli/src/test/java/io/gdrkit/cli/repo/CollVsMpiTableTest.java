/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli.repo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * bench/coll-vs-mpi-table.py on fixed input: the table it prints, byte by byte, and its exit status for wrong
 * elements and for an empty directory. Skipped, with the reason, where no python3 is on the PATH.
 */
class CollVsMpiTableTest {

    private static Path python() {
        for (final String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            final Path p = Path.of(dir.isEmpty() ? "." : dir, "python3");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    private record Result(int exit, String stdout) {
    }

    private static Result table(final Path dir) throws Exception {
        final Path py = python();
        assumeTrue(py != null, "no python3 on the PATH");
        final Path script = LicenseHeaderTest.root().resolve("bench/coll-vs-mpi-table.py");
        final Process p = new ProcessBuilder(py.toString(), script.toString(), dir.toString())
            .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "table script still running after 30 s");
        return new Result(p.exitValue(), out);
    }

    private static String g(final int run, final long bytes, final double us, final int wrong) {
        return "{\"run\":" + run + ",\"world\":\"gdrkit\",\"op\":\"all_reduce\",\"bytes\":" + bytes + ",\"time_us\":" + us
            + ",\"wrong\":" + wrong + ",\"inplace_wrong\":0,\"np\":4,\"fabric\":\"shm\"}";
    }

    private static String m(final int run, final long bytes, final double us) {
        return "{\"run\":" + run + ",\"op\":\"all_reduce\",\"peer\":\"openmpi\",\"bytes\":" + bytes + ",\"time_us\":" + us
            + ",\"wrong\":0,\"np\":4}";
    }

    @Test
    void perSizeMinMedianMaxAndTheMedianOfThePerRunRatios(@TempDir final Path dir) throws Exception {
        Files.write(dir.resolve("gdrkit.jsonl"), List.of(
            g(1, 8, 2.0, 0), g(1, 1048576, 300.0, 0),
            g(2, 8, 6.0, 0), g(2, 1048576, 250.0, 0),
            "not json, ignored",
            g(3, 8, 4.0, 0)));
        Files.write(dir.resolve("openmpi.jsonl"), List.of(
            m(1, 8, 4.0), m(1, 1048576, 200.0),
            m(2, 8, 3.0), m(2, 1048576, 1000.0),
            m(3, 8, 8.0), m(3, 1048576, 500.0)));
        final Result r = table(dir);
        assertEquals(0, r.exit(), r.stdout());
        assertEquals("""
            all_reduce, 4 ranks, fabric shm, 3 runs; time per call in µs, min / median / max; ratio = gdrkit / OpenMPI \
            (above 1: gdrkit slower)

            | size | gdrkit µs | OpenMPI µs | ratio per run | median ratio |
            |---|---|---|---|---|
            | 8 B | 2.00 / 4.00 / 6.00 | 3.00 / 4.00 / 8.00 | 0.50 2.00 0.50 | 0.50 |
            | 1 MiB | 250 / 275 / 300 | 200 / 500 / 1000 | 1.50 0.25 | 0.88 |

            wrong elements: gdrkit 0, OpenMPI 0
            """, r.stdout());
    }

    @Test
    void aWrongElementIsCountedAndFailsTheTable(@TempDir final Path dir) throws Exception {
        Files.write(dir.resolve("gdrkit.jsonl"), List.of(g(1, 4096, 10.0, 3)));
        Files.write(dir.resolve("openmpi.jsonl"), List.of(m(1, 4096, 5.0)));
        final Result r = table(dir);
        assertEquals(3, r.exit(), r.stdout());
        assertTrue(r.stdout().contains("| 4 KiB | 10.0 / 10.0 / 10.0 | 5.00 / 5.00 / 5.00 | 2.00 | 2.00 |"), r.stdout());
        assertTrue(r.stdout().endsWith("wrong elements: gdrkit 3, OpenMPI 0\n"), r.stdout());
    }

    @Test
    void aSideWithoutTheRunHasNoRatio(@TempDir final Path dir) throws Exception {
        Files.write(dir.resolve("gdrkit.jsonl"), List.of(g(2, 65536, 50.0, 0)));
        Files.write(dir.resolve("openmpi.jsonl"), List.of(m(1, 65536, 40.0)));
        final Result r = table(dir);
        assertEquals(0, r.exit(), r.stdout());
        assertTrue(r.stdout().contains("| 64 KiB | 50.0 / 50.0 / 50.0 | 40.0 / 40.0 / 40.0 | - | - |"), r.stdout());
    }

    @Test
    void noRowsAtAllIsAnError(@TempDir final Path dir) throws Exception {
        final Result r = table(dir);
        assertEquals(4, r.exit(), r.stdout());
        assertEquals("", r.stdout());
    }
}
