/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.gdr.reg.RegMechanism;
import io.gdrkit.gdr.topo.PathType;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Each gate on its own, the evidence it leaves, and the negative controls: settings never create capability. */
class GdrGateTest {
    static final GpuCaps H200 = new GpuCaps(0, true, 90, true, 13000, false, false, "simulated H200");
    static final GpuCaps V100 = new GpuCaps(1, true, 70, false, 13000, false, false, "simulated V100");
    static final GpuCaps NO_GDR = new GpuCaps(2, false, 90, true, 13000, false, false, "simulated no-gdr");
    static final NetCaps PEERMEM = new NetCaps(0, "soft0", true, "/sys/module/nvidia_peermem present", false,
        "ibv_reg_dmabuf_mr(fd=-1) = EOPNOTSUPP");
    static final NetCaps DMABUF = new NetCaps(1, "soft1", false, "no memory_peers, no nvidia_peermem", true,
        "ibv_reg_dmabuf_mr(fd=-1) = EBADF");
    static final NetCaps NOTHING = new NetCaps(2, "soft2", false, "no memory_peers, no nvidia_peermem", false,
        "ibv_reg_dmabuf_mr(fd=-1) = EOPNOTSUPP");

    private static GdrSettings env(final String... kv) {
        final java.util.HashMap<String, String> m = new java.util.HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return GdrSettings.fromEnvironment(m);
    }

    @Test
    void everyGatePassingEnablesBothDirections() {
        for (final boolean read : new boolean[] {false, true}) {
            final GdrDecision d = GdrGate.decide(H200, DMABUF, PathType.PIX, false, read, GdrSettings.DEFAULTS);
            assertTrue(d.enabled(), d::toString);
            assertEquals(RegMechanism.DMABUF_FD, d.mechanism());
            assertEquals("/GDRDMA", d.connectorSuffix());
            assertTrue(d.logLine().startsWith("GPU Direct RDMA Enabled for GPU 0 / HCA 1 'soft1' (distance PIX <= P2C)"),
                d.logLine());
            assertTrue(d.evidence().stream().anyMatch(e -> e.contains("attribute 116")));
        }
        assertEquals(RegMechanism.PEERMEM_POINTER, GdrGate.decide(H200, PEERMEM, PathType.PXB, false, false, GdrSettings.DEFAULTS)
            .mechanism());
    }

    @Test
    void eachGateCanFailOnItsOwn() {
        assertFalse(GdrGate.decide(NO_GDR, DMABUF, PathType.PIX, false, false, GdrSettings.DEFAULTS).enabled());
        final GdrDecision noNet = GdrGate.decide(H200, NOTHING, PathType.PIX, false, false, GdrSettings.DEFAULTS);
        assertFalse(noNet.enabled());
        assertTrue(noNet.logLine().startsWith("GPU Direct RDMA Disabled for HCA 2 'soft2'"), noNet.logLine());
        final GdrDecision far = GdrGate.decide(H200, DMABUF, PathType.SYS, false, false, GdrSettings.DEFAULTS);
        assertFalse(far.enabled());
        assertTrue(far.logLine().contains("(distance SYS > P2C)"), far.logLine());
        // V100 without NVLink peer: receives use GDR, sends (reads) do not by default
        assertTrue(GdrGate.decide(V100, PEERMEM, PathType.PIX, false, false, GdrSettings.DEFAULTS).enabled());
        final GdrDecision v100Read = GdrGate.decide(V100, PEERMEM, PathType.PIX, false, true, GdrSettings.DEFAULTS);
        assertFalse(v100Read.enabled(), v100Read::toString);
        assertTrue(GdrGate.decide(new GpuCaps(1, true, 70, false, 13000, true, false, "v100+nvlink"), PEERMEM,
            PathType.PIX, false, true, GdrSettings.DEFAULTS).enabled());
        assertFalse(GdrGate.decide(H200, DMABUF, PathType.PIX, false, true, env(GdrSettings.GDR_READ, "0")).enabled());
    }

    @Test
    void dmabufChainNeedsEveryLink() {
        final GpuCaps oldDriver = new GpuCaps(0, true, 90, true, 11060, false, false, "driver 11.6");
        final GpuCaps no124 = new GpuCaps(0, true, 90, false, 13000, false, false, "attribute 124 = 0");
        for (final GpuCaps g : new GpuCaps[] {oldDriver, no124}) {
            assertFalse(GdrGate.decide(g, DMABUF, PathType.PIX, false, false, GdrSettings.DEFAULTS).enabled());
        }
        assertFalse(GdrGate.decide(H200, DMABUF, PathType.PIX, false, false, env(GdrSettings.DMABUF_ENABLE, "0"))
            .enabled());
        // PXN: the intermediate GPU's distance decides
        assertTrue(GdrGate.decide(H200, DMABUF, PathType.PIX, true, false, GdrSettings.DEFAULTS).evidence().stream()
            .anyMatch(e -> e.contains("PXN")));
    }

