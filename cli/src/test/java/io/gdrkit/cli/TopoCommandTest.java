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
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TopoCommandTest {
    private static final String DGX = "../gdr/src/test/resources/topo/dgx-8gpu-4nic.xml";
    private static final String REAL = "../gdr/src/test/resources/topo/real/";

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
        final Cli far = Cli.run("topo", "--topo-file", DGX, "--gdr-level", "99");
        assertEquals(2, far.exitCode(), far::toString);
        assertTrue(far.err().contains("--gdr-level 99 is out of range"), far::toString);
    }

    @Test
    void unreadableInputsNameTheFileAndTheCause(@org.junit.jupiter.api.io.TempDir final java.nio.file.Path tmp)
        throws Exception {
        final Cli missing = Cli.run("topo", "--topo-file", "/nonexistent.xml");
        assertEquals(2, missing.exitCode(), missing::toString);
        assertTrue(missing.err().contains("/nonexistent.xml: no such file"), missing::toString);
        final java.nio.file.Path binary = java.nio.file.Files.write(tmp.resolve("smi.txt"),
            new byte[] {(byte) 0xC3, (byte) 0x28, (byte) 0xFF, 'G', 'P', 'U'});
        final Cli garbled = Cli.run("topo", "--nvidia-smi", binary.toString());
        assertEquals(2, garbled.exitCode(), garbled::toString);
        assertTrue(garbled.err().contains(binary.toString()), garbled::toString);
        assertTrue(!garbled.err().contains("Exception") && !garbled.err().contains("\tat "), garbled::toString);
    }

    @Test
    void labelsAndBusIdsComeFromTheFile() throws Exception {
        final Cli r = Cli.run("topo", "--topo-file", REAL + "aws-p5.48xl-topo.xml", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        final JsonNode root = new ObjectMapper().readTree(r.out());
        assertEquals(8 * 32, root.get("gpu_nic").size());
        // GPU dev 1 is at 0000:60:00.0 and its switch holds NICs dev 4..7 (rdmap96s0 at 0000:61:00.0 first).
        final JsonNode e = root.get("gpu_nic").get(32 + 4);
        assertEquals("GPU1", e.get("gpu").asText());
        assertEquals(1, e.get("gpu_dev").asInt());
        assertEquals("0000:60:00.0", e.get("gpu_busid").asText());
        assertEquals("rdmap96s0", e.get("nic").asText());
        assertEquals(4, e.get("nic_dev").asInt());
        assertEquals("0000:61:00.0", e.get("nic_busid").asText());
        assertEquals("PIX", e.get("path").asText());
        assertTrue(e.get("gdr_write").isBoolean() && e.get("gdr_write").asBoolean(), e.toString());
        assertTrue(e.get("gdr_read").asBoolean(), e.toString());
        assertEquals("unknown", e.get("mechanism").asText(), "no topology file says DMA-BUF or peermem");
        assertTrue(e.get("reason").asText().contains("mechanism unknown"), e.toString());
        assertTrue(!e.get("reason").asText().contains("peermem)") && !e.get("reason").asText().contains("via peer"),
            e.toString());
        final JsonNode far = root.get("gpu_nic").get(32);
        assertEquals("PHB", far.get("path").asText());
        // issue 34: the file has no <nvlink>; with NVLink from NVML NCCL relays through GPU0 (PXN): unknown, not false
        assertEquals("unknown", far.get("gdr_write").asText(), far.toString());
        assertTrue(far.get("reason").asText().contains("no <nvlink>"), far.toString());
        assertEquals("GPU1", root.get("nics").get(4).get("local_gpu").asText());
    }

    @Test
    void ibHcaLeavesNicsOut() throws Exception {
        // NCCL_IB_HCA as NCCL parses it: ^ excludes, = matches exactly; the p5's EFA devices are rdmapNNs0
        final Cli r = Cli.run("topo", "--topo-file", REAL + "aws-p5.48xl-topo.xml", "--json", "--set",
            "NCCL_IB_HCA=^=rdmap79s0");
        assertEquals(0, r.exitCode(), r::toString);
        final JsonNode root = new ObjectMapper().readTree(r.out());
        assertEquals("rdmap79s0", root.get("nics").get(0).get("name").asText());
        assertEquals(false, root.get("nics").get(0).get("ib_hca_selected").asBoolean());
        assertTrue(root.get("nics").get(0).get("local_gpu").isNull());
        assertEquals(true, root.get("nics").get(1).get("ib_hca_selected").asBoolean());
        final JsonNode own = root.get("gpu_nic").get(0);
        assertEquals(false, own.get("gdr_write").asBoolean(), own.toString());
        assertTrue(own.get("reason").asText().contains("NCCL_IB_HCA=^=rdmap79s0"), own.toString());
        assertEquals(true, root.get("gpu_nic").get(1).get("gdr_write").asBoolean());
        assertTrue(root.get("notes").toString().contains("left out rdmap79s0"), root.get("notes").toString());
    }

    @Test
    void partialFileSaysUnknownAndPrintsEveryNote() throws Exception {
        final Cli j = Cli.run("topo", "--topo-file", REAL + "azure-ndv4-topo.xml", "--json");
        assertEquals(0, j.exitCode(), j::toString);
        final JsonNode root = new ObjectMapper().readTree(j.out());
        final JsonNode first = root.get("gpu_nic").get(0);
        assertEquals("unknown", first.get("gdr_write").asText());
        assertTrue(first.get("gdr_write").isTextual(), "unknown is a third state, not a boolean");
        assertEquals("unknown", root.get("gpus").get(0).get("gdr").asText());
        assertEquals("unknown", root.get("gpus").get(0).get("sm").asText());
        assertEquals(3, root.get("notes").size(), root.get("notes").toString());
        final Cli t = Cli.run("topo", "--topo-file", REAL + "azure-ndv4-topo.xml");
        assertEquals(0, t.exitCode(), t::toString);
        assertTrue(t.out().contains("8 GPU(s), 8 NIC(s)"), t::toString);
        assertEquals(3, t.lines().stream().filter(l -> l.startsWith("# note: ")).count(), t::toString);
        assertTrue(t.out().contains("# note: at run time NCCL adds: NVLink/NVSwitch links from NVML"), t::toString);
    }

    @Test
    void nvidiaSmiNeverInventsAComputeCapability() throws Exception {
        final Cli r = Cli.run("topo", "--nvidia-smi", REAL + "nvidia-smi-nccl-issue-1264-h100.txt", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(!r.out().contains("cc 0") && !r.out().contains("sm=0"), r::toString);
        final JsonNode root = new ObjectMapper().readTree(r.out());
        assertEquals("unknown", root.get("gpus").get(0).get("sm").asText());
        // Storage NIC3: no GPU picks it, so no PXN: SYS and GDR off.
        final JsonNode storage = root.get("gpu_nic").get(3);
        assertEquals("NIC3", "NIC" + storage.get("nic_dev").asInt());
        assertEquals("SYS", storage.get("path").asText());
        assertEquals(false, storage.get("gdr_write").asBoolean());
        assertTrue(root.get("nics").get(3).get("local_gpu").isNull());
    }

    @Test
    void unreadableInputIsOneNamedLine(@TempDir final Path dir) throws Exception {
        final Path missing = dir.resolve("nope.xml");
        assertReadError(Cli.run("topo", "--topo-file", missing.toString()), missing + ": no such file");
        assertReadError(Cli.run("topo", "--topo-file", dir.toString()), dir + ": it is a directory, not a file");
        final Path binary = dir.resolve("bin.xml");
        Files.write(binary, new byte[] {'<', 's', 0, 1, 2, (byte) 0xff});
        assertReadError(Cli.run("topo", "--topo-file", binary.toString()),
            binary + ": binary content (a NUL byte at offset 2), not a topology text file");
        final Path latin = dir.resolve("latin1.txt");
        Files.write(latin, new byte[] {'G', 'P', 'U', (byte) 0xe9, '\n'});
        assertReadError(Cli.run("topo", "--nvidia-smi", latin.toString()),
            latin + ": not UTF-8 text (binary or another encoding)");
        final Path locked = dir.resolve("locked.xml");
        Files.writeString(locked, "<system/>");
        Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));
        if (!Files.isReadable(locked)) {
            assertReadError(Cli.run("topo", "--topo-file", locked.toString()), locked + ": permission denied");
        } else {
            // running as root: the permission bits do not stop the read, and the file parses as an empty topology
            assertEquals(0, Cli.run("topo", "--topo-file", locked.toString()).exitCode());
        }
        final Path graph = dir.resolve("graph.xml");
        Files.writeString(graph, "<graphs version=\"1\"><graph id=\"0\"/></graphs>");
        final Cli g = Cli.run("topo", "--topo-file", graph.toString());
        assertEquals(2, g.exitCode(), g::toString);
        assertTrue(g.err().contains("this is an NCCL graph file"), g::toString);
    }

    private static void assertReadError(final Cli r, final String expected) {
        assertEquals(2, r.exitCode(), r::toString);
        assertEquals("gdrkit topo: cannot read " + expected, r.err().strip(), r::toString);
        assertTrue(r.out().isEmpty(), r::toString);
    }
}
