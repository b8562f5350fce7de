/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.core.config.SettingsReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code --set NAME=VALUE}: applies to the run, reaches the processes it starts, and is taken back after it. */
class SetFlagTest {
    /** Reads, while it runs, what the settings say. */
    @CommandLine.Command(name = "probe")
    static final class Probe implements Callable<Integer> {
        @CommandLine.Mixin
        Mixins.SetValues set;

        static String nics;
        static String level;
        static String levelSource;

        @Override
        public Integer call() {
            nics = System.getProperty("gdrkit.coll.nics");
            final var s = SettingsReader.ofProcess().text("NCCL_NET_GDR_LEVEL", "unset");
            level = s.value();
            levelSource = s.source().name();
            return 0;
        }
    }

    @Test
    void appliesToTheRunAndIsTakenBackAfterIt() {
        final Cli r = run(new CommandLine(new Probe()), "--set", "gdrkit.coll.nics=3", "--set",
            "NCCL_NET_GDR_LEVEL=LOC");
        assertEquals(0, r.exitCode(), r.toString());
        assertEquals("3", Probe.nics);
        assertEquals("LOC", Probe.level);
        assertEquals("FLAG", Probe.levelSource);
        assertNull(System.getProperty("gdrkit.coll.nics"), "taken back after the run");
        assertNull(SettingsReader.processOverrides().get("NCCL_NET_GDR_LEVEL"), "taken back after the run");
    }

    @Test
    void aMalformedPairIsAUsageError() {
        final Cli r = Cli.run("coll", "allreduce", "--set", "gdrkit.coll.nics");
        assertEquals(Main.EXIT_USAGE, r.exitCode(), r.toString());
        assertEquals("gdrkit coll: Invalid value for option '--set' (NAME=VALUE): 'gdrkit.coll.nics' is not "
            + "NAME=VALUE (e.g. NCCL_NET_GDR_LEVEL=PHB or gdrkit.coll.nics=2)", r.err().lines().findFirst()
            .orElseThrow());
        assertEquals("", r.out());
    }

    @Test
    void anUnknownSettingOrAValueOutOfItsRangeIsRefusedBeforeAnyWork() {
        final Cli unknown = Cli.run("coll", "allreduce", "--set", "gdrkit.coll.nicz=3");
        assertEquals(Main.EXIT_USAGE, unknown.exitCode(), unknown.toString());
        assertTrue(unknown.err().lines().findFirst().orElseThrow().contains("unknown setting gdrkit.coll.nicz: no "
            + "module's catalogue lists it"), unknown.toString());
        final Cli range = Cli.run("perf", "write_bw", "--loopback", "--set", "gdrkit.coll.nics=99");
        assertEquals(Main.EXIT_USAGE, range.exitCode(), range.toString());
        assertTrue(range.err().contains("gdrkit.coll.nics=99"), range.toString());
        assertEquals("", range.out(), "nothing ran");
    }

    /**
     * The ranks of {@code coll --fabric shm} are processes; rank 0 writes the report: its rows say 3 NICs per rank
     * (a property) and GDR off because of NCCL_NET_GDR_LEVEL=LOC (an environment name), both from --set.
     */
    @Test
    void reachesTheRankProcesses(@TempDir final Path dir) throws Exception {
        final Cli r = Cli.run("coll", "allreduce", "--np", "2", "--fabric", "shm", "--set", "gdrkit.coll.nics=3",
            "--set", "NCCL_NET_GDR_LEVEL=LOC", "--mem", "gpu", "--gpu", "sim:h200", "-b", "8", "-e", "8", "-n", "1",
            "-w", "0", "--jit-warmup-ms", "0", "--report", dir.toString());
        assertEquals(0, r.exitCode(), r.toString());
        final List<String> rows = Files.readAllLines(dir.resolve("coll.json"));
        assertEquals(1, rows.size());
        final JsonNode row = new ObjectMapper().readTree(rows.get(0));
        assertEquals(3, row.get("nics").asInt(), rows.get(0));
        assertEquals(false, row.get("gdr").asBoolean(), rows.get(0));
        assertTrue(row.get("gdr_settings").get(0).asText().equals("NCCL_NET_GDR_LEVEL=LOC (flag)"), rows.get(0));
    }

    private static Cli run(final CommandLine cl, final String... args) {
        final java.io.StringWriter out = new java.io.StringWriter();
        final java.io.StringWriter err = new java.io.StringWriter();
        final int rc = Main.execute(cl, args, new java.io.PrintWriter(out), new java.io.PrintWriter(err));
        return new Cli(rc, out.toString(), err.toString());
    }
}
