/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.ibverbs.NativeProvider;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/**
 * {@code --provider native|soft} on every command that opens a device, on a host without an RDMA device: each
 * command ends at once with NO_RDMA_DEVICE and the probe's evidence (libibverbs loaded or not, the device count,
 * /sys/class/infiniband), non-zero, having printed no result; a bad value is a usage error. And perf's -R on the
 * software NICs: the QPs meet through gdrkit's connection manager and the moved bytes are checked.
 */
class NativeProviderCommandsTest {
    static List<List<String>> commands() {
        return List.of(
            List.of("perf", "write_bw", "--loopback", "--provider", "native", "-n", "10"),
            List.of("perf", "send_lat", "--loopback", "--provider", "native", "-R", "-n", "10"),
            List.of("perf", "read_bw", "--loopback", "--provider", "native", "--mem", "gpu:0", "-n", "10"),
            List.of("visibility", "--provider", "native", "--gpu", "cuda:0"),
            List.of("ordering", "--provider", "native"),
            List.of("coll", "allreduce", "--provider", "native"));
    }

    @ParameterizedTest
    @MethodSource("commands")
    void withoutADeviceEachCommandEndsEarlyWithTheProbesEvidence(final List<String> args) {
        final NativeProvider.Probe probe = NativeProvider.probe();
        Assumptions.assumeTrue(probe.devices().isEmpty(), "this host has an RDMA device: " + probe.evidence());
        final Cli r = Cli.run(args.toArray(String[]::new));
        // a requested device that is absent: exit code 3
        assertEquals(Main.EXIT_NO_HARDWARE, r.exitCode(), r::toString);
        final String err = r.err();
        assertTrue(err.startsWith("gdrkit " + args.getFirst() + ": error: NO_RDMA_DEVICE: the native (ibverbs) "
            + "provider has no RDMA device for "), err);
        assertTrue(err.contains(probe.evidence()), "the probe's evidence: " + err);
        assertTrue(err.contains("/sys/class/infiniband"), err);
        if (probe.libraryLoaded()) {
            assertTrue(err.contains("libibverbs") && err.contains("listed 0 device(s)"), err);
        }
        assertEquals("", r.out().strip(), "nothing measured or printed before the end: " + r);
    }

    @Test
    void aBadProviderIsAUsageErrorOnEveryCommand() {
        for (final List<String> args : commands()) {
            final List<String> bad = args.stream().map(a -> a.equals("native") ? "nic" : a).toList();
            final Cli r = Cli.run(bad.toArray(String[]::new));
            assertEquals(2, r.exitCode(), r::toString);
            assertTrue(r.err().contains("Invalid value for option '--provider': 'nic' is not one of"), r::toString);
        }
    }

    @Test
    void softDashRConnectsThroughTheConnectionManagerAndTheBytesArrive() throws Exception {
        final Cli r = Cli.run("perf", "write_bw", "--loopback", "-R", "-q", "2", "--check", "-n", "200",
            "--warmup", "10", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        final String cm = r.lines().stream().filter(l -> l.startsWith("# -R: ")).findFirst().orElse("");
        // comments are not printed in --json mode: run the table form for the CM line
        final Cli table = Cli.run("perf", "write_bw", "--loopback", "-R", "-q", "2", "--check", "-n", "200",
            "--warmup", "10");
        assertEquals(0, table.exitCode(), table::toString);
        final String line = cm.isEmpty() ? table.lines().stream().filter(l -> l.startsWith("# -R: ")).findFirst()
            .orElseThrow(() -> new AssertionError("no -R line: " + table)) : cm;
        assertTrue(line.startsWith("# -R: connection manager 127.0.0.1:"), line);
        assertEquals(2, line.split("both checked against the MRs").length - 1, "one CM exchange per QP: " + line);
        assertTrue(table.out().contains("# check: "), table::toString);
        final ObjectMapper json = new ObjectMapper();
        boolean checked = false;
        for (final String l : r.lines()) {
            final JsonNode n = json.readTree(l);
            if (n.has("check")) {
                assertEquals("byte-exact", n.get("check").asText(), l);
                checked = true;
            }
        }
        assertTrue(checked, "a check record: " + r);
    }
}
