/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.gdrkit.comm.bootstrap.BootstrapException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Ranks started by a real PMIx launcher, OpenMPI's {@code mpirun}: the world from PMIx through FFM, an allreduce
 * with nothing wrong, a failing rank and a fence that never completes ending by name. Skips, saying why, without
 * mpirun or libpmix (Debian: openmpi-bin, libpmix2).
 */
class MpirunTest {
    private static String mpirun;

    @BeforeAll
    static void launcher() {
        for (final String d : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
            if (Files.isExecutable(Path.of(d, "mpirun"))) {
                mpirun = Path.of(d, "mpirun").toString();
                break;
            }
        }
        assumeTrue(mpirun != null, "mpirun not on PATH (Debian: apt-get install openmpi-bin)");
        try {
            SymbolLookup.libraryLookup("libpmix.so.2", Arena.global());
        } catch (final IllegalArgumentException e) {
            assumeTrue(false, "libpmix.so.2 cannot be loaded (Debian: apt-get install libpmix2): " + e.getMessage());
        }
    }

    /** One rank under mpirun that never reaches the fence (rank 1) or waits for it 3 s (rank 0), saying what ended. */
    public static final class FenceRank {
        public static void main(final String[] args) throws Exception {
            final Path out = Path.of(System.getenv("GDRKIT_TEST_OUT"));
            if ("1".equals(System.getenv("PMIX_RANK"))) {
                Thread.sleep(120_000); // never joins: mpirun ends it when rank 0 exits non-zero
                return;
            }
            final long t0 = System.nanoTime();
            try (Comm c = Comm.fromEnvironment(new CommConfig().fabric(Fabric.SHM).timeout(Duration.ofSeconds(3)))) {
                Files.writeString(out.resolve("rank0"), "joined?!");
            } catch (final BootstrapException e) {
                Files.writeString(out.resolve("rank0"), e.reason() + " after " + TimeUnit.NANOSECONDS.toMillis(
                    System.nanoTime() - t0) + " ms: " + e.getMessage());
            }
            System.exit(1);
        }
    }

    /** One rank that fails (rank 1 exits 3 before opening), the others open as usual. */
    public static final class FailingRank {
        public static void main(final String[] args) throws Exception {
            if ("1".equals(System.getenv("PMIX_RANK"))) {
                System.exit(3);
            }
            CommFromEnvironmentTest.EnvRank.main(new String[] {"SHM"});
        }
    }

    private static Process mpirun(final int n, final Path dir, final Class<?> main, final String... args)
        throws Exception {
        // through env: OpenMPI 4.1's mpirun rewrites the arguments of a program named "java"
        final List<String> cmd = new ArrayList<>(List.of(mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
            String.valueOf(n), "-x", "GDRKIT_TEST_OUT=" + dir, "/usr/bin/env",
            Path.of(System.getProperty("java.home"), "bin", "java").toString(), "--enable-native-access=ALL-UNNAMED",
            "-Xmx256m", "-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
            .redirectOutput(dir.resolve("mpirun.log").toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("GDRKIT_") || k.startsWith("PMIX_")
            || k.startsWith("OMPI_") || List.of("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT").contains(k));
        return pb.start();
    }

    private static String log(final Path dir) {
        try {
            return Files.readString(dir.resolve("mpirun.log"));
        } catch (final Exception e) {
            return e.toString();
        }
    }

    @ParameterizedTest(name = "{0} ranks over {1}")
    @CsvSource({"2,SHM", "4,TCP"})
    void ranksUnderMpirunFindTheirWorldInPmixAndAllReduceWithNothingWrong(final int n, final String fabric,
                                                                          @TempDir final Path dir) throws Exception {
        final Process p = mpirun(n, dir, CommFromEnvironmentTest.EnvRank.class, fabric);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), () -> "mpirun did not end: " + log(dir));
        assertEquals(0, p.exitValue(), () -> log(dir));
        for (int r = 0; r < n; r++) {
            assertEquals("size=" + n + " wrong=0 source=pmix", Files.readString(dir.resolve("rank" + r)).trim(),
                "rank " + r);
        }
    }

    @Test
    void aRankThatFailsEndsTheJobAndMpirunSaysSoWithANonZeroExit(@TempDir final Path dir) throws Exception {
        final long t0 = System.nanoTime();
        final Process p = mpirun(2, dir, FailingRank.class);
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), () -> "mpirun did not end: " + log(dir));
        assertNotEquals(0, p.exitValue(), () -> log(dir));
        assertTrue(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0) < 80);
        assertTrue(Files.notExists(dir.resolve("rank0")), "rank 0 cannot have finished without rank 1");
    }

    @Test
    void aFenceThatNeverCompletesIsANamedTimeout(@TempDir final Path dir) throws Exception {
        final Process p = mpirun(2, dir, FenceRank.class);
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), () -> "mpirun did not end: " + log(dir));
        assertNotEquals(0, p.exitValue(), () -> log(dir));
        final String r0 = Files.readString(dir.resolve("rank0"));
        assertTrue(r0.startsWith("TIMEOUT") && r0.contains("PMIx_Fence of the 2 ranks") && r0.contains(
            "did not complete within 3000 ms"), r0);
        final long ms = Long.parseLong(r0.substring("TIMEOUT after ".length(), r0.indexOf(" ms")));
        assertTrue(ms >= 2_900 && ms < 10_000, r0);
    }
}
