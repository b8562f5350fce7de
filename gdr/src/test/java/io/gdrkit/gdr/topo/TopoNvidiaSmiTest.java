/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import static io.gdrkit.gdr.topo.PathType.LOC;
import static io.gdrkit.gdr.topo.PathType.NVL;
import static io.gdrkit.gdr.topo.PathType.PHB;
import static io.gdrkit.gdr.topo.PathType.PIX;
import static io.gdrkit.gdr.topo.PathType.PXB;
import static io.gdrkit.gdr.topo.PathType.PXN;
import static io.gdrkit.gdr.topo.PathType.SYS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

class TopoNvidiaSmiTest
{
    @Test
    void dgxMatrixWithNicLegend()
    {
        final TopoSystem system = TopoFixtures.smi("nvidia-smi-dgx.txt");
        assertEquals(8, system.gpus().size());
        assertEquals(4, system.nics().size());
        assertEquals(List.of("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"),
            system.nics().stream().map(TopoNode::id).toList());
        assertEquals(2, system.cpus().size());
        assertEquals("1", system.cpus().get(1).attributes().get("numaid"));
        final TopoPaths paths = PathComputer.compute(system);
        System.out.println(paths.matrix());
        for (int a = 0; a < 8; a++)
        {
            for (int b = 0; b < 8; b++)
            {
                assertEquals(a == b ? LOC : NVL, paths.gpuToGpu(a, b).type());
            }
            assertEquals(18, countNvlinks(system.gpus().get(a)) / 7, "NV18 to each of 7 peers");
        }
        assertEquals(PIX, paths.gpuToNic(0, 0).type());
        assertEquals(PXB, paths.gpuToNic(1, 0).type());
        assertEquals(PXN, paths.gpuToNic(2, 0).type(), "NODE to the NIC, NVLink to GPU0 which is PIX");
        assertEquals(PXN, paths.gpuToNic(7, 0).type());

        final TopoPaths raw = PathComputer.compute(system, PathOptions.DEFAULTS.withPxnDisable(true));
        assertEquals(PHB, raw.gpuToNic(2, 0).type(), "NODE is PHB in NCCL's types");
        assertEquals(SYS, raw.gpuToNic(7, 0).type());
    }

    @Test
    void olderFormatWithNicNamesAsColumns()
    {
        final TopoSystem system = TopoFixtures.smi("nvidia-smi-two-socket.txt");
        assertEquals(List.of("mlx5_0", "mlx5_1"), system.nics().stream().map(TopoNode::id).toList());
        final TopoPaths paths = PathComputer.compute(system);
        assertEquals(PIX, paths.gpuToGpu(0, 1).type());
        assertEquals(PHB, paths.gpuToGpu(0, 2).type());
        assertEquals(SYS, paths.gpuToGpu(0, 3).type());
        assertEquals(PIX, paths.gpuToNic(1, 0).type());
        assertEquals(PHB, paths.gpuToNic(2, 0).type());
        assertEquals(PXB, paths.gpuToNic(3, 1).type());
        assertEquals(SYS, paths.gpuToNic(3, 0).type());
        assertEquals("0", system.cpus().get(0).attributes().get("numaid"));
        assertEquals("1", system.cpus().get(1).attributes().get("numaid"));
    }

    @Test
    void pairsOfNvlinkedGpusAndAnsiColours()
    {
        final String text = """
            \u001B[4m\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\u001B[0m
            GPU0\t X \tNV4\tSYS\tSYS\tPIX\t0-15\t0\t\tN/A
            GPU1\tNV4\t X \tSYS\tSYS\tPXB\t0-15\t0\t\tN/A
            GPU2\tSYS\tSYS\t X \tNV4\tSYS\t16-31\t1\t\tN/A
            GPU3\tSYS\tSYS\tNV4\t X \tSYS\t16-31\t1\t\tN/A
            NIC0\tPIX\tPXB\tSYS\tSYS\t X \t\t\t\t

            NIC Legend:

              NIC0: mlx5_0
            """;
        final TopoSystem system = NvidiaSmiTopoReader.parse(text, "pairs.txt");
        final TopoPaths paths = PathComputer.compute(system);
        assertEquals(NVL, paths.gpuToGpu(0, 1).type());
        assertEquals(NVL, paths.gpuToGpu(2, 3).type());
        assertEquals(SYS, paths.gpuToGpu(1, 2).type());
        assertEquals(PXB, paths.gpuToNic(1, 0).type(), "PXB but not farther than PXN, same bandwidth: no PXN");
        assertEquals(SYS, paths.gpuToNic(2, 0).type(), "GPU2's NVLink peer GPU3 is not near the NIC");
    }

    @Test
    void refusesBadMatrices()
    {
        assertError("nothing here\n", 0, "no matrix header found");
        assertError("\tGPU0\tGPU1\nGPU0\t X \tPIQ\nGPU1\tPIQ\t X \n", 2, "cell 'PIQ' in column GPU1 is not one of");
        assertError("\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tSYS\t X \n", 2, "GPU0-GPU1 is PIX but GPU1-GPU0 is SYS");
        assertError("\tGPU0\tGPU1\nGPU0\t X \tPIX\n\n", 1, "the header names 2 devices but only 1 rows follow");
        assertError("\tGPU0\tGPU1\nGPU0\tPIX\tPIX\nGPU1\tPIX\t X \n", 2, "the diagonal cell of GPU0 must be X");
        assertError("\tGPU0\tGPU1\nGPU1\t X \tPIX\nGPU0\tPIX\t X \n", 2, "expected the row of GPU0, found 'GPU1'");
        assertError("\tGPU0\tGPU1\nGPU0\t X \nGPU1\tPIX\t X \n", 2, "row GPU0 has 1 cells, the header has 2");
        // PIX is transitive (one switch), so GPU0-GPU2 can not be SYS.
        assertError("""
            \tGPU0\tGPU1\tGPU2
            GPU0\t X \tPIX\tSYS
            GPU1\tPIX\t X \tPIX
            GPU2\tSYS\tPIX\t X
            """, 2, "GPU0-GPU2 is SYS but the other cells place them PIX apart");
    }

    private static void assertError(final String text, final int line, final String message)
    {
        final TopologyParseException ex =
            assertThrows(TopologyParseException.class, () -> NvidiaSmiTopoReader.parse(text, "smi.txt"));
        assertEquals(line, ex.line(), ex.getMessage());
        assertTrue(ex.getMessage().startsWith("smi.txt" + (line > 0 ? ":" + line : "") + ": "), ex.getMessage());
        assertTrue(ex.getMessage().contains(message), ex.getMessage());
    }

    private static int countNvlinks(final TopoNode gpu)
    {
        return gpu.links().stream().filter(l -> l.type() == LinkType.NVL).mapToInt(TopoLink::count).sum();
    }
}