    @Test
    void settingsNeverCreateCapability() {
        final GdrSettings forcing = env("NCCL_NET_GDR_LEVEL", "SYS", GdrSettings.GDR_READ, "1",
            GdrSettings.DMABUF_ENABLE, "1", GdrSettings.FORCE_FLUSH, "1");
        for (final boolean read : new boolean[] {false, true}) {
            final GdrDecision noGpu = GdrGate.decide(NO_GDR, DMABUF, PathType.PIX, false, read, forcing);
            final GdrDecision noNet = GdrGate.decide(H200, NOTHING, PathType.PIX, false, read, forcing);
            assertFalse(noGpu.enabled() || noNet.enabled());
            assertEquals("", noNet.connectorSuffix());
            final FlushPolicy.Decision f = FlushPolicy.decide(H200, noNet, forcing);
            assertFalse(f.flush(), "a forced flush has nothing to flush without GDR");
            assertTrue(f.evidence().contains("host bounce"), f.evidence());
        }
        // a dma-buf setting on a GPU without attribute 124 still reports the fallback
        final GdrDecision d = GdrGate.decide(new GpuCaps(0, true, 90, false, 13000, false, false, "no 124"), DMABUF,
            PathType.PIX, false, false, forcing);
        assertFalse(d.enabled());
        // the connector is the last gate
        final GdrDecision ok = GdrGate.decide(H200, DMABUF, PathType.PIX, false, false, GdrSettings.DEFAULTS);
        final GdrDecision failed = GdrGate.afterConnect(ok, false, "ibv_reg_dmabuf_mr: EINVAL");
        assertFalse(failed.enabled());
        assertTrue(failed.evidence().get(failed.evidence().size() - 1).contains("host bounce"));
    }

    @Test
    void flushPolicy() {
        final GdrDecision h200 = GdrGate.decide(H200, DMABUF, PathType.PIX, false, false, GdrSettings.DEFAULTS);
        assertFalse(FlushPolicy.decide(H200, h200, GdrSettings.DEFAULTS).flush());
        assertTrue(FlushPolicy.decide(H200, h200, env(GdrSettings.FORCE_FLUSH, "1")).flush());
        final GdrDecision v100 = GdrGate.decide(V100, PEERMEM, PathType.PIX, false, false, GdrSettings.DEFAULTS);
        final FlushPolicy.Decision f = FlushPolicy.decide(V100, v100, GdrSettings.DEFAULTS);
        assertTrue(f.flush());
        assertTrue(f.evidence().contains("70 < 9.0"), f.evidence());
    }

    @Test
    void badSettingsAreNamed() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> GdrSettings.fromEnvironment(Map.of(GdrSettings.GDR_READ, "yes")));
        assertTrue(e.getMessage().contains("NCCL_NET_GDR_READ=yes"), e.getMessage());
    }

    /**
     * One rule for everyone (issue 34): a Grace-Hopper C2C pair (P2C) is allowed by the gates (doctor, coll, the NET
     * connector) exactly when topo allows it, by NCCL 2.30's rule: P2C by default, PXB with NCCL_NET_GDR_C2C=0.
     */
    @Test
    void gateAndTopoUseTheSameLevelOnAGraceHopperPair() throws Exception {
        final io.gdrkit.gdr.topo.TopoSystem gh;
        try (java.io.InputStream in = GdrGateTest.class.getResourceAsStream("/topo/gh200-c2c.xml")) {
            gh = io.gdrkit.gdr.topo.NcclTopoXmlReader.parse(new String(in.readAllBytes(),
                java.nio.charset.StandardCharsets.UTF_8), "gh200-c2c.xml");
        }
        for (final Map<String, String> e : java.util.List.of(Map.<String, String>of(), Map.of("NCCL_NET_GDR_C2C", "0"),
            Map.of("NCCL_NET_GDR_LEVEL", "PXB"), Map.of("NCCL_NET_GDR_LEVEL", "PHB", "NCCL_NET_GDR_C2C", "0"))) {
            final NcclSettings s = NcclSettings.ofEnv(e);
            final io.gdrkit.gdr.topo.TopoPaths paths = io.gdrkit.gdr.topo.PathComputer.compute(gh, s.pathOptions());
            final io.gdrkit.gdr.topo.GdrDistanceCheck topo = paths.gdrDistance(gh.gpus().getFirst(),
                gh.nics().getFirst(), s.gdrLevel().value());
            assertEquals(PathType.P2C, topo.distance());
            final GdrDecision gate = GdrGate.decide(H200, DMABUF, topo.distance(), false, false, s.gdr());
            assertEquals(topo.allowed(), gate.enabled(), e + ": " + gate.logLine() + " / " + topo.logLine());
            assertEquals(topo.level().path(), s.gdr().gdrLevel().path(), e.toString());
            assertEquals(!e.containsKey("NCCL_NET_GDR_C2C") && !e.containsKey("NCCL_NET_GDR_LEVEL")
                || e.containsValue("PHB"), gate.enabled(), e + ": " + gate.logLine());
        }
        assertTrue(GdrGate.decide(H200, DMABUF, PathType.P2C, false, true, GdrSettings.DEFAULTS).enabled(),
            "the gates' default is NCCL's: P2C");
    }

    /** NCCL_IB_HCA: an HCA NCCL's IB transport leaves out gets no GDR (^, = and prefixes as NCCL parses them). */
    @Test
    void ibHcaSelectsTheCandidateHcas() {
        final GdrSettings s = env("NCCL_IB_HCA", "^=soft1");
        final GdrDecision out = GdrGate.decide(H200, DMABUF, PathType.PIX, false, false, s);
        assertFalse(out.enabled(), out::toString);
        assertEquals("NCCL_IB_HCA", out.failedGate());
        assertTrue(out.logLine().contains("NCCL_IB_HCA=^=soft1"), out.logLine());
        assertTrue(GdrGate.decide(H200, PEERMEM, PathType.PIX, false, false, s).enabled());
        assertFalse(GdrGate.decide(H200, PEERMEM, PathType.PIX, false, false, env("NCCL_IB_HCA", "=soft")).enabled(),
            "exact: soft is not soft0");
        assertTrue(GdrGate.decide(H200, PEERMEM, PathType.PIX, false, false, env("NCCL_IB_HCA", "soft")).enabled(),
            "prefix: soft selects soft0");
    }
}
