/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.gdr.reg.RegMechanism;
import io.gdrkit.gdr.topo.PathType;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.VerbsContext;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/**
 * The NET probe asks the software provider itself: NCCL's fd = -1 DMA-BUF question and a registration of GPU memory
 * by pointer (the peermem question), for every combination of the provider's two capabilities; the gates then take
 * the branch the device really offers.
 */
class NetCapsProbeTest {
    private static final GpuCaps H200 = new GpuCaps(0, true, 90, true, 13000, false, false, "simulated H200");

    @ParameterizedTest(name = "dmabuf {0}, peermem {1} -> {2}")
    @CsvSource({
        "true,  true,  DMABUF_FD",
        "true,  false, DMABUF_FD",
        "false, true,  PEERMEM_POINTER",
        "false, false, NONE",
    })
    void theProbeReportsWhatTheProviderAnswersAndTheGatesFollowIt(final boolean dmabuf, final boolean peermem,
                                                                  final RegMechanism expected) {
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext().dmaBuf(dmabuf).peermem(peermem));
             SimGpu gpu = SimGpu.create(SimPreset.H200, SimGpuConfig.deterministic(1, new ManualClock(0)))) {
            final VerbsContext ctx = driver.addDevice("soft0").open();
            final NetCaps net = NetCaps.probe(3, ctx, gpu);
            assertEquals(3, net.dev());
            assertEquals("soft0", net.name());
            assertEquals(dmabuf, net.dmabufProvider(), net.dmabufEvidence());
            assertEquals(peermem, net.peermem(), net.peermemEvidence());
            assertTrue(net.dmabufEvidence().startsWith("ibv_reg_dmabuf_mr(offset 0, length 0, iova 0, fd -1, access 0)"
                + " on soft0 (software provider, simulated) = " + (dmabuf ? "EBADF" : "EOPNOTSUPP")),
                net.dmabufEvidence());
            assertTrue(net.peermemEvidence().startsWith("ibv_reg_mr(GPU 0 memory 0x"), net.peermemEvidence());
            assertTrue(net.peermemEvidence().contains(peermem ? "succeeded: a peer-memory client pins GPU memory"
                : "= EFAULT: ibv_reg_mr on soft0: no peer-memory client"), net.peermemEvidence());
            assertEquals(0, gpu.dmaTarget().bar1MappedBytes(), "the probe released its mapping");
            for (final boolean read : new boolean[] {false, true}) {
                final GdrDecision d = GdrGate.decide(H200, net, PathType.PIX, false, read, GdrSettings.DEFAULTS);
                assertEquals(expected, d.mechanism(), d::toString);
                assertEquals(expected != RegMechanism.NONE, d.enabled());
                if (expected == RegMechanism.NONE) {
                    assertEquals("NET", d.failedGate());
                    assertTrue(d.evidence().stream().anyMatch(e -> e.contains("EOPNOTSUPP")), d::toString);
                    assertTrue(d.evidence().stream().anyMatch(e -> e.contains("EFAULT")), d::toString);
                } else {
                    assertTrue(d.logLine().endsWith("via " + expected.label()), d.logLine());
                }
            }
            ctx.close();
        }
    }

    @Test
    void aGpuWithoutDmaBufTakesThePointerPathAndSettingsOnlyNarrow() {
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext());
             SimGpu v100 = SimGpu.create(SimPreset.V100, SimGpuConfig.deterministic(2, new ManualClock(0)))) {
            final VerbsContext ctx = driver.addDevice("soft0").open();
            final NetCaps net = NetCaps.probe(0, ctx, v100);
            assertTrue(net.dmabufProvider() && net.peermem());
            final GpuCaps caps = GpuCaps.of(v100, 13000, false, true);
            assertEquals(RegMechanism.PEERMEM_POINTER,
                GdrGate.decide(caps, net, PathType.PIX, false, false, GdrSettings.DEFAULTS).mechanism());
            // NCCL_DMABUF_ENABLE=0 on an H200 narrows to peermem; it never adds a mechanism
            final GdrSettings noDmaBuf = GdrSettings.fromEnvironment(java.util.Map.of(GdrSettings.DMABUF_ENABLE, "0"));
            assertEquals(RegMechanism.PEERMEM_POINTER,
                GdrGate.decide(H200, net, PathType.PIX, false, false, noDmaBuf).mechanism());
            ctx.close();
        }
    }

    @Test
    void withoutAGpuThePointerQuestionIsNotAskedAndAGpuWithoutGdrCannotAnswerIt() {
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext());
             SimGpu noGdr = SimGpu.create(SimPreset.NO_GDR, SimGpuConfig.deterministic(3, new ManualClock(0)))) {
            final VerbsContext ctx = driver.addDevice("soft0").open();
            final NetCaps none = NetCaps.probe(0, ctx, null);
            assertFalse(none.peermem());
            assertEquals("not asked: no GPU memory to register", none.peermemEvidence());
            assertTrue(none.dmabufProvider(), "the fd question needs no GPU");
            final NetCaps refused = NetCaps.probe(0, ctx, noGdr);
            assertFalse(refused.peermem());
            assertTrue(refused.peermemEvidence().startsWith("not answered: GPU 0 cannot map memory for a NIC")
                && refused.peermemEvidence().contains("116"), refused.peermemEvidence());
            ctx.close();
        }
    }
}
