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
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@code shmem-moe} with its PEs as processes (one PE each, the shared-memory fabric, the launcher's bootstrap). */
class ShmemMoeCommandTest {
    @Test
    void moeAcrossThreeProcessesIsByteChecked() throws Exception {
        final Path dir = Files.createDirectories(Path.of("target/shmem-moe").toAbsolutePath());
        final Path log = dir.resolve("moe-procs.log");
        final String java = ProcessHandle.current().info().command().orElse("java");
        final Process p = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
            System.getProperty("java.class.path"), Main.class.getName(), "shmem-moe", "--np", "3", "--fabric", "shm",
            "--mode", "ibrc", "--tokens", "8", "--bytes", "256", "--seed", "7", "--json"))
            .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(180, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("shmem-moe --fabric shm did not end in 180 s: " + Files.readString(log));
        }
        final String out = Files.readString(log);
        assertEquals(0, p.exitValue(), out);
        final String line = out.lines().filter(l -> l.startsWith("{")).findFirst().orElseThrow(() ->
            new AssertionError("no JSON line from rank 0: " + out));
        assertEquals(1, out.lines().filter(l -> l.startsWith("{")).count(), "only rank 0 prints: " + out);
        final JsonNode r = new ObjectMapper().readTree(line).path("result");
        assertEquals(3, r.path("nPes").asInt());
        assertTrue(r.path("verified").asBoolean(false), out);
        assertEquals(0, r.path("mismatches").asLong(-1), out);
        int tokens = 0;
        for (final JsonNode t : r.path("tokensPerExpert")) {
            tokens += t.asInt();
        }
        assertEquals(3 * 8, tokens, "every token went to one expert: " + out);
        assertTrue(r.path("device").asText().contains("PEs are 3 processes"), out);
    }

    @Test
    void aBadFabricIsAUsageError() {
        final Cli c = Cli.run("shmem-moe", "--fabric", "rdma");
        assertEquals(2, c.exitCode(), c.toString());
        assertTrue(c.err().contains("Invalid value for option '--fabric': 'rdma' is not one of injvm, shm, tcp"),
            c.toString());
        final Cli tcp = Cli.run("shmem-moe", "--fabric", "tcp");
        assertEquals(2, tcp.exitCode(), tcp.toString());
        assertTrue(tcp.err().contains("--fabric takes injvm or shm here, not tcp"), tcp.toString());
    }
}
