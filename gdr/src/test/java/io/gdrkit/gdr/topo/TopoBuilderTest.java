/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

class TopoBuilderTest
{
    @Test
    void codeBuiltHostsGiveNetAndDis()
    {
        final TopologyBuilder b = new TopologyBuilder();
        final TopoNode cpu0 = b.cpu(0);
        final TopoNode sw = b.pciSwitch("0000:03:00.0", cpu0);
        final TopoNode gpu0 = b.gpu("0000:07:00.0", sw, 90);
        b.nic("mlx5_0", "0000:05:00.0", sw);
        final TopoNode otherHost = b.cpu(0, 1);
        final TopoNode gpu1 = b.gpu("0001:07:00.0", otherHost, 90);
        final TopoNode lonely = b.gpu("0002:07:00.0", null, 90);
        final TopoSystem system = b.build();
        final TopoPaths paths = PathComputer.compute(system);
        assertEquals(PathType.PIX, paths.gpuToNic(0, 0).type());
        assertEquals(PathType.NET, paths.type(gpu0, gpu1), "GPUs of different hosts meet over the network");
        assertEquals(PathType.DIS, paths.type(gpu0, lonely), "a GPU with no link is disconnected");
        assertEquals(PathType.DIS, paths.type(lonely, system.nics().getFirst()));
        assertEquals(0.0, paths.path(gpu0, lonely).bandwidth());
        assertTrue(paths.path(gpu0, lonely).hops().isEmpty());
    }

    @Test
    void everyPathTypeAppearsAcrossTheFixtures()
    {
        final Set<PathType> seen = EnumSet.noneOf(PathType.class);
        for (final String name : new String[] { "dgx-8gpu-4nic.xml", "two-socket-pcie.xml", "pxn-box.xml",
            "gh200-c2c.xml" })
        {
            final TopoPaths paths = PathComputer.compute(TopoFixtures.xml(name));
            for (final TopoNode a : paths.system().nodes())
            {
                if (a.type() != NodeType.GPU && a.type() != NodeType.NIC && a.type() != NodeType.CPU)
                {
                    continue;
                }
                for (final TopoNode z : paths.system().nodes())
                {
                    if (z.type() == NodeType.GPU || z.type() == NodeType.NIC || z.type() == NodeType.CPU)
                    {
                        seen.add(paths.type(a, z));
                    }
                }
            }
        }
        final TopologyBuilder b = new TopologyBuilder();
        final TopoNode g = b.gpu("0000:01:00.0", b.cpu(0), 90);
        final TopoNode h = b.gpu("0001:01:00.0", b.cpu(0, 1), 90);
        b.gpu("0002:01:00.0", null, 90);
        final TopoPaths multi = PathComputer.compute(b.build());
        seen.add(multi.type(g, h));
        multi.system().gpus().forEach(x -> seen.add(multi.type(g, x)));
        assertEquals(EnumSet.allOf(PathType.class), seen);
    }

    @Test
    void builderRefusesNonsense()
    {
        final TopologyBuilder b = new TopologyBuilder();
        final TopoNode cpu = b.cpu(0);
        final TopoNode gpu = b.gpu("0000:01:00.0", cpu, 80);
        assertThrows(IllegalArgumentException.class, () -> b.cpu(0));
        assertThrows(IllegalArgumentException.class, () -> b.gpu("0000:01:00.0", cpu, 80));
        assertThrows(IllegalArgumentException.class, () -> b.nvlink(gpu, gpu, 2));
        assertThrows(IllegalArgumentException.class, () -> b.nvlink(gpu, b.nvSwitch(), 0));
        b.build();
        assertThrows(IllegalStateException.class, b::build);
    }

    @Test
    void nvlinkBandwidthFollowsNcclPerGeneration()
    {
        assertEquals(18.0, TopologyBuilder.nvlinkBandwidth(60));
        assertEquals(20.0, TopologyBuilder.nvlinkBandwidth(80));
        assertEquals(12.0, TopologyBuilder.nvlinkBandwidth(86));
        assertEquals(20.6, TopologyBuilder.nvlinkBandwidth(90));
        assertEquals(40.1, TopologyBuilder.nvlinkBandwidth(100));
    }
}
