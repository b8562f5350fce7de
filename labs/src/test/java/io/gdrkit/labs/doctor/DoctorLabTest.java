/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.doctor.Check;
import io.gdrkit.gdr.doctor.DoctorReport;
import io.gdrkit.gdr.doctor.SettingRow;
import io.gdrkit.gdr.doctor.Status;
import io.gdrkit.gdr.doctor.Verdict;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gpu.sim.SimGpuSystem;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The simulated host's doctor report, record by record: every line comes from a call. */
class DoctorLabTest {
    private static NcclSettings env(final Map<String, String> env) {
        return new NcclSettings.Context().reader(SettingsReader.ofEnv(env)).conclude();
    }

    @Test
    void theSimulatedHostIsQueried() {
        final DoctorReport r = DoctorLab.simulated("sim:v100", null, null, env(Map.of()));
        assertTrue(r.simulated());
        assertEquals(Verdict.Kind.GDR_READY, r.verdict().kind(), r::toString);
        // port state from ibv_query_port on each software NIC
        for (final String nic : new String[] {"soft0", "soft1"}) {
            final Check port = r.check(nic + " port 1");
            assertNotNull(port, r::toString);
            assertEquals(Status.PASS, port.status());
            assertTrue(port.evidence().startsWith("ibv_query_port: state ACTIVE, lid "), port.evidence());
        }
        // the driver version from the simulated driver
        assertEquals("cuDriverGetVersion = " + SimGpuSystem.DRIVER_VERSION + " (13.0) from the simulated driver",
            r.check("driver version").evidence());
        // the distance from the path engine over the simulated host's topology
        final Check topo = r.check("GPU-soft1 distance");
        assertTrue(topo.evidence().contains("PIX") && topo.evidence().contains("[GPU0 -> 0000:10:00.0 -> NIC1]"),
            topo.evidence());
        // a V100 (cc 7.0) needs the flush: the connector did it, and the GPU was asked
        final Check flush = r.check("flush");
        assertTrue(flush.evidence().contains("compute capability 70 < 9.0"), flush.evidence());
        final Check flushed = r.checks().stream().filter(c -> c.layer().equals("end to end")
            && c.name().equals("flush")).findFirst().orElseThrow();
        assertTrue(flushed.evidence().startsWith("the connector flushed with a 1-byte RDMA READ")
            && flushed.evidence().contains("cuFlushGPUDirectRDMAWrites(TO_OWNER)"), flushed.evidence());
        assertEquals(NcclSettings.NAMES.size(), r.settings().size());
        r.settings().forEach(s -> assertEquals("default", s.source(), s::toString));
    }

    @Test
    void aRestrictiveSettingIsNamedAsTheCauseAndOnlyNarrows() {
        final DoctorReport loc = DoctorLab.simulated("sim:h200", null, null,
            env(Map.of("NCCL_NET_GDR_LEVEL", "LOC", "NCCL_NET_GDR_READ", "0")));
        assertEquals(Verdict.Kind.DEGRADED, loc.verdict().kind());
        assertEquals("NCCL_NET_GDR_LEVEL=LOC (environment)", loc.verdict().cause());
        final SettingRow level = loc.setting("NCCL_NET_GDR_LEVEL");
        assertEquals(new SettingRow("NCCL_NET_GDR_LEVEL", "LOC", "environment",
            "distance PIX > LOC: GDR off by distance"), level);
        assertEquals(Status.PASS, loc.check("data over the connection").status(), "the bounce still moves the bytes");
        final DoctorReport read = DoctorLab.simulated("sim:h200", null, null, env(Map.of("NCCL_NET_GDR_READ", "0")));
        assertEquals("NCCL_NET_GDR_READ=0 (environment)", read.verdict().cause());
        assertTrue(read.verdict().detail().startsWith("send, read policy gate"), read.verdict()::toString);
        // SYS on a host without GDR still ends DEGRADED, with the hardware as the cause
        final DoctorReport sys = DoctorLab.simulated("sim:h200", false, false, env(Map.of("NCCL_NET_GDR_LEVEL",
            "SYS", "NCCL_DMABUF_ENABLE", "1")));
        assertEquals(Verdict.Kind.DEGRADED, sys.verdict().kind());
        assertEquals("", sys.verdict().cause());
        assertEquals("DMA-BUF not usable on this host (provider, driver or attribute 124): enabling it creates "
            + "nothing", sys.setting("NCCL_DMABUF_ENABLE").effect());
    }

    @Test
    void badInputIsNamed() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DoctorLab.simulated("cuda:0", null, null,
            NcclSettings.DEFAULTS)).getMessage().contains("sim:<preset>"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DoctorLab.simulated("sim:rtx", null, null,
            NcclSettings.DEFAULTS)).getMessage().contains("unknown simulated GPU"));
    }
}
