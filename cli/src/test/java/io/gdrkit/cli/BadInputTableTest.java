/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import picocli.CommandLine;

/**
 * Bad input, every command: exit code 2, one line on stderr (and at most one hint line), no stack trace, nothing on
 * stdout. The commands are taken from the CLI's own tree, so a command added without rows here fails
 * {@link #everyCommandHasRows()}. Every command also gets an unknown flag and a malformed --set.
 */
class BadInputTableTest {
    /** Command path ("" for the top level) to bad command lines (after the path). */
    static final Map<String, List<String[]>> TABLE = new LinkedHashMap<>();

    private static void row(final String command, final String... args) {
        TABLE.computeIfAbsent(command, k -> new ArrayList<>()).add(args);
    }

    static {
        row("", "--no-such-flag");
        row("", "no-such-command");
        row("demo", "--report", "/proc/gdrkit-no-such-dir/demo");
        row("perf", "write_bw", "--loopback", "-s", "64X");
        row("perf", "write_bw", "--loopback", "--mem", "gpu", "--gpu", "sim:a100");
        row("perf", "write_bw", "--loopback", "--mem", "gpu:x");
        row("perf", "write_bw", "--loopback", "--report", "/proc/gdrkit-no-such-dir");
        row("perf", "write_bw", "--loopback", "--fabric", "ib");
        row("perf", "write_bw", "--fabric", "injvm", "--loopback");
        row("perf", "write_bw", "--loopback", "--provider", "all");
        row("perf", "write_bw", "--loopback", "--trials", "0");
        row("perf", "no_such_test", "--loopback");
        row("devices", "--soft", "65");
        row("devices", "--provider", "host");
        row("socket-bw", "-s", "1X");
        row("socket-bw", "-D", "0");
        row("gpu-path", "--gpu", "cuda:x");
        row("gpu-path", "--gpu", "rocm:0");
        row("gpu-path", "-s", "0");
        row("gpu-path", "--path", "neither");
        row("topo", "--topo-file", "a.xml", "--nvidia-smi", "b.txt");
        row("doctor", "--provider", "bogus");
        row("doctor", "--provider", "soft");
        row("doctor", "--provider", "soft", "--gpu", "sim:nope");
        row("doctor", "--nccl", "NCCL_NET_GDR_LEVEL");
        row("visibility", "--size", "1X", "--fabric", "jvm");
        row("visibility", "--fabric", "ib");
        row("visibility", "--consumer", "sometimes", "--fabric", "jvm");
        row("visibility", "--gpu", "sim:a100", "--fabric", "jvm");
        row("visibility", "--report", "/proc/gdrkit-no-such-dir", "--fabric", "jvm");
        row("visibility-sender", "--connect", "no-port-here");
        row("visibility-sender");
        row("ordering", "--variants", "sideways");
        row("ordering", "--size", "0");
        row("ordering", "--provider", "host");
        row("abi-check", "--probe-output", "/nonexistent/gdrkit-probe-output");
        row("regtiming", "--max-pages", "0");
        row("regtiming", "--gpu", "cuda:rank");
        row("shmem-perf", "put_lat", "--np", "1");
        row("shmem-perf", "put_lat", "-b", "1X");
        row("shmem-perf", "put_lat", "-b", "4K", "-e", "1K");
        row("shmem-perf", "no_such_test");
        row("shmem-perf", "ring_rtt");
        row("shmem-moe", "--np", "9");
        row("shmem-moe", "--bytes", "7");
        row("shmem-moe", "--fabric", "tcp");
        row("coll", "allreduce", "-b", "1M", "-e", "1K");
        row("coll", "allreduce", "-d", "fp8");
        row("coll", "allreduce", "-o", "avg");
        row("coll", "allreduce", "-b", "1X");
        row("coll", "allreduce", "--np", "0");
        row("coll", "allreduce", "--mem", "gpu");
        row("coll", "allreduce", "--gpu", "sim:h200");
        row("coll", "allreduce", "--transport", "rdma");
        row("coll", "allreduce", "--fabric", "udp");
        row("coll", "allreduce", "--root", "2");
        row("coll", "allreduce", "-f", "1");
        row("coll", "allreduce", "--bind", "no.such.host.invalid");
        row("coll", "allreduce", "--report", "/proc/gdrkit-no-such-dir");
        row("coll", "allcook");
        row("launch", "-n", "0", "--", "true");
        row("launch", "-n", "1", "--port", "70000", "--", "true");
        row("model", "--no-such-flag");
        row("model qps", "--qps", "0");
        row("model qps", "--fabric", "shm");
        row("model qps", "--input", "/nonexistent/gdrkit-qps.jsonl");
        row("model crossover", "--input", "/nonexistent/gdrkit-paths.txt");
        row("model crossover", "--input", "/etc/hostname");
        row("model crossover", "--sizes", "1X");
        row("model topology", "--price", "0");
        row("model topology", "--price", "1Q");
    }

    /** Every command of the CLI, as a path: "", "coll", "model qps", ... */
    static List<String> commands() {
        final List<String> out = new ArrayList<>();
        walk(Main.commandLine(), "", out);
        return out;
    }

    private static void walk(final CommandLine cl, final String path, final List<String> out) {
        out.add(path);
        cl.getSubcommands().forEach((name, sub) -> walk(sub, path.isEmpty() ? name : path + " " + name, out));
    }

    @Test
    void everyCommandHasRows() {
        final TreeSet<String> missing = new TreeSet<>(commands());
        missing.removeAll(TABLE.keySet());
        assertEquals(new TreeSet<>(), missing, "commands without bad-input rows in " + getClass().getSimpleName());
        final TreeSet<String> unknown = new TreeSet<>(TABLE.keySet());
        unknown.removeAll(commands());
        assertEquals(new TreeSet<>(), unknown, "rows for commands the CLI does not have");
    }

    @TestFactory
    Stream<DynamicTest> badInputIsAUsageErrorInOneLine() {
        final List<DynamicTest> tests = new ArrayList<>();
        for (final String command : commands()) {
            final List<String[]> rows = new ArrayList<>(TABLE.getOrDefault(command, List.of()));
            if (!command.isEmpty()) {
                rows.add(new String[] {"--no-such-flag"});
                rows.add(new String[] {"--set", "NO_EQUALS_SIGN"});
                rows.add(new String[] {"--set", "=value"});
            }
            for (final String[] row : rows) {
                final List<String> args = new ArrayList<>(command.isEmpty() ? List.of()
                    : Arrays.asList(command.split(" ")));
                args.addAll(Arrays.asList(row));
                tests.add(DynamicTest.dynamicTest(String.join(" ", args), () -> check(args)));
            }
        }
        return tests.stream();
    }

    static void check(final List<String> args) {
        final Cli r = Cli.run(args.toArray(String[]::new));
        assertEquals(Main.EXIT_USAGE, r.exitCode(), r.toString());
        assertEquals("", r.out(), "nothing on stdout: " + r);
        final List<String> err = r.err().lines().toList();
        assertTrue(err.size() == 1 || err.size() == 2, "one line, and at most a hint: " + r);
        assertTrue(err.get(0).startsWith("gdrkit"), "names the command: " + r);
        if (err.size() == 2) {
            assertTrue(err.get(1).startsWith("Try 'gdrkit"), "the second line is the hint: " + r);
        }
        assertFalse(r.err().contains("at io.") || r.err().contains("Exception") || r.err().contains("\tat "),
            "no stack trace or exception class: " + r);
    }
}
