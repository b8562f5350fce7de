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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Collectives between two network stacks: rank 0 in this machine's namespace, rank 1 in a network namespace of its
 * own, joined by a veth pair. It is the nearest thing to two hosts that one machine has: every byte between the
 * ranks crosses an Ethernet link (counted on the veth), the ranks bind non-loopback addresses ({@code coll --bind
 * route}), and the launcher starts both through {@code launch --hosts} with an ssh stand-in that enters the
 * namespace. Skipped, with the reason, where namespaces cannot be made (not root, no iproute2, no CAP_SYS_ADMIN).
 */
class CollNetnsTest {
    private static final String IP = Files.isExecutable(Path.of("/usr/sbin/ip")) ? "/usr/sbin/ip" : "/sbin/ip";
    private static final long PID = ProcessHandle.current().pid();
    private static final String NS = "gdrkT" + PID;
    private static final String VETH = "gdrkT" + PID % 100000;
    // a /30 per test process, so that two suites side by side do not collide
    private static final String NET = "10." + (90 + PID % 30) + "." + (PID / 30 % 250) + ".";
    private static final String HERE = NET + "1";
    private static Path dir;
    private static Path ssh;

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
        try {
            sh(IP, "link", "add", VETH + "a", "type", "veth", "peer", "name", VETH + "b");
            sh(IP, "link", "set", VETH + "b", "netns", NS);
            sh(IP, "addr", "add", HERE + "/30", "dev", VETH + "a");
            sh(IP, "-n", NS, "addr", "add", NET + "2/30", "dev", VETH + "b");
            sh(IP, "link", "set", VETH + "a", "up");
            sh(IP, "-n", NS, "link", "set", VETH + "b", "up");
            sh(IP, "-n", NS, "link", "set", "lo", "up");
        } catch (final IllegalStateException e) {
            // a namespace but no veth (a container without the module, say): not this test's subject
            sh(IP, "netns", "del", NS);
            Assumptions.abort("made a namespace but could not link it by a veth pair: " + e.getMessage());
        }
        dir = Files.createTempDirectory("gdrkit-netns");
        ssh = dir.resolve("netns-ssh");
        // "here" runs the command in this namespace; any other host is the namespace of that name
        Files.writeString(ssh, "#!/bin/sh\nh=$1; shift\nif [ \"$h\" = here ]; then exec sh -c \"$*\"; fi\n"
            + "exec " + IP + " netns exec \"$h\" sh -c \"$*\"\n");
        assertTrue(ssh.toFile().setExecutable(true));
    }

    @AfterAll
    static void removeNamespace() throws Exception {
        if (dir != null) {
            sh(IP, "netns", "del", NS); // takes the veth pair with it
        }
    }

    private static long vethBytes(final String what) throws Exception {
        return Long.parseLong(Files.readString(Path.of("/sys/class/net", VETH + "a", "statistics", what)).trim());
    }

    @ParameterizedTest(name = "{0} over {1}")
    @CsvSource({"ib,tcp", "socket,tcp"})
    void allreduceBetweenTwoNetworkStacksIsRightOnBothRanks(final String transport, final String fabric)
        throws Exception {
        final Path out = Files.createTempDirectory(dir, transport);
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // the rank's stdout goes to a file per rank: the launcher's own output is the test's
        // two namespaces still share one /dev/shm, so the ranks would rightly run their direct rounds through
        // shared memory (ShmDirect) and not over the veth; this test stands in for two hosts, where they cannot
        final String rank = "exec '" + java + "' --enable-native-access=ALL-UNNAMED -Xmx256m "
            + String.join(" ", ForwardedProperties.JVM_WARNINGS_TO_STDERR) + " "
            + "-Dgdrkit.coll.shm.direct=false -cp '"
            + System.getProperty("java.class.path") + "' io.gdrkit.cli.Main coll allreduce --transport " + transport
            + " --fabric " + fabric + " --bind route --json -b 8 -e 32768 -f 64 -n 3 -w 1 --jit-warmup-ms 0 > '"
            + out + "'/rank$GDRKIT_RANK.jsonl";
        final long rx0 = vethBytes("rx_bytes");
        final long tx0 = vethBytes("tx_bytes");
        final Cli r = Cli.run("launch", "-n", "1", "--hosts", "here," + NS, "--ssh", ssh.toString(), "--bind", HERE,
            "--grace-ms", "10000", "--join-timeout-ms", "60000", "--", "sh", "-c", rank);
        assertEquals(0, r.exitCode(), r::toString);
        // rank 0 prints the rows, as nccl-tests does; #wrong sums the bad elements of every rank
        final List<Long> sizes = new ArrayList<>();
        for (final String l : Files.readAllLines(out.resolve("rank0.jsonl"))) {
            final JsonNode j;
            try {
                j = new ObjectMapper().readTree(l);
            } catch (final com.fasterxml.jackson.core.JacksonException e) {
                throw new AssertionError("rank 0 printed a line that is not a JSON row: " + l, e);
            }
            assertEquals(0, j.get("wrong").asLong(), l);
            assertEquals(0, j.get("inplace_wrong").asLong(), l);
            assertEquals(2, j.get("np").asInt(), l);
            assertEquals(transport, j.get("transport").asText(), l);
            sizes.add(j.get("bytes").asLong());
        }
        assertEquals(List.of(8L, 512L, 32768L), sizes);
        assertEquals("", Files.readString(out.resolve("rank1.jsonl")), "rank 1 ran in the namespace and printed none");
        // 32 KiB allreduces, (1 + 3) x 2 (out-of-place, in-place), each rank sending half of it twice: the veth
        // carried at least that much each way
        final long floor = 4L * 2 * 32768;
        assertTrue(vethBytes("rx_bytes") - rx0 > floor, "received over the veth: " + (vethBytes("rx_bytes") - rx0));
        assertTrue(vethBytes("tx_bytes") - tx0 > floor, "sent over the veth: " + (vethBytes("tx_bytes") - tx0));
    }
}
