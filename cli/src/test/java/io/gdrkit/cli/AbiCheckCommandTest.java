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
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AbiCheckCommandTest {
    @Test
    void compilesTheProbeHereAndPasses() throws Exception {
        Assumptions.assumeTrue(Files.exists(Path.of("/usr/include/infiniband/verbs.h")), "no rdma-core headers");
        final Cli c = Cli.run("abi-check", "--probe-source", "../ibverbs/src/test/c/abi_probe.c", "--json");
        assertEquals(0, c.exitCode(), c.toString());
        final JsonNode j = new ObjectMapper().readTree(c.out());
        assertTrue(j.get("passed").asBoolean());
        assertTrue(j.get("compared").asInt() > 200, c.out());
        assertEquals(0, j.get("mismatches").size());
    }

    @Test
    void aWrongProbeOutputFailsAndNamesTheField(@TempDir final Path dir) throws Exception {
        final Path bad = dir.resolve("abi.txt");
        Files.writeString(bad, "ibv_wc.slid 40\nibv_sge.sizeof 16\nIBV_QPT_RC.value 2\n");
        final Cli c = Cli.run("abi-check", "--probe-output", bad.toString(), "--json");
        assertEquals(1, c.exitCode(), c.toString());
        final JsonNode j = new ObjectMapper().readTree(c.out());
        assertEquals(2, j.get("compared").asInt());
        assertEquals("ibv_wc.slid: C says 40, the FFM layout says 42", j.get("mismatches").get(0).asText());
        assertTrue(!j.get("passed").asBoolean());
    }

    @Test
    void unreadableInputsAreNamedUsageErrors(@TempDir final Path dir) throws Exception {
        final Cli missing = Cli.run("abi-check", "--probe-output", dir.resolve("none.txt").toString());
        assertEquals(2, missing.exitCode());
        assertTrue(missing.err().contains("cannot read " + dir.resolve("none.txt") + ": no such file"),
            missing.toString());
        final Path junk = dir.resolve("junk.txt");
        Files.writeString(junk, "hello world again\n");
        final Cli bad = Cli.run("abi-check", "--probe-output", junk.toString());
        assertEquals(2, bad.exitCode());
        assertTrue(bad.err().contains("not an ABI probe line: 'hello world again'"), bad.toString());
        final Cli noSrc = Cli.run("abi-check", "--probe-source", dir.resolve("x.c").toString());
        assertEquals(2, noSrc.exitCode());
        assertTrue(noSrc.err().contains("no such file"), noSrc.toString());
    }
}
