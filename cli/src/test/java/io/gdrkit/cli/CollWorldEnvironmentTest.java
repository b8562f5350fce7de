/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code coll} without --np in a torchrun-style environment: each process is one rank, rank 0 prints. */
class CollWorldEnvironmentTest {
    private static Process rank(final int r, final int port, final Path dir, final String... extra) throws Exception {
        final List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
            "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName(),
            "coll", "allreduce", "-b", "8", "-e", "4K", "-n", "2", "-w", "1", "--jit-warmup-ms", "0"));
        cmd.addAll(List.of(extra));
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(dir.resolve("out" + r).toFile())
            .redirectError(dir.resolve("err" + r).toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("GDRKIT_") || k.startsWith("PMIX_")
            || k.startsWith("SLURM_"));
        pb.environment().putAll(Map.of("RANK", String.valueOf(r), "WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1",
            "MASTER_PORT", String.valueOf(port)));
        return pb.start();
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void twoProcessesWithTorchrunVariablesAreOneWorldAndRankZeroPrintsRowsSayingWhereTheWorldCameFrom(
        @TempDir final Path dir) throws Exception {
        final int port = freePort();
        final Process p1 = rank(1, port, dir, "--fabric", "shm", "--json");
        final Process p0 = rank(0, port, dir, "--fabric", "shm", "--json");
        for (final Process p : List.of(p0, p1)) {
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "a rank did not end");
        }
        final String out0 = Files.readString(dir.resolve("out0"));
        assertEquals(0, p0.exitValue(), out0 + Files.readString(dir.resolve("err0")));
        assertEquals(0, p1.exitValue(), Files.readString(dir.resolve("err1")));
        assertEquals("", Files.readString(dir.resolve("out1")).trim(), "rank 1 prints nothing");
        final List<String> rows = out0.lines().filter(l -> l.startsWith("{")).toList();
        assertEquals(10, rows.size(), out0); // 8 B .. 4 KiB
        for (final String row : rows) {
            final JsonNode j = new ObjectMapper().readTree(row);
            assertEquals("torchrun", j.path("world").asText(), row);
            assertEquals(2, j.path("np").asInt(), row);
            assertEquals(0, j.path("wrong").asLong(-1), row);
            assertEquals(0, j.path("inplace_wrong").asLong(-1), row);
        }
    }

    @Test
    void rankZeroServingTheRootBeyondLoopbackWithoutATokenIsRefusedUnderStrict(@TempDir final Path dir)
        throws Exception {
        String here = null;
        for (final java.net.NetworkInterface n : java.util.Collections.list(
            java.net.NetworkInterface.getNetworkInterfaces())) {
            for (final java.net.InetAddress a : java.util.Collections.list(n.getInetAddresses())) {
                if (n.isUp() && !a.isLoopbackAddress() && a instanceof java.net.Inet4Address) {
                    here = a.getHostAddress();
                }
            }
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(here != null, "no non-loopback IPv4 address on this host");
        final List<String> cmd = List.of(ProcessHandle.current().info().command().orElse("java"),
            "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName(),
            "coll", "allreduce", "--fabric", "tcp", "--strict", "-b", "8", "-e", "8");
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
            .redirectOutput(dir.resolve("out").toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("GDRKIT_") || k.startsWith("PMIX_")
            || k.startsWith("SLURM_"));
        pb.environment().putAll(Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", here, "MASTER_PORT",
            String.valueOf(freePort())));
        final Process p = pb.start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        final String out = Files.readString(dir.resolve("out"));
        assertEquals(2, p.exitValue(), out);
        assertTrue(out.contains("--strict: serving the bootstrap root on " + here), out);
    }

    @Test
    void theHeaderSaysWhereTheWorldCameFrom(@TempDir final Path dir) throws Exception {
        final int port = freePort();
        final Process p1 = rank(1, port, dir, "--fabric", "tcp");
        final Process p0 = rank(0, port, dir, "--fabric", "tcp");
        for (final Process p : List.of(p0, p1)) {
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "a rank did not end");
        }
        final String out0 = Files.readString(dir.resolve("out0"));
        assertEquals(0, p0.exitValue(), out0 + Files.readString(dir.resolve("err0")));
        assertTrue(out0.contains("# world: torchrun (rank 0 of 2, local 0, root 127.0.0.1:" + port + ")"), out0);
        assertTrue(out0.contains("nranks 2"), out0);
        assertTrue(out0.contains("# Out of bounds values : 0 OK"), out0);
    }
}
