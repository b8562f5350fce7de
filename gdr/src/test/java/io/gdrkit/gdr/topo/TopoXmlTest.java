/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import static io.gdrkit.gdr.topo.PathType.C2C;
import static io.gdrkit.gdr.topo.PathType.LOC;
import static io.gdrkit.gdr.topo.PathType.NVB;
import static io.gdrkit.gdr.topo.PathType.NVL;
import static io.gdrkit.gdr.topo.PathType.P2C;
import static io.gdrkit.gdr.topo.PathType.PHB;
import static io.gdrkit.gdr.topo.PathType.PIX;
import static io.gdrkit.gdr.topo.PathType.PXB;
import static io.gdrkit.gdr.topo.PathType.PXN;
import static io.gdrkit.gdr.topo.PathType.SYS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TopoXmlTest
{
    @Test
    void dgxLikeBoxWithNvSwitch()
    {
        final TopoSystem system = TopoFixtures.xml("dgx-8gpu-4nic.xml");
        assertEquals(8, system.gpus().size());
        assertEquals(4, system.nics().size());
        assertEquals(2, system.cpus().size());
        assertEquals(1, system.nodes(NodeType.NVS).size());
        assertTrue(system.notes().isEmpty(), system.notes().toString());
        final TopoPaths paths = PathComputer.compute(system);
        System.out.println(paths.matrix());

        for (int a = 0; a < 8; a++)
        {
            for (int b = 0; b < 8; b++)
            {
                assertEquals(a == b ? LOC : NVL, paths.gpuToGpu(a, b).type(), "GPU" + a + "-GPU" + b);
            }
        }
        for (int g = 0; g < 8; g++)
        {
            for (int n = 0; n < 4; n++)
            {
                final PathType expected;
                if (g / 2 == n)
                {
                    expected = g % 2 == 0 ? PIX : PXB;
                }
                else
                {
                    expected = PXN;
                }
                final TopoPath path = paths.gpuToNic(g, n);
                assertEquals(expected, path.type(), "GPU" + g + "-NIC" + n + " " + path);
                if (expected == PXN)
                {
                    // The relay is the NIC's PIX GPU, reached over NVLink through the NVSwitch.
                    assertEquals(system.gpus().get(2 * n), path.intermediate());
                    assertTrue(path.hops().contains(system.nodes(NodeType.NVS).getFirst()), path.route());
                    final GdrDistanceCheck check =
                        paths.gdrDistance(system.gpus().get(g), system.nics().get(n), GdrLevel.DEFAULT);
                    assertEquals(PIX, check.distance(), "PXN uses the relay GPU's distance");
                    assertTrue(check.allowed());
                    assertTrue(check.logLine().contains("via GPU" + 2 * n + " (PXN)"), check.logLine());
                }
                // NIC-to-GPU keeps the physical path: NCCL applies PXN in the GPU-to-NIC direction only.
                final PathType back = paths.type(system.nics().get(n), system.gpus().get(g));
                assertEquals(g / 2 == n ? expected : (g / 4 == n / 2 ? PHB : SYS), back);
            }
        }
    }

    @Test
    void dgxWithoutPxnShowsPhbAndSys()
    {
        final TopoSystem system = TopoFixtures.xml("dgx-8gpu-4nic.xml");
        final TopoPaths paths = PathComputer.compute(system, PathOptions.DEFAULTS.withPxnDisable(true));
        assertEquals(PIX, paths.gpuToNic(0, 0).type());
        assertEquals(PXB, paths.gpuToNic(1, 0).type());
        assertEquals(PHB, paths.gpuToNic(2, 0).type());
        assertEquals(SYS, paths.gpuToNic(4, 0).type());
        assertNull(paths.gpuToNic(4, 0).intermediate());
        final GdrDistanceCheck far =
            paths.gdrDistance(system.gpus().get(4), system.nics().get(0), GdrLevel.DEFAULT);
        assertFalse(far.allowed());
        assertEquals("GPU Direct RDMA Disabled for GPU 4 / HCA mlx5_0 (distance SYS > P2C)", far.logLine());
        assertTrue(paths.gdrDistance(system.gpus().get(4), system.nics().get(0),
            GdrLevel.parse("SYS", "NCCL_NET_GDR_LEVEL")).allowed());
        assertTrue(paths.gdrDistance(system.gpus().get(2), system.nics().get(0),
            GdrLevel.parse("3", "NCCL_NET_GDR_LEVEL")).allowed(), "old level 3 = PHB");
    }

    @Test
    void twoSocketPcieBox()
    {
        final TopoSystem system = TopoFixtures.xml("two-socket-pcie.xml");
        final TopoPaths paths = PathComputer.compute(system);
        System.out.println(paths.matrix());
        assertEquals(PIX, paths.gpuToGpu(0, 1).type());
        assertEquals(PHB, paths.gpuToGpu(0, 2).type());
        assertEquals(SYS, paths.gpuToGpu(0, 3).type());
        assertEquals(PIX, paths.gpuToNic(0, 0).type());
        assertEquals(PIX, paths.gpuToNic(1, 0).type());
        assertEquals(PHB, paths.gpuToNic(2, 0).type(), "no NVLink, so no PXN relay: stays PHB");
        assertEquals(SYS, paths.gpuToNic(0, 1).type());
        assertEquals(PXB, paths.gpuToNic(3, 1).type());
        assertEquals(SYS, paths.gpuToNic(3, 0).type());
        assertEquals("0000:82:00.0", system.gpus().get(3).id());
        assertEquals("GPU3 -> 0000:81:00.0 -> 0000:80:00.0 -> NIC1", paths.gpuToNic(3, 1).route());
        assertEquals(24.0, paths.gpuToNic(3, 1).bandwidth(), "Gen4 x16 from link_speed and link_width");
    }

    @Test
    void pxnBoxHasNvlNvbPxnAndPlainPhb()
    {
        final TopoSystem system = TopoFixtures.xml("pxn-box.xml");
        final TopoPaths paths = PathComputer.compute(system);
        System.out.println(paths.matrix());
        assertEquals(NVL, paths.gpuToGpu(0, 1).type());
        assertEquals(NVL, paths.gpuToGpu(1, 2).type());
        assertEquals(NVB, paths.gpuToGpu(0, 2).type());
        assertEquals(system.gpus().get(1), paths.gpuToGpu(0, 2).hops().getFirst());
        assertEquals(PHB, paths.gpuToGpu(0, 3).type());
        assertEquals(PIX, paths.gpuToNic(0, 0).type());
        final TopoPath pxn = paths.gpuToNic(1, 0);
        assertEquals(PXN, pxn.type());
        assertEquals(system.gpus().get(0), pxn.intermediate());
        assertEquals("GPU1 -> GPU0 -> 0000:10:00.0 -> NIC0", pxn.route());
        assertEquals(PHB, paths.gpuToNic(2, 0).type(), "GPU0 is NVB from GPU2, not NVL: no PXN");
        assertEquals(PHB, paths.gpuToNic(3, 0).type(), "no NVLink at all: no PXN");
        assertEquals(PHB, paths.type(system.nics().get(0), system.gpus().get(1)), "PXN is GPU to NIC only");

        final TopoPaths noNvb = PathComputer.compute(system, PathOptions.DEFAULTS.withNvbDisable(true));
        assertEquals(NVL, noNvb.gpuToGpu(1, 2).type(), "direct NVLink unaffected");
        assertEquals(PHB, noNvb.gpuToGpu(0, 2).type(), "NCCL_NVB_DISABLE: GPU0-GPU2 over PCIe");
        final TopoPaths noPxn = PathComputer.compute(system, PathOptions.DEFAULTS.withPxnDisable(true));
        assertEquals(PHB, noPxn.gpuToNic(1, 0).type());
    }

    @Test
    void divertWithoutGdrRoutesThroughCpu()
    {
        final TopoSystem system = TopoFixtures.xml("pxn-box.xml");
        final TopoPaths paths = PathComputer.compute(system,
            PathOptions.DEFAULTS.withDivertWithoutGdr(true, GdrLevel.parse("LOC", "NCCL_NET_GDR_LEVEL")));
        // PIX > LOC: NCCL routes the pair through the GPU's CPU, which makes it PHB.
        assertEquals(PHB, paths.gpuToNic(0, 0).type());
        assertTrue(paths.gpuToNic(0, 0).route().contains("CPU0"), paths.gpuToNic(0, 0).route());
        final TopoPaths kept = PathComputer.compute(system,
            PathOptions.DEFAULTS.withDivertWithoutGdr(true, GdrLevel.DEFAULT));
        assertEquals(PIX, kept.gpuToNic(0, 0).type());
        assertEquals(PXN, kept.gpuToNic(1, 0).type(), "PXN relay PIX <= PXB keeps GDR");
    }

    @Test
    void graceHopperC2cAndP2c()
    {
        final TopoSystem system = TopoFixtures.xml("gh200-c2c.xml");
        final TopoPaths paths = PathComputer.compute(system);
        final TopoNode gpu = system.gpus().getFirst();
        final TopoNode nic = system.nics().getFirst();
        assertEquals(C2C, paths.type(gpu, system.cpus().getFirst()));
        assertEquals(P2C, paths.type(gpu, nic));
        assertEquals(P2C, paths.type(nic, gpu));
        // NCCL 2.30 paths.cc: the default level is P2C when NCCL_NET_GDR_C2C=1 (its default), PXB otherwise.
        final GdrDistanceCheck c2c = paths.gdrDistance(gpu, nic, GdrLevel.DEFAULT);
        assertEquals(P2C, c2c.distance());
        assertEquals(P2C, c2c.level().path(), "NCCL_NET_GDR_C2C=1 (default) raises the default level to P2C");
        assertTrue(c2c.allowed());
        assertFalse(c2c.pciMapping(), "a P2C distance keeps NCCL's default mapping, not the PCI one");
        assertFalse(paths.gdrDistance(gpu, nic, GdrLevel.parse("PXB", "NCCL_NET_GDR_LEVEL")).allowed(),
            "an explicit PXB is not raised: P2C > PXB");
        final TopoPaths off = PathComputer.compute(system, PathOptions.DEFAULTS.withNetGdrC2c(false));
        final GdrDistanceCheck p2c = off.gdrDistance(gpu, nic, GdrLevel.DEFAULT);
        assertEquals(P2C, p2c.distance());
        assertFalse(p2c.allowed());
    }

    @Test
    void readsFromFileAndReportsSkippedElements(@TempDir final Path dir) throws Exception
    {
        final Path file = dir.resolve("topo.xml");
        Files.writeString(file, """
            <system version="1">
              <cpu numaid="0">
                <pci busid="0000:01:00.0" class="0x030200"><gpu dev="0" sm="90">
                  <nvlink target="0000:99:00.0" count="4" tclass="0x030200"/></gpu></pci>
                <pci busid="0000:02:00.0" class="0x010802"/>
                <gin name="x"/>
              </cpu>
            </system>
            """);
        final TopoSystem system = NcclTopoXmlReader.read(file);
        assertEquals(1, system.gpus().size());
        assertEquals(4, system.notes().size(), system.notes().toString());
        assertTrue(system.notes().get(3).contains("<pci> without link_width or link_speed: NCCL reads them from " +
            "sysfs at run time"), system.notes().toString());
        assertTrue(system.notes().get(0).contains(":5: <pci busid=\"0000:02:00.0\""), system.notes().toString());
        assertTrue(system.notes().get(1).contains(":6: element <gin> ignored"), system.notes().toString());
        assertTrue(system.notes().get(2).contains(":4: nvlink target 0000:99:00.0"), system.notes().toString());
    }

    @Test
    void errorsCarryFileAndLine()
    {
        assertError("""
            <graphs version="1">
              <graph id="0" pattern="4" crossnic="0" nchannels="2"/>
            </graphs>
            """, 1, "this is an NCCL graph file (<graphs>, written by NCCL_GRAPH_DUMP_FILE");
        assertError("""
            <system version="1">
              <cpu>
              </cpu>
            </system>
            """, 2, "<cpu> needs a numaid attribute");
        assertError("""
            <system version="1">
              <cpu numaid="0">
                <nvlink target="0000:01:00.0"/>
              </cpu>
            </system>
            """, 3, "<nvlink> must be inside <gpu>, found inside <cpu>");
        assertError("""
            <system version="1">
              <cpu numaid="0">
                <pci busid="0000:01:00.0" class="0x030200"><gpu dev="0" sm="nine"/></pci>
              </cpu>
            </system>
            """, 3, "sm=\"nine\" is not an integer");
        assertError("""
            <system version="1">
              <cpu numaid="0">
                <pci busid="0000:01:00.0">
              </cpu>
            </system>
            """, 4, "malformed XML");
        assertError("""
            <system version="1">
              <cpu numaid="0"/>
              <cpu numaid="0"/>
            </system>
            """, 3, "numaid 0 defined twice");
        final TopologyParseException none =
            assertThrows(TopologyParseException.class, () -> NcclTopoXmlReader.parse("<topo/>", "t.xml"));
        assertEquals("t.xml:1: the root element is <topo>, not <system>: not an NCCL topology file",
            none.getMessage());
    }

    private static void assertError(final String xml, final int line, final String text)
    {
        final TopologyParseException ex =
            assertThrows(TopologyParseException.class, () -> NcclTopoXmlReader.parse(xml, "bad.xml"));
        assertEquals(line, ex.line(), ex.getMessage());
        assertEquals("bad.xml", ex.file());
        assertTrue(ex.getMessage().startsWith("bad.xml:" + line + ": "), ex.getMessage());
        assertTrue(ex.getMessage().contains(text), ex.getMessage());
    }

    /**
     * NCCL 2.30 reads several {@code <gpu>} under one {@code <pci>} as GPUs of one device (ncclTopoAddGpuSub: one DEV
     * node, each GPU linked to it with LINK_LOC). Two GPUs of one device are LOC apart; both are PIX to a NIC under
     * the same switch, as the device is; the NVLinks are the first GPU's.
     */
    @Test
    void severalGpusUnderOnePci()
    {
        final TopoSystem system = NcclTopoXmlReader.parse("""
            <system version="1">
              <cpu numaid="0" arch="x86_64" vendor="GenuineIntel">
                <pci busid="0000:10:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
                  <pci busid="0000:11:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
                    <gpu dev="0" sm="100" rank="0" gdr="1" mlopart="0"><nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/></gpu>
                    <gpu dev="1" sm="100" rank="1" gdr="1" mlopart="1"/>
                  </pci>
                  <pci busid="0000:12:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">
                    <nic><net name="mlx5_0" dev="0" speed="400000" gdr="1"/></nic>
                  </pci>
                </pci>
              </cpu>
            </system>
            """, "mlopart.xml");
        assertEquals(2, system.gpus().size());
        assertEquals(1, system.nodes(NodeType.DEV).size());
        final TopoPaths paths = PathComputer.compute(system);
        final TopoNode g0 = system.gpus().get(0);
        final TopoNode g1 = system.gpus().get(1);
        assertEquals("GPU1", g1.label());
        assertEquals("0000:11:00.0", g1.busId());
        assertEquals(LOC, paths.type(g0, g1));
        assertEquals(PIX, paths.type(g0, system.nics().getFirst()));
        assertEquals(PIX, paths.type(g1, system.nics().getFirst()));
        assertTrue(system.notes().stream().anyMatch(n -> n.contains("holds 2 GPUs: one GPU device")),
            system.notes().toString());
    }
}
