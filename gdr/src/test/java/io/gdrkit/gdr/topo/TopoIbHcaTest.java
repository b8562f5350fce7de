/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gdr.topo.TopoGdr.Tri;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * NCCL_IB_HCA as NCCL 2.30 parses and matches it (net_ib/init.cc, utils.cc parseStringList / matchIfList), and its
 * effect on topo: a left-out HCA is no GPU's local NIC, relays nothing and gets no GDR.
 */
class TopoIbHcaTest
{
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        // value | device | port | used
        "mlx5           | mlx5_0  | 1 | true",   // prefix
        "mlx5           | mlx5_10 | 1 | true",
        "mlx5_1         | mlx5_10 | 1 | true",   // prefix: mlx5_1 selects mlx5_10 too
        "=mlx5_1        | mlx5_10 | 1 | false",  // exact
        "=mlx5_1        | mlx5_1  | 1 | true",
        "^mlx5_1        | mlx5_10 | 1 | false",  // exclusion by prefix
        "^=mlx5_1       | mlx5_10 | 1 | true",   // exclusion, exact
        "^=mlx5_1       | mlx5_1  | 1 | false",
        "mlx5_0:1       | mlx5_0  | 1 | true",   // port
        "mlx5_0:2       | mlx5_0  | 1 | false",
        "mlx5_0:        | mlx5_0  | 2 | true",   // empty port: every port
        "mlx5_0:x       | mlx5_0  | 1 | false",  // atoi(x) = 0: no port 0
        "mlx5_0:1:2:3   | mlx5_0  | 1 | true",   // rail and plane fields read and ignored here
        "mlx5_0,,mlx5_3 | mlx5_3  | 1 | true",   // empty entries skipped
        "^              | mlx5_0  | 1 | false",  // empty list excluded: every device
        "^mlx5_0,mlx5_1 | mlx5_2  | 1 | true",
    })
    void parsesAndMatchesAsNccl(final String value, final String device, final int port, final boolean used)
    {
        assertEquals(used, IbHcaFilter.parse(value.strip()).accepts(device, port), value + " " + device + ":" + port);
    }

    @Test
    void unsetOrEmptySelectsEverything()
    {
        assertTrue(IbHcaFilter.ALL.accepts("anything", 3));
        assertTrue(IbHcaFilter.parse("").accepts("mlx5_0", 1));
        assertEquals(IbHcaFilter.ALL, NcclSettings.ofEnv(Map.of()).ibHca().value());
    }

    /**
     * NVIDIA/nccl-tests issue #256's H200 dump: GPU k shares a switch with mlx5_k (PIX), the GPUs are on an
     * NVSwitch. With NCCL_IB_HCA=^=mlx5_0 NCCL's IB transport has no mlx5_0: GPU0/mlx5_0 gets no GDR, and NCCL's
     * local-NIC choice no longer sees it, so mlx5_0 has no local GPU (no PXN through it), while GPU0 reaches mlx5_1
     * through GPU1 over NVLink (PXN, the relay's PIX).
     */
    @Test
    void topoHonoursIbHcaOnARealFile()
    {
        final TopoSystem system = TopoFixtures.xml("real/nccl-tests-issue-256-h200-nvswitch.xml");
        final TopoNode gpu0 = system.gpus().get(0);
        final TopoNode mlx0 = system.nics().get(0);
        final TopoNode mlx1 = system.nics().get(1);
        assertEquals("mlx5_0", mlx0.id());
        final TopoPaths all = PathComputer.compute(system, NcclSettings.ofEnv(Map.of()).pathOptions());
        assertSame(gpu0, all.localGpu(mlx0));
        assertEquals(Tri.YES, TopoGdr.decide(all, gpu0, mlx0, false, GdrLevel.DEFAULT, -2).enabled());

        final NcclSettings s = NcclSettings.ofEnv(Map.of("NCCL_IB_HCA", "^=mlx5_0"));
        final TopoPaths paths = PathComputer.compute(system, s.pathOptions());
        final TopoGdr.Decision d = TopoGdr.decide(paths, gpu0, mlx0, false, s.gdrLevel().value(), -2);
        assertEquals(Tri.NO, d.enabled(), d.reason());
        assertEquals("NCCL_IB_HCA", d.gate());
        assertTrue(d.reason().contains("NCCL_IB_HCA=^=mlx5_0"), d.reason());
        assertNull(paths.localGpu(mlx0), "a left-out HCA is no GPU's local NIC");
        assertSame(system.gpus().get(1), paths.localGpu(mlx1));
        final TopoGdr.Decision viaPxn = TopoGdr.decide(paths, gpu0, mlx1, false, s.gdrLevel().value(), -2);
        assertEquals(Tri.YES, viaPxn.enabled(), viaPxn.reason());

        // port syntax: the file's <net port="1">; port 2 selects nothing on these HCAs
        final TopoPaths port2 = PathComputer.compute(system,
            NcclSettings.ofEnv(Map.of("NCCL_IB_HCA", "mlx5:2")).pathOptions());
        for (final TopoNode nic : system.nics())
        {
            assertEquals(Tri.NO, TopoGdr.decide(port2, gpu0, nic, false, GdrLevel.DEFAULT, -2).enabled());
        }
        assertFalse(IbHcaFilter.parse("mlx5:2").accepts(mlx0));
        assertTrue(IbHcaFilter.parse("mlx5:1").accepts(mlx0));
    }
}
