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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DoctorCommandTest {
    @Test
    void thisMachineIsProbedHonestly() throws Exception {
        final Cli r = Cli.run("doctor", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        final JsonNode root = new ObjectMapper().readTree(r.out());
        assertEquals(false, root.get("simulated").asBoolean());
        for (final JsonNode c : root.get("checks")) {
            assertTrue(c.has("name") && c.has("status") && c.has("evidence") && !c.get("evidence").asText().isBlank(),
                c.toString());
        }
        if (!io.gdrkit.gpu.cuda.CudaGpu.probe().found()) {
            assertEquals("HARDWARE_BLOCKED", root.get("verdict").asText());
        }
        assertEquals(1, Cli.run("doctor", "--strict").exitCode(), "strict: not proven end to end here");
    }

    @Test
    void softwareProviderProvesGdrEndToEndAndSaysSimulated() throws Exception {
        for (final String gpu : new String[] {"sim:h200", "sim:v100"}) {
            final Cli r = Cli.run("doctor", "--provider", "soft", "--gpu", gpu, "--json", "--strict");
            assertEquals(0, r.exitCode(), r::toString);
            final JsonNode root = new ObjectMapper().readTree(r.out());
            assertEquals("GDR_READY", root.get("verdict").asText());
            assertEquals(true, root.get("simulated").asBoolean());
        }
        final Cli text = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:v100");
        assertTrue(text.out().contains("SIMULATED") && text.out().contains("flushed (1-byte READ)"), text::toString);
        final Cli noGdr = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:no-gdr", "--strict");
        assertEquals(1, noGdr.exitCode(), noGdr::toString);
        assertTrue(noGdr.out().contains("DEGRADED"), noGdr::toString);
    }

    /** The --json check named {@code name}. */
    private static JsonNode check(final JsonNode root, final String name) {
        for (final JsonNode c : root.get("checks")) {
            if (c.get("name").asText().equals(name)) {
                return c;
            }
        }
        throw new AssertionError("no check '" + name + "' in " + root);
    }

    @Test
    void theSoftProviderIsProbedAndEachCapabilitySwitchShowsItsBranch() throws Exception {
        final ObjectMapper json = new ObjectMapper();
        // DMA-BUF off: the fd = -1 probe answers EOPNOTSUPP, the pointer branch carries GDR end to end
        final JsonNode noDmaBuf = json.readTree(Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200",
            "--soft-dmabuf", "off", "--json").out());
        assertEquals("GDR_READY", noDmaBuf.get("verdict").asText());
        assertEquals("FAIL", check(noDmaBuf, "DMA-BUF").get("status").asText());
        assertTrue(check(noDmaBuf, "DMA-BUF").get("evidence").asText().contains("fd -1, access 0) on soft1 "
            + "(software provider, simulated) = EOPNOTSUPP"), noDmaBuf::toString);
        assertTrue(check(noDmaBuf, "receive").get("evidence").asText()
            .equals("Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/1/GDRDMA (peermem)"), noDmaBuf::toString);
        // peermem off: registering GPU memory by pointer is EFAULT, the DMA-BUF branch carries GDR
        final JsonNode noPeermem = json.readTree(Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200",
            "--soft-peermem", "off", "--json").out());
        assertEquals("GDR_READY", noPeermem.get("verdict").asText());
        assertTrue(check(noPeermem, "peermem").get("evidence").asText().contains("= EFAULT"), noPeermem::toString);
        assertEquals("DMABUF_FD: DMA-BUF supported and enabled; peermem not loaded",
            check(noPeermem, "mechanism").get("evidence").asText());
        assertTrue(check(noPeermem, "send").get("evidence").asText().endsWith("/GDRDMA (DMA-BUF)"));
        // both off: DEGRADED naming the NET gate, data still exact through the host bounce
        final Cli both = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200", "--soft-dmabuf", "off",
            "--soft-peermem", "off", "--strict");
        assertEquals(1, both.exitCode(), both::toString);
        assertTrue(both.out().contains("verdict: DEGRADED (receive, NET gate: GPU Direct RDMA Disabled for HCA 1 "
            + "'soft1' (no nv_peer_mem/nvidia_peermem and no usable DMA-BUF)) (simulated)"), both::toString);
        assertTrue(both.out().contains("[receive] via NET/IB/1; host bounce: the NET gate failed"), both::toString);
        assertTrue(both.out().contains("host bounce), byte-exact (simulated)"), both::toString);
        // a V100 has no DMA-BUF (attribute 124 = 0): without peermem nothing is left
        final Cli v100 = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:v100", "--soft-peermem", "off");
        assertTrue(v100.out().contains("GPU attribute 124 = 0") && v100.out().contains("DEGRADED (receive, NET gate"),
            v100::toString);
    }

    @Test
    void theSoftCapabilitiesFollowSystemPropertiesAndBadValuesAreNamed() {
        System.setProperty("gdrkit.nic.peermem", "false");
        try {
            final Cli r = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200");
            assertTrue(r.out().contains("peermem off (gdrkit.nic.peermem)") && r.out().contains("GDR_READY"),
                r::toString);
            System.setProperty("gdrkit.nic.peermem", "nope");
            final Cli bad = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200");
            assertEquals(2, bad.exitCode(), bad::toString);
            assertTrue(bad.err().contains("gdrkit.nic.peermem=nope is not 0, 1, true or false"), bad::toString);
        } finally {
            System.clearProperty("gdrkit.nic.peermem");
        }
    }

    @Test
    void fakeRootShowsWhatItRead(@TempDir final Path root) throws Exception {
        Files.createDirectories(root.resolve("sys/class/infiniband/mlx5_0"));
        Files.createDirectories(root.resolve("dev/infiniband"));
        Files.createFile(root.resolve("dev/infiniband/uverbs0"));
        Files.createDirectories(root.resolve("sys/module/nvidia_peermem"));
        final Cli r = Cli.run("doctor", "--sys", root.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().contains("/sys/class/infiniband: [mlx5_0]"), r::toString);
        assertTrue(r.out().contains("present: [/sys/module/nvidia_peermem]"), r::toString);
        assertTrue(r.out().contains("uverbs0"), r::toString);
    }

    @Test
    void acsDecoding() {
        final byte[] cfg = new byte[0x200];
        // extended capability at 0x100: ID 0x000D (ACS), version 1, next 0; control at +6 with RR|CR set
        cfg[0x100] = 0x0D;
        cfg[0x102] = 0x01;
        cfg[0x106] = 0x0C;
        assertTrue(DoctorCommand.acsControl(cfg).contains("redirect ON"));
        assertTrue(DoctorCommand.acsControl(new byte[64]).contains("needs root"));
    }

    @Test
    void badArguments() {
        assertEquals(2, Cli.run("doctor", "--provider", "mlx").exitCode());
        assertEquals(2, Cli.run("doctor", "--gpu", "sim:h200").exitCode());
        assertEquals(2, Cli.run("doctor", "--provider", "soft").exitCode());
        assertEquals(2, Cli.run("doctor", "--soft-dmabuf", "off").exitCode(), "capability switches need --provider soft");
        final Cli bad = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200", "--soft-peermem", "no");
        assertEquals(2, bad.exitCode());
        assertTrue(bad.err().contains("--soft-peermem must be on or off, not 'no'"), bad::toString);
    }
}
