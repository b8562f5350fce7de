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
    void nativeProviderFillsTheVerbsLayerWithWhatItFound() throws Exception {
        final Cli c = Cli.run("doctor", "--provider", "native", "--json");
        assertEquals(0, c.exitCode(), c.toString());
        final JsonNode j = new ObjectMapper().readTree(c.out());
        assertEquals(false, j.get("simulated").asBoolean(), "the host doctor probes real hardware: " + c.out());
        final String verdict = j.get("verdict").asText();
        boolean sawNative = false;
        for (final JsonNode check : j.get("checks")) {
            if (check.get("layer").asText().equals("verbs") && check.get("evidence").asText()
                .startsWith("native provider: ")) {
                sawNative = true;
                // no RDMA device on a CI machine: the evidence says how many the library listed and where it looked;
                // without libibverbs at all it says the library could not be loaded, naming the file it tried
                final String ev = check.get("evidence").asText();
                assertTrue(ev.contains("device(s)") || ev.contains("libibverbs not loadable: cannot open "
                    + "libibverbs.so.1"), check.toString());
            }
        }
        assertTrue(sawNative, c.out());
        if (!Files.isDirectory(Path.of("/sys/class/infiniband"))) {
            assertTrue(verdict.equals("HARDWARE_BLOCKED") || verdict.equals("DEGRADED"), verdict);
        }
        final Cli bad = Cli.run("doctor", "--provider", "nic");
        assertEquals(2, bad.exitCode());
        assertTrue(bad.err().contains("Invalid value for option '--provider': 'nic' is not one of"), bad.toString());
    }

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
        final Cli strict = Cli.run("doctor", "--strict");
        assertEquals(1, strict.exitCode(), "strict: not proven end to end here");
        assertTrue(strict.err().startsWith("gdrkit doctor: --strict: the verdict is "), strict.toString());
        assertTrue(strict.err().trim().endsWith(", not GDR_READY"), strict.toString());
        assertEquals(1, strict.err().trim().lines().count(), "one line on stderr: " + strict.err());
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
        assertEquals(1, Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200", "--soft-dmabuf", "off",
            "--soft-peermem", "off", "--strict").exitCode());
        final JsonNode both = json.readTree(Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200",
            "--soft-dmabuf", "off", "--soft-peermem", "off", "--json").out());
        assertEquals("DEGRADED (receive, NET gate: GPU Direct RDMA Disabled for HCA 1 'soft1' (no "
            + "nv_peer_mem/nvidia_peermem and no usable DMA-BUF))", both.get("verdict").asText());
        assertTrue(check(both, "receive").get("evidence").asText().startsWith("Channel 00/0 : 0[0] -> 1[0] [receive] "
            + "via NET/IB/1; host bounce: the NET gate failed"), both::toString);
        assertEquals("PASS", check(both, "data over the connection").get("status").asText());
        assertTrue(check(both, "data over the connection").get("evidence").asText()
            .endsWith("host bounce), byte-exact (simulated)"), both::toString);
        // a V100 has no DMA-BUF (attribute 124 = 0): without peermem nothing is left
        final JsonNode v100 = json.readTree(Cli.run("doctor", "--provider", "soft", "--gpu", "sim:v100",
            "--soft-peermem", "off", "--json").out());
        assertTrue(check(v100, "DMA-BUF").get("evidence").asText().contains("GPU attribute 124 = 0"), v100::toString);
        assertTrue(v100.get("verdict").asText().startsWith("DEGRADED (receive, NET gate"), v100::toString);
        // the text form prints the same records: one line per check, the settings, the verdict
        final Cli text = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:v100", "--soft-peermem", "off");
        assertTrue(text.out().contains("verdict: " + v100.get("verdict").asText() + " (simulated)"), text::toString);
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
    void theSettingsTableShowsEachValueWithItsSourceAndNamesARestrictiveCause() throws Exception {
        final JsonNode root = new ObjectMapper().readTree(Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200",
            "--nccl", "NCCL_NET_GDR_LEVEL=LOC", "--nccl", "NCCL_NET_GDR_READ=0", "--json").out());
        final JsonNode settings = root.get("settings");
        assertEquals(io.gdrkit.gdr.gate.NcclSettings.NAMES.size(), settings.size(), root::toString);
        for (int i = 0; i < settings.size(); i++) {
            assertEquals(io.gdrkit.gdr.gate.NcclSettings.NAMES.get(i), settings.get(i).get("name").asText());
            assertTrue(!settings.get(i).get("effect").asText().isBlank(), settings.get(i)::toString);
        }
        assertEquals("LOC", settings.get(0).get("value").asText());
        assertEquals("flag", settings.get(0).get("source").asText());
        assertEquals("distance PIX > LOC: GDR off by distance", settings.get(0).get("effect").asText());
        assertEquals("0", settings.get(1).get("value").asText());
        assertEquals("1", settings.get(3).get("value").asText());
        assertEquals("default", settings.get(3).get("source").asText());
        assertEquals("DEGRADED (receive, distance gate: GPU Direct RDMA Disabled for GPU 0 / HCA 1 'soft1' (distance "
            + "PIX > LOC); cause: NCCL_NET_GDR_LEVEL=LOC (flag))", root.get("verdict").asText());
        assertEquals("NCCL_NET_GDR_LEVEL=LOC (flag)", root.get("cause").asText());
        assertEquals("FAIL", check(root, "send (NIC reads GPU)").get("status").asText());
        assertTrue(check(root, "send (NIC reads GPU)").get("evidence").asText().endsWith("(NCCL_NET_GDR_READ=0)"));
        assertEquals("byte-exact", check(root, "data over the connection").get("evidence").asText()
            .replaceAll(".*, (byte-exact).*", "$1"), "the bounce still moves the bytes exactly");
        // the text form prints the same table
        final Cli text = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200", "--nccl",
            "NCCL_DMABUF_ENABLE=0", "--soft-peermem", "off");
        assertTrue(text.out().contains("[settings]") && text.out().matches("(?s).*NCCL_DMABUF_ENABLE\\s+0\\s+flag\\s+"
            + "DMA-BUF usable but disabled: no other registration path.*"), text::toString);
        assertTrue(text.out().contains("cause: NCCL_DMABUF_ENABLE=0 (flag)"), text::toString);
    }

    @Test
    void settingsNeverCreateCapability() throws Exception {
        final ObjectMapper json = new ObjectMapper();
        final String[] open = {"--nccl", "NCCL_NET_GDR_LEVEL=SYS", "--nccl", "NCCL_NET_GDR_READ=1", "--nccl",
            "NCCL_DMABUF_ENABLE=1", "--json"};
        final JsonNode noGdr = json.readTree(Cli.run(cat(new String[] {"doctor", "--provider", "soft", "--gpu",
            "sim:no-gdr"}, open)).out());
        assertEquals("DEGRADED (receive, GPU gate: GPU Direct RDMA Disabled for GPU 0 (attribute 116 = 0))",
            noGdr.get("verdict").asText());
        assertEquals("", noGdr.get("cause").asText(), "the hardware, not a setting, is the cause");
        final JsonNode noReg = json.readTree(Cli.run(cat(new String[] {"doctor", "--provider", "soft", "--gpu",
            "sim:h200", "--soft-dmabuf", "off", "--soft-peermem", "off"}, open)).out());
        assertTrue(noReg.get("verdict").asText().startsWith("DEGRADED (receive, NET gate"), noReg::toString);
        assertEquals("FAIL", check(noReg, "GDR").get("status").asText());
        final JsonNode host = json.readTree(Cli.run(cat(new String[] {"doctor"}, open)).out());
        if (!io.gdrkit.gpu.cuda.CudaGpu.probe().found()) {
            assertEquals("HARDWARE_BLOCKED", host.get("verdict").asText());
        }
        // NCCL_IB_DISABLE=1 selects NET/Socket, which carries no GDR: named as the cause
        final JsonNode socket = json.readTree(Cli.run("doctor", "--provider", "soft", "--gpu", "sim:h200", "--nccl",
            "NCCL_IB_DISABLE=1", "--json").out());
        assertEquals("NCCL_IB_DISABLE=1 (flag)", socket.get("cause").asText(), socket::toString);
    }

    @Test
    void negativeControlsShowThatNoSettingCreatesACapability() throws Exception {
        final Cli r = Cli.run("doctor", "--negative-controls", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        final JsonNode root = new ObjectMapper().readTree(r.out());
        assertTrue(root.get("passed").asBoolean());
        final JsonNode rows = root.get("negative_controls");
        assertEquals(4 * 7 * 2, rows.size(), "4 hosts x 7 configurations x before/after");
        int simulatedWithoutGdr = 0;
        for (final JsonNode row : rows) {
            assertEquals(false, row.get("capability_created").asBoolean(), row::toString);
            if (!row.get("hardware_allows_gdr").asBoolean()) {
                assertTrue(!row.get("receive").asText().equals("GDR") && !row.get("send").asText().equals("GDR"),
                    row::toString);
                simulatedWithoutGdr += row.get("simulated").asBoolean() ? 1 : 0;
            }
            if (row.get("simulated").asBoolean()) {
                assertEquals("byte-exact", row.get("data").asText(), row::toString);
            }
        }
        assertEquals(2 * 14, simulatedWithoutGdr, "two simulated hosts lack GDR hardware");
        // on the capable simulated host LOC narrows GDR when set before setup, and changes nothing after it
        final JsonNode locBefore = find(rows, "simulated: sim:h200, provider with DMA-BUF and peermem",
            "NCCL_NET_GDR_LEVEL=LOC", "before setup");
        assertEquals("host bounce", locBefore.get("receive").asText());
        assertTrue(locBefore.get("verdict").asText().endsWith("cause: NCCL_NET_GDR_LEVEL=LOC (environment))"));
        assertEquals("GDR", find(rows, "simulated: sim:h200, provider with DMA-BUF and peermem",
            "NCCL_NET_GDR_LEVEL=LOC", "after setup").get("receive").asText());
        final Cli text = Cli.run("doctor", "--negative-controls");
        assertTrue(text.out().contains("negative controls: PASS, no setting created a capability"), text::toString);
        assertEquals(2, Cli.run("doctor", "--negative-controls", "--provider", "soft", "--gpu", "sim:h200")
            .exitCode());
    }

    private static JsonNode find(final JsonNode rows, final String host, final String setting, final String order) {
        for (final JsonNode row : rows) {
            if (row.get("host").asText().equals(host) && row.get("setting").asText().equals(setting)
                && row.get("order").asText().equals(order)) {
                return row;
            }
        }
        throw new AssertionError("no row " + host + " / " + setting + " / " + order);
    }

    private static String[] cat(final String[] a, final String[] b) {
        final String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    @Test
    void acsDecoding() {
        final byte[] cfg = new byte[0x200];
        // extended capability at 0x100: ID 0x000D (ACS), version 1, next 0; control at +6 with RR|CR set
        cfg[0x100] = 0x0D;
        cfg[0x102] = 0x01;
        cfg[0x106] = 0x0C;
        assertTrue(io.gdrkit.gdr.doctor.HostProbes.acsControl(cfg).contains("redirect ON"));
        assertTrue(io.gdrkit.gdr.doctor.HostProbes.acsControl(new byte[64]).contains("needs root"));
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
        final Cli unknown = Cli.run("doctor", "--nccl", "NCCL_FOO=1");
        assertEquals(2, unknown.exitCode());
        assertTrue(unknown.err().contains("NCCL_FOO is not a setting gdrkit reads"), unknown::toString);
        final Cli level = Cli.run("doctor", "--nccl", "NCCL_NET_GDR_LEVEL=phb");
        assertEquals(2, level.exitCode());
        assertTrue(level.err().contains("did you mean PHB?"), level::toString);
        assertEquals(2, Cli.run("doctor", "--nccl", "NCCL_NET=verbs").exitCode());
        assertEquals(2, Cli.run("doctor", "--nccl", "NCCL_NET_GDR_READ").exitCode(), "NAME=VALUE");
    }
}
