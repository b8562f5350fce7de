/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.comm.bootstrap.BootstrapException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Communicators opened from a launcher's environment: real processes started with the torchrun variables. */
class CommFromEnvironmentTest {
    /** One rank: opens its communicator from the environment, all-reduces, writes what it saw. */
    public static final class EnvRank {
        public static void main(final String[] args) throws Exception {
            final Path out = Path.of(System.getenv("GDRKIT_TEST_OUT"));
            final CommConfig base = new CommConfig().fabric(Fabric.valueOf(args[0])).timeout(Duration.ofSeconds(30));
            try (Comm comm = Comm.fromEnvironment(base)) {
                final int n = 4096;
                final float[] a = new float[n];
                for (int i = 0; i < n; i++) {
                    a[i] = comm.rank() + 1 + i % 7;
                }
                comm.allReduce(a, a, RedOp.SUM);
                int wrong = 0;
                final int s = comm.size();
                for (int i = 0; i < n; i++) {
                    if (a[i] != s * (s + 1) / 2f + s * (i % 7)) {
                        wrong++;
                    }
                }
                Files.writeString(out.resolve("rank" + comm.rank()), "size=" + s + " wrong=" + wrong + " source="
                    + comm.info().worldSource());
            }
        }
    }

    /** Rank 1 dies right after joining; rank 0 writes how its allreduce ended and how long it took. */
    public static final class DyingRank {
        public static void main(final String[] args) throws Exception {
            final Path out = Path.of(System.getenv("GDRKIT_TEST_OUT"));
            final Comm comm = Comm.fromEnvironment(new CommConfig().fabric(Fabric.SHM).timeout(Duration.ofSeconds(20)));
            if (comm.rank() == 1) {
                Runtime.getRuntime().halt(7); // no close, no goodbye: as if killed
            }
            final long t0 = System.nanoTime();
            try {
                comm.allReduce(new float[1 << 16], new float[1 << 16], RedOp.SUM);
                Files.writeString(out.resolve("rank0"), "finished?!");
            } catch (final RuntimeException e) {
                Files.writeString(out.resolve("rank0"), e.getClass().getSimpleName() + " after "
                    + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) + " ms: " + e.getMessage());
            }
            Runtime.getRuntime().halt(1);
        }
    }

    @Test
    void aRankThatDiesEndsTheOtherWithANamedErrorWellWithinTheTimeout(@TempDir final Path dir) throws Exception {
        final String port = String.valueOf(freePort());
        final List<Process> ps = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            ps.add(start(DyingRank.class, Map.of("RANK", String.valueOf(r), "WORLD_SIZE", "2", "MASTER_ADDR",
                "127.0.0.1", "MASTER_PORT", port), dir));
        }
        for (final Process p : ps) {
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "a rank did not end");
        }
        final String r0 = Files.readString(dir.resolve("rank0"));
        assertTrue(r0.startsWith("CollException") || r0.startsWith("BootstrapException"), r0);
        assertTrue(r0.contains("rank 1"), r0);
        final long ms = Long.parseLong(r0.substring(r0.indexOf(" after ") + 7, r0.indexOf(" ms")));
        assertTrue(ms < 20_000, r0);
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static Process start(final Class<?> main, final Map<String, String> env, final Path dir, final String... args)
        throws Exception {
        final List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
            .toString(), "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", System.getProperty("java.class.path"),
            main.getName()));
        cmd.addAll(List.of(args));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
            .redirectOutput(dir.resolve("log-" + env.get("RANK")).toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("GDRKIT_") || k.startsWith("PMIX_")
            || k.startsWith("SLURM_") || List.of("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                "MASTER_PORT").contains(k));
        pb.environment().putAll(env);
        pb.environment().put("GDRKIT_TEST_OUT", dir.toString());
        return pb.start();
    }

    @ParameterizedTest(name = "{0} fabric")
    @ValueSource(strings = {"SHM", "TCP"})
    void twoProcessesStartedWithTorchrunVariablesAllReduceWithNothingWrong(final String fabric,
                                                                           @TempDir final Path dir)
        throws Exception {
        final String port = String.valueOf(freePort());
        final List<Process> ps = new ArrayList<>();
        for (int r = 1; r >= 0; r--) { // rank 1 first: it waits for the root rank 0 starts
            ps.add(start(EnvRank.class, Map.of("RANK", String.valueOf(r), "WORLD_SIZE", "2", "LOCAL_RANK",
                String.valueOf(r), "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", port,
                "GDRKIT_TOKEN", "token-for-tests"), dir, fabric));
        }
        for (final Process p : ps) {
            assertTrue(p.waitFor(90, TimeUnit.SECONDS), "rank did not end");
        }
        for (int r = 0; r < 2; r++) {
            final Path f = dir.resolve("rank" + r);
            assertTrue(Files.exists(f), () -> logs(dir));
            assertEquals("size=2 wrong=0 source=torchrun", Files.readString(f).trim(), "rank " + r);
        }
        for (final Process p : ps) {
            assertEquals(0, p.exitValue(), () -> logs(dir));
        }
    }

    private static String logs(final Path dir) {
        final StringBuilder b = new StringBuilder();
        for (final String r : List.of("0", "1")) {
            try {
                b.append("rank ").append(r).append(":\n").append(Files.readString(dir.resolve("log-" + r)));
            } catch (final Exception e) {
                b.append(e);
            }
        }
        return b.toString();
    }

    @Test
    void aWorldOfOneFromNoLauncherOpensAlone() {
        try (Comm c = Comm.fromEnvironment(new CommConfig().fabric(Fabric.SHM), Map.of())) {
            assertEquals(1, c.size());
            assertEquals("none", c.info().worldSource());
            final float[] a = {1, 2, 3};
            c.allReduce(a, a, RedOp.SUM);
            assertEquals(2f, a[1]);
        }
    }

    @Test
    void aRankWhoseRootNeverComesEndsWithANamedTimeout() throws Exception {
        final long t0 = System.nanoTime();
        final BootstrapException e = assertThrows(BootstrapException.class, () -> Comm.fromEnvironment(
            new CommConfig().fabric(Fabric.SHM).timeout(Duration.ofSeconds(2)), Map.of("RANK", "1", "WORLD_SIZE", "2",
                "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", String.valueOf(freePort()))));
        assertEquals(BootstrapException.Reason.TIMEOUT, e.reason());
        assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) < 6_000);
    }

    @Test
    void aContradictionIsRefusedBeforeAnythingStarts() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Comm.fromEnvironment(
            new CommConfig(), Map.of("RANK", "2", "WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "1")));
        assertTrue(e.getMessage().contains("RANK=2 is not below WORLD_SIZE=2"), e.getMessage());
    }
}
