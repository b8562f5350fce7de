/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

class TopoCommandTest {
    private static final String DGX = "../gdr/src/test/resources/topo/dgx-8gpu-4nic.xml";

    @Test
    void xmlTopologyGivesPathsAndDecisions() throws Exception {
        final Cli r = Cli.run("topo", "--topo-file", DGX, "--json");
        assertEquals(0, r.exitCode(), r::toString);
        final JsonNode root = new ObjectMapper().readTree(r.out());
        assertEquals(32, root.get("gpu_nic").size());
        for (final JsonNode e : root.get("gpu_nic")) {
            for (final String f : new String[] {"gpu", "nic", "path", "gdr_read", "gdr_write", "reason"}) {
                assertTrue(e.has(f), f + " in " + e);
            }
        }
        assertEquals(56, root.get("gpu_gpu").size());
        final Cli sys = Cli.run("topo", "--topo-file", DGX, "--gdr-level", "LOC", "--json");
        final JsonNode strict = new ObjectMapper().readTree(sys.out());
        for (final JsonNode e : strict.get("gpu_nic")) {
            assertEquals(false, e.get("gdr_write").asBoolean(), e.toString());
            assertTrue(e.get("reason").asText().contains("> LOC"), e.toString());
        }
    }

    @Test
    void thisMachineHasNoGpuAndSaysSo() {
        final Cli r = Cli.run("topo");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().contains("sysfs"), r::toString);
    }

    @Test
    void badInputIsAClearError() {
        assertEquals(2, Cli.run("topo", "--topo-file", DGX, "--nvidia-smi", DGX).exitCode());
        final Cli bad = Cli.run("topo", "--topo-file", DGX, "--gdr-level", "FAR");
        assertEquals(2, bad.exitCode(), bad::toString);
        assertTrue(bad.err().contains("FAR"), bad::toString);
    }
}
