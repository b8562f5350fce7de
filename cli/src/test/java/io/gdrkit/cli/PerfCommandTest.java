/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.perf.Loopback;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** perf with tiny iteration counts: output format and error handling only, never timing. */
class PerfCommandTest {
    private static final String BW = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]";
    private static final String LAT = " #bytes  #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
        + "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One line of --json output, parsed; a line that is not JSON fails the test naming it. */
    private static JsonNode json(final String line) {
        try {
            return JSON.readTree(line);
        } catch (final com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new AssertionError("not a JSON line: " + line, e);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"write_bw", "read_bw", "send_bw", "write_lat", "read_lat", "send_lat", "atomic_lat",
        "atomic_bw"})
    void tablePrintsPerftestHeader(final String test) {
        final Cli r = Cli.run("perf", test, "--loopback", "-n", "50", "--warmup", "10");
        assertEquals(0, r.exitCode(), r::toString);
        final List<String> lines = r.lines();
        assertEquals(Loopback.SIMULATED_HEADER, lines.get(0));
        assertTrue(lines.get(1).startsWith("# test: " + test), r::toString);
        assertEquals(test.endsWith("_bw") ? BW : LAT, lines.get(2));
        assertEquals(4, lines.size(), r::toString);
        final String[] cols = lines.get(3).trim().split("\\s+");
        assertEquals(test.endsWith("_bw") ? 5 : 9, cols.length, lines.get(3));
        assertEquals(test.startsWith("atomic") ? "8" : test.endsWith("_bw") ? "65536" : "2", cols[0]);
        assertEquals("50", cols[1]);
    }

    @ParameterizedTest
    @ValueSource(strings = {"invoker", "own-device", "dedicated"})
    void sendLatWithCompletionEvents(final String progress) {
        final Cli r = Cli.run("perf", "send_lat", "--loopback", "-e", "-n", "100", "--warmup", "10", "--progress",
            progress);
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.lines().get(1).contains("completions: events"), r::toString);
        assertEquals("100", r.lines().get(3).trim().split("\\s+")[1], r::toString);
        // polled, in the same mode (own-device used to stall here: the waiting thread never moved its own NIC)
        final Cli polled = Cli.run("perf", "send_lat", "--loopback", "-n", "20", "--warmup", "0", "--progress",
            progress);
        assertEquals(0, polled.exitCode(), polled::toString);
        assertTrue(!polled.lines().get(1).contains("events"), polled::toString);
        final Cli wrong = Cli.run("perf", "write_lat", "--loopback", "-e", "-n", "20");
        assertEquals(2, wrong.exitCode(), wrong::toString);
        assertTrue(wrong.err().contains("-e/--events applies to send_lat"), wrong::toString);
    }

    @ParameterizedTest
    @ValueSource(strings = {"write_bw", "read_bw", "send_bw", "write_lat", "read_lat", "send_lat", "atomic_lat"})
    void jsonHasTheFields(final String test) throws Exception {
        final Cli r = Cli.run("perf", test, "--loopback", "-n", "20", "--warmup", "5", "--json", "-s",
            test.startsWith("atomic") ? "8" : "64");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.lines().size(), r::toString);
        final JsonNode j = JSON.readTree(r.lines().get(0));
        assertTrue(j.get("simulated").asBoolean());
        assertEquals("injvm", j.get("fabric").asText());
        assertEquals(test.startsWith("atomic") ? 8 : 64, j.get("bytes").asInt());
        assertEquals(20, j.get("iterations").asLong());
        final List<String> fields = test.endsWith("_bw")
            ? List.of("bw_peak_mib_s", "bw_avg_mib_s", "msg_rate_mpps")
            : List.of("t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "p99_us", "p999_us");
        for (final String f : fields) {
            assertTrue(j.hasNonNull(f) && j.get(f).isNumber(), () -> f + " missing in " + j);
            assertTrue(j.get(f).asDouble() >= 0, () -> f + " negative in " + j);
        }
    }

    @Test
    void connectionTypeDeviceAndPortAsPerftestTakesThem() {
        // RC, the named device and port 1 run as without them
        for (final String[] extra : new String[][] {{"-c", "RC"}, {"-c", "rc"}, {"-d", "soft0"}, {"-d", "soft1"},
            {"-i", "1"}, {"--connection=RC", "--ib-dev=soft0", "--ib-port=1"}}) {
            final List<String> args = new java.util.ArrayList<>(List.of("perf", "write_bw", "--loopback", "-n", "20",
                "--warmup", "0", "-s", "4096"));
            args.addAll(List.of(extra));
            final Cli r = Cli.run(args.toArray(String[]::new));
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.lines().stream().anyMatch(l -> l.trim().startsWith("4096 ")), r::toString);
        }
        // each refusal is one named line on stderr, exit 2, before any output
        final String[][] bad = {
            {"-c", "UC"}, {"-c", "UD"}, {"-c", "XRC"}, {"-d", "mlx5_0"}, {"-i", "2"}, {"-i", "0"},
            {"--fabric", "shm", "-d", "soft0"}};
        final String[] why = {
            "-c UC: the software NIC creates RC and UD QPs only (ibv_create_qp with IBV_QPT_UC fails with EOPNOTSUPP); "
                + "perf runs RC",
            "-c UD runs send_bw between the software NICs in this JVM, one QP, host memory (no -b, -q, -D, --fabric, "
                + "--mem gpu, --faults, -e, --trials, --stripe, --provider native)",
            "-c must be RC, UC or UD, not 'XRC'",
            "-d mlx5_0: no such device in this run (the software NICs here are soft0, soft1)",
            "-i 2: the software NIC soft0 has port 1 only (phys_port_cnt 1)",
            "-i must be a port number from 1, not 0",
            "-d soft0: no such device in this run (the software NICs here are perf-server, perf-client)"};
        for (int i = 0; i < bad.length; i++) {
            final List<String> args = new java.util.ArrayList<>(List.of("perf", "write_bw", "-n", "20"));
            if (!List.of(bad[i]).contains("--fabric")) {
                args.add("--loopback");
            }
            args.addAll(List.of(bad[i]));
            final Cli r = Cli.run(args.toArray(String[]::new));
            assertEquals(2, r.exitCode(), r::toString);
            assertEquals("", r.out(), r::toString);
            assertTrue(r.err().startsWith("gdrkit perf: " + why[i] + "\n"), r::toString);
        }
    }

    @Test
    void sendBwOverUdChecksEveryDatagramAndStaysWithinTheMtu() throws Exception {
        final Cli r = Cli.run("perf", "send_bw", "--loopback", "-c", "UD", "-n", "300", "--warmup", "0", "-s", "1000",
            "--check");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.lines().get(1).startsWith("# test: send_bw  connection: UD (one UD QP per side, an address "
            + "handle, Q_Key 0x11111111;"), r::toString);
        assertTrue(r.lines().stream().anyMatch(l -> l.startsWith(" 1000       300 ")), r::toString);
        assertTrue(r.out().contains("# check: 300 datagrams of 1000 B compared byte for byte behind the GRH area, 0 "
            + "differed (by the receiving JVM)\n"), r::toString);
        // -a: sizes up to the MTU only, as perftest's UD
        final Cli a = Cli.run("perf", "send_bw", "--loopback", "-c", "UD", "-n", "20", "--warmup", "0", "-a",
            "--mtu", "1024", "--json");
        assertEquals(0, a.exitCode(), a::toString);
        final List<JsonNode> rows = new java.util.ArrayList<>();
        for (final String l : a.lines()) {
            rows.add(new ObjectMapper().readTree(l));
        }
        assertEquals(10, rows.size(), a::toString); // 2, 4, .. 1024
        assertEquals(1024, rows.get(9).get("bytes").asInt());
        assertEquals("UD", rows.get(0).get("connection").asText(), "JSON says the QP type when it is not RC");
        // without -s: one MTU, as perftest's UD
        final Cli d = Cli.run("perf", "send_bw", "--loopback", "-c", "UD", "-n", "20", "--warmup", "0");
        assertEquals(0, d.exitCode(), d::toString);
        assertTrue(d.lines().stream().anyMatch(l -> l.startsWith(" 4096       20 ")), d::toString);
        // a datagram larger than the MTU, and UD for another test: named refusals
        final Cli big = Cli.run("perf", "send_bw", "--loopback", "-c", "UD", "-s", "8192");
        assertEquals(2, big.exitCode(), big::toString);
        assertTrue(big.err().startsWith("gdrkit perf: -c UD: a datagram is one packet: -s must be at most the MTU "
            + "(4096), not 8192\n"), big::toString);
        final Cli lat = Cli.run("perf", "send_lat", "--loopback", "-c", "UD");
        assertEquals(2, lat.exitCode(), lat::toString);
        assertTrue(lat.err().startsWith("gdrkit perf: -c UD runs send_bw between the software NICs in this JVM"),
            lat::toString);
    }

    @Test
    void multipleQpsSoftwareMtuAndGbits() {
        final Cli r = Cli.run("perf", "write_bw", "--loopback", "-n", "40", "--warmup", "0", "-q", "3", "-t", "8",
            "-Q", "4", "--mtu", "65536", "-s", "200000", "--report_gbits");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]", r.lines().get(2));
        assertTrue(r.lines().get(3).trim().matches("200000 +40 .*"), r::toString);
    }

    @Test
    void trialsPrintEveryRunAndTheirSpread() throws Exception {
        final Cli r = Cli.run("perf", "write_bw", "--loopback", "-n", "30", "--warmup", "0", "-s", "4096",
            "--trials", "3", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        final com.fasterxml.jackson.databind.ObjectMapper om = new com.fasterxml.jackson.databind.ObjectMapper();
        final List<com.fasterxml.jackson.databind.JsonNode> rows = new java.util.ArrayList<>();
        for (final String l : r.lines()) {
            rows.add(om.readTree(l));
        }
        final List<Double> avgs = rows.stream().filter(j -> j.has("bw_avg_mib_s"))
            .map(j -> j.get("bw_avg_mib_s").asDouble()).toList();
        assertEquals(3, avgs.size(), r::toString);
        final com.fasterxml.jackson.databind.JsonNode t = rows.stream().filter(j -> j.has("trials")).findFirst()
            .orElseThrow(() -> new AssertionError("no trials line: " + r));
        assertEquals(3, t.get("trials").asInt());
        final List<Double> sorted = avgs.stream().sorted().toList();
        assertEquals(sorted.get(0), t.get("bw_avg_min_mib_s").asDouble(), 0.001);
        assertEquals(sorted.get(1), t.get("bw_avg_median_mib_s").asDouble(), 0.001);
        assertEquals(sorted.get(2), t.get("bw_avg_max_mib_s").asDouble(), 0.001);
        assertTrue(t.get("bw_avg_cv").asDouble() >= 0, r::toString);
        final Cli bad = Cli.run("perf", "write_lat", "--loopback", "--trials", "2");
        assertEquals(2, bad.exitCode(), bad::toString);
        assertTrue(bad.toString().contains("--trials works with bandwidth tests"), bad::toString);
        final Cli zero = Cli.run("perf", "write_bw", "--loopback", "--trials", "0");
        assertTrue(zero.toString().contains("--trials must be 1 .. 1000"), zero::toString);
    }

    @Test
    void checkValidatesEveryBandwidthRun() {
        for (final String test : new String[] {"write_bw", "read_bw", "send_bw"}) {
            final Cli r = Cli.run("perf", test, "--loopback", "-n", "20", "--warmup", "0", "-s", "10000", "--check");
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.out().contains("# check: byte-exact: " + (test.equals("read_bw") ? "B -> A"
                : "A -> B") + " byte-exact: 10000 bytes per direction"), r::toString);
            assertTrue(r.out().contains("(by CPU: host memory compared byte by byte)"), r::toString);
        }
        final Cli atomic = Cli.run("perf", "atomic_bw", "--loopback", "--check");
        assertEquals(2, atomic.exitCode(), atomic::toString);
        assertTrue(atomic.toString().contains("atomic_bw moves none"), atomic::toString);
        final Cli lat = Cli.run("perf", "write_lat", "--fabric", "tcp", "--loopback", "--check");
        assertEquals(2, lat.exitCode(), lat::toString);
        assertTrue(lat.err().contains("--check works with bandwidth tests"), lat::toString);
    }

    /** --check across processes (it used to be refused): the server checks writes and sends, the client reads. */
    @Test
    void checkAcrossProcessesBothWays() throws Exception {
        for (final String fabric : new String[] {"shm", "tcp"}) {
            for (final String test : new String[] {"write_bw", "send_bw", "read_bw"}) {
                final Cli r = Cli.run("perf", test, "--fabric", fabric, "--loopback", "-n", "30", "--warmup", "0",
                    "-s", "10000", "--check", "--json");
                assertEquals(0, r.exitCode(), r::toString);
                final JsonNode c = r.lines().stream().map(PerfCommandTest::json).filter(j -> j.has("check"))
                    .findFirst().orElseThrow(() -> new AssertionError("no check object: " + r));
                assertEquals("byte-exact", c.get("check").asText(), r::toString);
                assertEquals(fabric, c.get("fabric").asText(), r::toString);
                final boolean read = test.equals("read_bw");
                assertTrue(c.get("evidence").asText().startsWith(read ? "byte-exact: server -> client"
                    : "byte-exact: client -> server"), r::toString);
                assertTrue(c.get("check_by").asText().startsWith(read ? "the client process" : "the server process"),
                    r::toString);
            }
        }
        final Cli table = Cli.run("perf", "write_bw", "--fabric", "shm", "--loopback", "-n", "30", "--warmup", "0",
            "-s", "4096", "--check");
        assertEquals(0, table.exitCode(), table::toString);
        assertEquals(1, tableRows(table, BW).size(), table::toString);
        assertTrue(table.out().contains("# check: byte-exact: client -> server"), table::toString);
    }

    @Test
    void checkOnSimulatedGpuMemoryRunsTheKernelAndSaysSo() throws Exception {
        for (final String test : new String[] {"write_bw", "read_bw", "send_bw"}) {
            final Cli r = Cli.run("perf", test, "--loopback", "--mem", "gpu", "--gpu", "sim:h200", "-n", "20",
                "--warmup", "0", "-s", "10000", "--check", "--json");
            assertEquals(0, r.exitCode(), r::toString);
            final com.fasterxml.jackson.databind.JsonNode c = r.lines().stream().filter(l -> l.contains("\"check\""))
                .map(l -> {
                    try {
                        return new com.fasterxml.jackson.databind.ObjectMapper().readTree(l);
                    } catch (final java.io.IOException e) {
                        throw new AssertionError(l, e);
                    }
                }).findFirst().orElseThrow(() -> new AssertionError(r.toString()));
            assertEquals("byte-exact", c.get("check").asText(), r::toString);
            assertTrue(c.get("check_by").asText().startsWith("GPU kernel vis_verify on "), r::toString);
            assertTrue(c.get("check_by").asText().contains("SM worker threads"), r::toString);
            assertTrue(c.get("simulated").asBoolean());
        }
    }

    @Test
    void bidirectionalPrintsEachDirectionAndTheSum() throws Exception {
        for (final String test : new String[] {"write_bw", "read_bw", "send_bw"}) {
            final Cli r = Cli.run("perf", test, "--loopback", "-b", "-n", "40", "--warmup", "0", "-s", "9000",
                "--check", "--json");
            assertEquals(0, r.exitCode(), r::toString);
            final com.fasterxml.jackson.databind.ObjectMapper om = new com.fasterxml.jackson.databind.ObjectMapper();
            double ab = -1;
            double ba = -1;
            double sum = -1;
            long sumIters = -1;
            String check = null;
            for (final String l : r.lines()) {
                final com.fasterxml.jackson.databind.JsonNode o = om.readTree(l);
                if ("a_to_b".equals(o.path("direction").asText())) {
                    ab = o.get("bw_avg_mib_s").asDouble();
                    assertEquals(40, o.get("iterations").asLong());
                } else if ("b_to_a".equals(o.path("direction").asText())) {
                    ba = o.get("bw_avg_mib_s").asDouble();
                    assertEquals(40, o.get("iterations").asLong());
                } else if (o.has("bidirectional") && o.has("bw_avg_mib_s")) {
                    sum = o.get("bw_avg_mib_s").asDouble();
                    sumIters = o.get("iterations").asLong();
                } else if (o.has("check")) {
                    check = o.get("evidence").asText();
                }
            }
            assertTrue(ab > 0 && ba > 0, r::toString);
            assertEquals(ab + ba, sum, 0.01, r::toString);
            assertEquals(80, sumIters, r::toString);
            assertTrue(check != null && check.startsWith("byte-exact: ") && check.contains("(upper half) byte-exact"),
                r::toString);
        }
        final Cli text = Cli.run("perf", "write_bw", "--loopback", "-b", "-n", "20", "--warmup", "0", "-s", "4096");
        assertEquals(0, text.exitCode(), text::toString);
        assertTrue(text.out().contains("bidirectional (-b)") && text.out().contains("# -b a to b: 20 messages")
            && text.out().contains("# -b b to a: 20 messages") && text.out().contains("# -b: the table's row is the sum of both"), text::toString);
        final Cli atomic = Cli.run("perf", "atomic_bw", "--loopback", "-b");
        assertEquals(2, atomic.exitCode(), atomic::toString);
        assertTrue(atomic.err().contains("-b/--bidirectional applies to write_bw, read_bw and send_bw"), atomic::toString);
        final Cli remote = Cli.run("perf", "write_bw", "--fabric", "shm", "--loopback", "-b");
        assertEquals(2, remote.exitCode(), remote::toString);
        final Cli striped = Cli.run("perf", "write_bw", "--loopback", "-b", "--stripe", "-q", "2");
        assertEquals(2, striped.exitCode(), striped::toString);
        final Cli nat = Cli.run("perf", "write_bw", "--loopback", "-b", "--provider", "native");
        assertEquals(2, nat.exitCode(), nat::toString);
        assertTrue(nat.err().contains("-b/--bidirectional runs on the software NICs"), nat::toString);
    }

    @Test
    void sendBwWithSeveralQpsAndDedicatedProgress() {
        final Cli r = Cli.run("perf", "send_bw", "--loopback", "-n", "30", "--warmup", "0", "-q", "2", "-s",
            "5000", "--progress", "dedicated", "--mtu", "1024");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.lines().get(1).contains("progress: dedicated"), r::toString);
    }

    @Test
    void writeAndSendBwWithOwnDeviceProgress() {
        for (final String test : new String[] {"write_bw", "send_bw", "read_bw"}) {
            final Cli r = Cli.run("perf", test, "--loopback", "-n", "200", "--warmup", "0", "-s", "8192",
                "--progress", "own-device");
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.lines().get(1).contains("progress: own_device"), r::toString);
            assertTrue(tableRows(r, BW).get(0).trim().startsWith("8192 "), r::toString);
        }
    }

    @Test
    void acrossProcessesOverSharedMemoryAndTcp() {
        // --loopback's server listens on a free port it reports: no fixed port to collide with
        for (final String fabric : new String[] {"shm", "tcp"}) {
            for (final String test : new String[] {"write_bw", "send_bw", "read_bw", "write_lat", "send_lat",
                "read_lat", "atomic_lat"}) {
                final Cli r = Cli.run("perf", test, "--fabric", fabric, "--loopback", "-n", "300", "--warmup", "100", "--json");
                assertEquals(0, r.exitCode(), r::toString);
                final JsonNode last = json(r.lines().get(r.lines().size() - 1));
                assertEquals(fabric, last.path("fabric").asText(), r::toString);
                assertTrue(last.path("simulated").asBoolean(false), r::toString);
                assertEquals(300, last.path("iterations").asLong(), r::toString);
                if (fabric.equals("shm") && test.equals("write_bw")) {
                    // the single copy across processes, or the ring with the reason (no ptrace permission here)
                    final String mode = last.path("shm_copy_mode").asText();
                    assertTrue(mode.equals("cma") || mode.equals("ring")
                        && last.path("shm_copy_reason").asText().contains("process_vm_readv"), r::toString);
                }
            }
        }
        final Cli faulty = Cli.run("perf", "write_bw", "--fabric", "shm", "--loopback", "-n", "300", "--warmup", "0", "-s", "20000", "--faults", "drop=0.02,seed=4");
        assertEquals(0, faulty.exitCode(), faulty::toString);
        assertTrue(faulty.out().contains("# faults (client's sending links): drop=0.02,seed=4"), faulty::toString);
        assertTrue(faulty.out().contains("# shm_copy_mode: ring") && faulty.out().contains("looks at payloads"),
            faulty::toString);
        final Cli table = Cli.run("perf", "write_bw", "--fabric", "tcp", "--loopback", "-n", "200", "--warmup", "0", "-s", "70000", "-q", "2");
        assertEquals(0, table.exitCode(), table::toString);
        assertTrue(table.lines().get(0).contains("tcp fabric between processes"), table::toString);
        assertTrue(tableRows(table, BW).get(0).trim().startsWith("70000 "), table::toString);
    }

    private static int autoBuffer(final String limit) {
        try {
            // the first line, read whole: a sysctl file gives end-of-file to a read at a non-zero offset
            final List<String> lines = Files.readAllLines(Path.of("/proc/sys/net/core", limit));
            return !lines.isEmpty() && Long.parseLong(lines.get(0).trim()) >= 4 << 20 ? 4 << 20 : 0;
        } catch (final java.io.IOException | NumberFormatException e) {
            return 0;
        }
    }

    @Test
    void theTcpFabricsSettingsAreShownWithTheirSources(@TempDir final Path tmp) throws Exception {
        System.setProperty("gdrkit.tcp.spin.us", "40");
        try {
            final Cli j = Cli.run("perf", "write_bw", "--fabric", "tcp", "--loopback", "-n", "50", "--warmup", "0",
                "-s", "4096", "--json");
            assertEquals(0, j.exitCode(), j::toString);
            final JsonNode settings = json(j.lines().get(j.lines().size() - 1)).path("tcp_settings");
            // the socket buffers' default follows the kernel's limits: 4 MiB where they allow it, else 0
            final String snd = "gdrkit.tcp.sndbuf=" + autoBuffer("wmem_max") + " (default)";
            final String rcv = "gdrkit.tcp.rcvbuf=" + autoBuffer("rmem_max") + " (default)";
            assertEquals(List.of(snd, rcv,
                "gdrkit.tcp.park.ms=1 (default)", "gdrkit.tcp.spin.us=40 (property)",
                "gdrkit.tcp.direct.min=16384 (default)"),
                JSON.convertValue(settings, List.class), j::toString);
            // and what the kernel granted the client's connection, as it reports it: at least the ask where one was
            // made
            final String granted = json(j.lines().get(j.lines().size() - 1)).path("tcp_buffers_granted").asText();
            final java.util.regex.Matcher g = java.util.regex.Pattern.compile("SO_SNDBUF (\\d+) B, SO_RCVBUF (\\d+) B")
                .matcher(granted);
            assertTrue(g.matches(), () -> "granted: " + granted);
            assertTrue(Long.parseLong(g.group(1)) >= autoBuffer("wmem_max"), granted);
            assertTrue(Long.parseLong(g.group(2)) >= autoBuffer("rmem_max"), granted);
            final Path dir = tmp.resolve("r");
            final Cli t = Cli.run("perf", "write_lat", "--fabric", "tcp", "--loopback", "-n", "50", "--warmup", "0",
                "-s", "64", "--report", dir.toString());
            assertEquals(0, t.exitCode(), t::toString);
            final String line = "# tcp_settings: [" + snd + ", " + rcv + ", "
                + "gdrkit.tcp.park.ms=1 (default), gdrkit.tcp.spin.us=40 (property), gdrkit.tcp.direct.min=16384 "
                + "(default)]";
            assertTrue(t.lines().contains(line), t::toString);
            assertTrue(t.lines().contains("# tcp_parking: false"), () -> "a latency test busy-polls: " + t);
            assertTrue(json(j.lines().get(j.lines().size() - 1)).path("tcp_parking").asBoolean(false), j::toString);
            assertTrue(Files.readString(dir.resolve("report.json")).contains(line.substring(2)),
                () -> "the report's run notes carry it: " + t);
            final Cli shm = Cli.run("perf", "write_lat", "--fabric", "shm", "--loopback", "-n", "20", "--warmup",
                "0", "-s", "64", "--json");
            assertEquals(0, shm.exitCode(), shm::toString);
            assertTrue(json(shm.lines().get(shm.lines().size() - 1)).path("tcp_settings").isMissingNode(),
                "no TCP fabric, no TCP settings: " + shm);
        } finally {
            System.clearProperty("gdrkit.tcp.spin.us");
        }
    }

    @Test
    void faultsOnTheInJvmFabricAreCountedAndBadSpecsRefused() {
        final Cli r = Cli.run("perf", "write_bw", "--loopback", "-n", "500", "--warmup", "0", "-s", "9000",
            "--faults", "drop=0.02,dup=0.02,reorder=0.02,corrupt=0.01,seed=9");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().contains("# faults injected: dropped="), r::toString);
        final Cli bad = Cli.run("perf", "write_bw", "--loopback", "--faults", "lose=1");
        assertEquals(2, bad.exitCode(), bad::toString);
        assertTrue(bad.err().contains("unknown fault keys [lose]"), bad::toString);
    }

    @Test
    void stripedWriteBwOverSeveralQps() {
        final Cli r = Cli.run("perf", "write_bw", "--loopback", "-q", "4", "--stripe", "-n", "300", "--warmup", "0",
            "-s", "1000000", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(300, json(r.lines().get(r.lines().size() - 1)).path("iterations").asLong(), r::toString);
        final Cli remote = Cli.run("perf", "write_bw", "--fabric", "shm", "--loopback", "-q", "3", "--stripe", "-n",
            "100", "--warmup", "0", "-s", "300000");
        assertEquals(0, remote.exitCode(), remote::toString);
        for (final String test : new String[] {"write_bw", "send_lat"}) {
            final Cli timed = Cli.run("perf", test, "--fabric", "tcp", "--loopback",
                "-D", "0.3", "--warmup", "10", "--report_gbits", "-s", "4096");
            assertEquals(0, timed.exitCode(), timed::toString);
            assertTrue(timed.out().contains("duration: 0.3 s"), timed::toString);
        }
        final Cli bad = Cli.run("perf", "read_bw", "--loopback", "--stripe");
        assertEquals(2, bad.exitCode(), bad::toString);
        assertTrue(bad.err().contains("--stripe works with write_bw only"), bad::toString);
    }

    @Test
    void clientWithoutServerFailsClearly() {
        final Cli r = Cli.run("perf", "write_bw", "--fabric", "shm", "127.0.0.1", "--port", "1", "-n", "10");
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.err().contains("REFUSED"), r::toString);
    }

    @Test
    void durationRunStops() {
        final Cli r = Cli.run("perf", "write_bw", "--loopback", "-D", "0.2", "--warmup", "0", "-s", "4096", "-q",
            "2", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        assertFalse(r.lines().isEmpty(), r::toString);
    }

    @Test
    void allSizesForAtomicIsOneRow() {
        final Cli r = Cli.run("perf", "atomic_lat", "--loopback", "-a", "-n", "10", "--warmup", "0", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.lines().size(), r::toString);
    }

    @Test
    void reportFolderBesideTheUnchangedTable(@TempDir final Path tmp) throws Exception {
        final Path dir = tmp.resolve("perf-report");
        final Cli r = Cli.run("perf", "write_bw", "--loopback", "-n", "20", "--warmup", "5", "-s", "64", "--report",
            dir.toString());
        assertEquals(0, r.exitCode(), r::toString);
        final List<String> lines = r.lines();
        assertEquals(5, lines.size(), r::toString);
        assertEquals(Loopback.SIMULATED_HEADER, lines.get(0));
        assertEquals(BW, lines.get(2));
        assertTrue(lines.get(3).trim().startsWith("64 "), r::toString);
        final Path html = dir.resolve("report.html").toAbsolutePath();
        assertEquals("# report: " + html, lines.get(4));
        final JsonNode j = JSON.readTree(dir.resolve("report.json").toFile());
        assertTrue(j.get("simulated").asBoolean());
        assertTrue(j.get("simulated_what").asText().startsWith("software NICs (simulated) on the in-JVM fabric"),
            j::toString);
        assertTrue(j.get("command").asText().startsWith("gdrkit perf write_bw --loopback -n 20"), j::toString);
        assertEquals("write_bw", j.get("facts").get("test").asText());
        final JsonNode bw = j.get("sections").get(0);
        assertEquals(1, bw.get("rows").size());
        assertEquals(64, bw.get("rows").get(0).get("bytes").asInt());
        assertEquals(20, bw.get("rows").get(0).get("iterations").asInt());
        assertTrue(bw.get("rows").get(0).get("bw_avg_mib_s").asDouble() > 0);
        assertEquals(2, bw.get("charts").size(), "bandwidth and message rate against size");
        final String page = Files.readString(html);
        assertEquals(2, page.split("<svg ", -1).length - 1, "one inline SVG per chart");
        assertTrue(Files.readString(dir.resolve("report.md")).contains("| 64 | 20 |"));
    }

    @Test
    void reportWithJsonAndLatencyPercentiles(@TempDir final Path tmp) throws Exception {
        final Cli r = Cli.run("perf", "send_lat", "--loopback", "-n", "20", "--warmup", "5", "-s", "8", "--json",
            "--report", tmp.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(2, r.lines().size(), r::toString);
        assertEquals(8, JSON.readTree(r.lines().get(0)).get("bytes").asInt());
        assertEquals(tmp.resolve("report.html").toAbsolutePath().toString(),
            JSON.readTree(r.lines().get(1)).get("report").asText());
        final JsonNode lat = JSON.readTree(tmp.resolve("report.json").toFile()).get("sections").get(0);
        assertEquals("p999_us", lat.get("columns").get(8).asText());
        final JsonNode series = lat.get("charts").get(0).get("series");
        assertEquals(5, series.size(), series::toString);
        assertEquals("p99.9", series.get(4).get("name").asText());
    }

    @Test
    void reportRefusedOnTheServerAndUnwritableFolderFails(@TempDir final Path tmp) throws Exception {
        final Cli server = Cli.run("perf", "write_bw", "--fabric", "shm", "--report", tmp.toString());
        assertEquals(2, server.exitCode(), server::toString);
        assertTrue(server.err().contains("--report is written by the side that measures"), server::toString);
        final Path file = Files.writeString(tmp.resolve("a-file"), "x");
        final Cli bad = Cli.run("perf", "write_bw", "--loopback", "-n", "10", "--warmup", "0", "-s", "64",
            "--report", file.resolve("r").toString());
        // checked before the run: a usage error, and nothing measured
        assertEquals(2, bad.exitCode(), bad::toString);
        assertTrue(bad.err().contains("gdrkit perf: --report " + file.resolve("r") + ": cannot write there"),
            bad::toString);
        assertEquals("", bad.out(), bad::toString);
    }

    @Test
    void baselinePrintsMemcpyAndPingPong() throws Exception {
        final Cli r = Cli.run("perf", "--baseline", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        boolean memcpy = false;
        boolean pingPong = false;
        for (final String l : r.lines()) {
            final JsonNode j = JSON.readTree(l);
            memcpy |= "memcpy".equals(j.path("baseline").asText()) && j.get("bw_mib_s").asDouble() > 0;
            pingPong |= "cacheline_pingpong".equals(j.path("baseline").asText());
        }
        assertTrue(memcpy && pingPong, r::toString);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "perf foo_bw --loopback|unknown test 'foo_bw'",
        "perf atomic_lat --loopback -s 0|atomics operate on exactly 8 bytes",
        "perf write_bw --loopback -n -5|-n/--iters -5 must be at least 1",
        "perf write_bw --loopback -s 16777216|exceeds the registered buffer",
        "perf write_bw --loopback -s 0|must be at least 1 byte",
        "perf write_bw --loopback --mtu 3000|--mtu 3000 must be a power of two",
        "perf write_bw --loopback -q 0|-q/--qp 0 must be",
        "perf write_lat --loopback -q 2|latency tests use one QP",
        "perf write_bw --loopback --progress fast|--progress must be invoker, own-device or dedicated",
        "perf write_bw|give --loopback (both NICs in this JVM) or --fabric shm|tcp",
        "perf write_bw --fabric udp --loopback|Invalid value for option '--fabric': 'udp' is not one of injvm, shm, tcp",
        "perf write_bw --fabric injvm --loopback|--fabric takes shm or tcp here, not injvm",
        "perf write_bw --loopback somehost|a HOST needs --fabric",
        "perf write_bw --fabric shm --loopback somehost|do not name a HOST",
        "perf write_bw --fabric shm --loopback --port 70000|--port 70000 outside 0..65535",
        "perf write_bw --fabric shm --bind no.such.host.invalid|--bind no.such.host.invalid: not an address",
        "perf write_bw --fabric tcp --loopback --token short|--token: a token must have at least 8 characters",
        "perf write_bw --loopback -t 0|-t/--tx-depth 0",
        "perf write_bw --loopback -D -1|-D/--duration",
        "perf --loopback|name a test",
        "perf write_bw --loopback --bogus|Unknown option",
        "perf write_bw --loopback -s abc|Invalid value",
    })
    void badFlagsExitTwoWithoutStackTrace(final String spec) {
        final String[] parts = spec.split("\\|");
        final Cli r = Cli.run(parts[0].split(" "));
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains(parts[1]), r::toString);
        assertFalse(r.err().contains("\tat "), r::toString);
        assertFalse(r.err().contains("Exception"), r::toString);
    }

    /**
     * The rows under {@code header}: the table must be contiguous (perftest parsers read the header, then rows until
     * the first other line), so every line after the first non-row is a note, never another row.
     */
    private static List<String> tableRows(final Cli r, final String header) {
        final List<String> lines = r.lines();
        final int h = lines.indexOf(header);
        assertTrue(h >= 0, () -> "no header in " + r);
        final List<String> rows = new java.util.ArrayList<>();
        int i = h + 1;
        while (i < lines.size() && !lines.get(i).startsWith("#")) {
            rows.add(lines.get(i++));
        }
        for (; i < lines.size(); i++) {
            assertTrue(lines.get(i).startsWith("#"), "a row after a note, the table is split: " + r);
        }
        assertTrue(!rows.isEmpty(), () -> "no row under the header: " + r);
        return rows;
    }

    /** Every value starts where its column header does (perftest's spacing), 7-digit sizes included. */
    private static void assertAligned(final String header, final String row, final String... cols) {
        int from = 0;
        int v = 0;
        for (final String c : cols) {
            final int at = header.indexOf(c, from);
            from = at + c.length();
            assertTrue(at < row.length() && row.charAt(at) != ' ' && (at == 0 || row.charAt(at - 1) == ' '),
                () -> "value of '" + c + "' does not start at column " + at + ":\n" + header + "\n" + row);
            v++;
        }
        assertEquals(cols.length, row.trim().split("\\s+").length, row);
    }

    @Test
    void theTableIsContiguousAndAlignedForSevenDigitSizes() {
        final Cli bw = Cli.run("perf", "write_bw", "--loopback", "-b", "-n", "8", "--warmup", "0", "-s", "1048576");
        assertEquals(0, bw.exitCode(), bw::toString);
        final List<String> rows = tableRows(bw, BW);
        assertEquals(1, rows.size(), bw::toString);
        assertAligned(BW, rows.get(0), "#bytes", "#iterations", "BW peak", "BW average", "MsgRate");
        assertTrue(bw.out().indexOf("# -b a to b") > bw.out().indexOf(rows.get(0)), bw::toString);
        final Cli lat = Cli.run("perf", "write_lat", "--loopback", "-n", "5", "--warmup", "0", "-s", "8388608");
        assertEquals(0, lat.exitCode(), lat::toString);
        assertAligned(LAT, tableRows(lat, LAT).get(0), "#bytes", "#iterations", "t_min", "t_max", "t_typical",
            "t_avg", "t_stdev", "99%", "99.9%");
        // across processes the fabric's facts (# shm_*, # tcp_settings) used to land between header and rows
        for (final String fabric : new String[] {"shm", "tcp"}) {
            final Cli r = Cli.run("perf", "write_bw", "--fabric", fabric, "--loopback", "-n", "50", "--warmup", "0",
                "-s", "4096");
            assertEquals(0, r.exitCode(), r::toString);
            assertEquals(1, tableRows(r, BW).size(), r::toString);
            assertTrue(r.out().contains(fabric.equals("shm") ? "# shm_copy_mode" : "# tcp_settings"), r::toString);
        }
    }

    /** perftest's iteration counts leave the JIT compiling: a time-based warm-up runs by default, and the header says it. */
    @Test
    void aTimeBasedWarmUpByDefaultNamedInTheHeader() throws Exception {
        final Cli def = Cli.run("perf", "write_lat", "--loopback", "-n", "20", "-s", "8");
        assertEquals(0, def.exitCode(), def::toString);
        assertTrue(def.lines().get(1).contains("warm-up: >= " + PerfCommand.DEFAULT_WARMUP_MS
            + " ms per size (rounds of max(-n, 50000) iterations"), def::toString);
        final Cli count = Cli.run("perf", "write_bw", "--loopback", "-n", "20", "--warmup", "5");
        assertTrue(count.lines().get(1).endsWith("warm-up: 5 iterations per size, unreported"), count::toString);
        final Cli both = Cli.run("perf", "write_bw", "--loopback", "-n", "20", "--warmup", "5", "--warmup-ms", "10",
            "--json");
        final JsonNode j = json(both.lines().get(0));
        assertEquals(10, j.path("warmup_ms").asLong(), both::toString);
        assertEquals(5, j.path("warmup_iters").asLong(), both::toString);
        final Cli none = Cli.run("perf", "write_bw", "--fabric", "tcp", "--loopback", "-n", "20", "--warmup", "0");
        assertEquals(0, none.exitCode(), none::toString);
        assertTrue(none.lines().get(1).endsWith("warm-up: none"), none::toString);
        final Cli bad = Cli.run("perf", "write_bw", "--loopback", "--warmup-ms", "-1");
        assertEquals(2, bad.exitCode(), bad::toString);
    }
}
