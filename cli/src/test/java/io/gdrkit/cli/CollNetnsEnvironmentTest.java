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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The torchrun-style world between two network stacks (the project's stand-in for two hosts): rank 0 in this
 * machine's namespace serves the bootstrap root on {@code MASTER_ADDR} (its veth address), rank 1 runs in a network
 * namespace of its own and reaches it over a veth pair. Skipped, with the reason, where namespaces cannot be made.
 */
class CollNetnsEnvironmentTest {
    private static final String IP = Files.isExecutable(Path.of("/usr/sbin/ip")) ? "/usr/sbin/ip" : "/sbin/ip";
    private static final long PID = ProcessHandle.current().pid();
    private static final String NS = "gdrkE" + PID;
    private static final String VETH = "gdrkE" + PID % 100000;
    private static final String NET = "10." + (60 + PID % 30) + "." + (PID / 30 % 250) + ".";
    private static final String HERE = NET + "1";
    private static boolean made;

    private static String sh(final String... cmd) throws Exception {
        final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", cmd) + ": no exit within 20 s");
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + ": exit " + p.exitValue() + ": " + out.trim());
        }
        return out;
    }

    @BeforeAll
    static void namespace() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of(IP)), "no iproute2 (" + IP + ")");
        try {
            sh(IP, "netns", "add", NS);
        } catch (final IllegalStateException e) {
            Assumptions.abort("cannot make a network namespace here: " + e.getMessage());
        }
        made = true;
        try {
            sh(IP, "link", "add", VETH + "a", "type", "veth", "peer", "name", VETH + "b");
            sh(IP, "link", "set", VETH + "b", "netns", NS);
            sh(IP, "addr", "add", HERE + "/30", "dev", VETH + "a");
            sh(IP, "-n", NS, "addr", "add", NET + "2/30", "dev", VETH + "b");
            sh(IP, "link", "set", VETH + "a", "up");
            sh(IP, "-n", NS, "link", "set", VETH + "b", "up");
            sh(IP, "-n", NS, "link", "set", "lo", "up");
        } catch (final IllegalStateException e) {
            Assumptions.abort("made a namespace but could not link it by a veth pair: " + e.getMessage());
        }
    }

    @AfterAll
    static void removeNamespace() throws Exception {
        if (made) {
            sh(IP, "netns", "del", NS); // takes the veth pair with it
        }
    }

    @Test
    void twoNetworkStacksStartedWithTorchrunVariablesAllReduceWithNothingWrong() throws Exception {
        final Path out = Files.createTempDirectory("gdrkit-netns-env");
        final int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        final List<Process> ps = new ArrayList<>();
        for (int r = 1; r >= 0; r--) {
            final List<String> cmd = new ArrayList<>();
            if (r == 1) {
                cmd.addAll(List.of(IP, "netns", "exec", NS));
            }
            // the namespaces still share /dev/shm: direct rounds over shared memory are turned off so that every
            // byte crosses the veth, as between two hosts
            cmd.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-Dgdrkit.coll.shm.direct=false"));
            cmd.addAll(ForwardedProperties.JVM_WARNINGS_TO_STDERR);
            cmd.addAll(List.of("-cp",
                System.getProperty("java.class.path"), Main.class.getName(), "coll", "allreduce", "--fabric", "tcp",
                "--bind", "route", "--json", "-b", "8", "-e", "32768", "-f", "64", "-n", "3", "-w", "1",
                "--jit-warmup-ms", "0"));
            final ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.resolve("rank" + r).toFile())
                .redirectError(out.resolve("err" + r).toFile());
            pb.environment().keySet().removeIf(k -> k.startsWith("GDRKIT_") || k.startsWith("PMIX_")
                || k.startsWith("SLURM_"));
            pb.environment().putAll(Map.of("RANK", String.valueOf(r), "WORLD_SIZE", "2", "MASTER_ADDR", HERE,
                "MASTER_PORT", String.valueOf(port), "GDRKIT_TOKEN", "netns-test-token"));
            ps.add(pb.start());
        }
        for (final Process p : ps) {
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "a rank did not end");
        }
        for (int r = 0; r < 2; r++) {
            assertEquals(0, ps.get(1 - r).exitValue(), "rank " + r + ": " + Files.readString(out.resolve("err" + r)));
        }
        final List<Long> sizes = new ArrayList<>();
        for (final String l : Files.readAllLines(out.resolve("rank0"))) {
            final JsonNode j;
            try {
                j = new ObjectMapper().readTree(l);
            } catch (final com.fasterxml.jackson.core.JacksonException e) {
                throw new AssertionError("rank 0 printed a line that is not a JSON row: " + l, e);
            }
            assertEquals(0, j.get("wrong").asLong(), l);
            assertEquals(0, j.get("inplace_wrong").asLong(), l);
            assertEquals(2, j.get("np").asInt(), l);
            assertEquals("torchrun", j.get("world").asText(), l);
            sizes.add(j.get("bytes").asLong());
        }
        assertEquals(List.of(8L, 512L, 32768L), sizes);
        assertEquals("", Files.readString(out.resolve("rank1")), "rank 1 printed nothing");
    }
}
