/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code mpirun -np N gdrkit coll allreduce --fabric F --json}: each process one rank of the PMIx world, rank 0
 * prints the rows with {@code np} N, 0 wrong and {@code "world":"pmix"}. Skips, saying why, without mpirun or
 * libpmix.
 */
class CollMpirunTest {
    @ParameterizedTest(name = "{0} ranks over {1}")
    @CsvSource({"2,shm", "4,tcp"})
    void collUnderMpirunIsOneRankOfThePmixWorld(final int n, final String fabric, @TempDir final Path dir)
        throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/mpirun")), "mpirun not installed (Debian: openmpi-bin)");
        try {
            SymbolLookup.libraryLookup("libpmix.so.2", Arena.global());
        } catch (final IllegalArgumentException e) {
            assumeTrue(false, "libpmix.so.2 cannot be loaded (Debian: libpmix2): " + e.getMessage());
        }
        // through env: OpenMPI 4.1's mpirun rewrites the arguments of a program named "java"
        final List<String> cmd = new ArrayList<>(List.of("/usr/bin/mpirun", "--allow-run-as-root", "--oversubscribe",
            "-np", String.valueOf(n), "/usr/bin/env", ProcessHandle.current().info().command().orElse("java"),
            "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", System.getProperty("java.class.path"),
            Main.class.getName(), "coll", "allreduce", "--fabric", fabric, "-b", "8", "-e", "1M", "-f", "8", "-n", "2",
            "-w", "1", "--jit-warmup-ms", "0", "--json"));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(dir.resolve("out").toFile())
            .redirectError(dir.resolve("err").toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("GDRKIT_") || k.startsWith("PMIX_")
            || k.startsWith("OMPI_") || k.startsWith("SLURM_")
            || List.of("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT").contains(k));
        final Process p = pb.start();
        assertTrue(p.waitFor(180, TimeUnit.SECONDS), "mpirun did not end");
        final String out = Files.readString(dir.resolve("out"));
        assertEquals(0, p.exitValue(), out + Files.readString(dir.resolve("err")));
        final List<String> rows = out.lines().filter(l -> l.startsWith("{")).toList();
        assertEquals(6, rows.size(), out); // 8 B .. 256 KiB by 8 (2 MiB is past -e 1M), printed once (rank 0)
        for (final String row : rows) {
            final JsonNode j = new ObjectMapper().readTree(row);
            assertEquals("pmix", j.path("world").asText(), row);
            assertEquals(n, j.path("np").asInt(), row);
            assertEquals(0, j.path("wrong").asLong(-1), row);
            assertEquals(0, j.path("inplace_wrong").asLong(-1), row);
        }
    }
}
