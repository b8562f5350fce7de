/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Large inputs: node lookup is by map and paths are kept sparsely, so 10,000 NICs read and compute (the time is
 * measured in docs/TOPOLOGY.md, never asserted here); past the cap the reader names the cap.
 */
class TopoScaleTest
{
    /**
     * @param nics NICs in all.
     * @return an NCCL topology with 2 CPUs, 8 switches each holding one GPU (sm 90, gdr 1) and nics/8 NICs.
     */
    static String manyNics(final int nics)
    {
        return manyNics(8, nics);
    }

    /**
     * @param gpus GPUs in all, an even number: one switch each, half of them under each of the 2 CPUs.
     * @param nics NICs in all, spread over the switches (switch s holds NICs nics*s/gpus up to nics*(s+1)/gpus).
     * @return an NCCL topology with 2 CPUs and one switch per GPU (sm 90, gdr 1) with its NICs (gdr 1).
     */
    static String manyNics(final int gpus, final int nics)
    {
        final StringBuilder sb = new StringBuilder("<system version=\"1\">\n");
        int dev = 0;
        for (int cpu = 0; cpu < 2; cpu++)
        {
            sb.append("<cpu numaid=\"").append(cpu).append("\" arch=\"x86_64\" vendor=\"GenuineIntel\">\n");
            for (int s = 0; s < gpus / 2; s++)
            {
                final int sw = cpu * (gpus / 2) + s;
                sb.append(String.format("<pci busid=\"%04x:00:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\"" +
                    " link_width=\"16\">%n", sw + 1));
                sb.append(String.format("<pci busid=\"%04x:01:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\"" +
                    " link_width=\"16\"><gpu dev=\"%d\" sm=\"90\" rank=\"%d\" gdr=\"1\"/></pci>%n", sw + 1, sw, sw));
                final int count = (int) ((long) nics * (sw + 1) / gpus - (long) nics * sw / gpus);
                for (int k = 0; k < count; k++)
                {
                    sb.append(String.format("<pci busid=\"%04x:%02x:%02x.%x\" class=\"0x020700\" " +
                        "link_speed=\"32.0 GT/s PCIe\" link_width=\"16\"><nic><net name=\"mlx5_%d\" dev=\"%d\" " +
                        "speed=\"400000\" gdr=\"1\"/></nic></pci>%n", sw + 1, 2 + k / 256, (k / 8) % 32, k % 8, dev,
                        dev));
                    dev++;
                }
                sb.append("</pci>\n");
            }
            sb.append("</cpu>\n");
        }
        return sb.append("</system>\n").toString();
    }

    @Test
    void tenThousandNics()
    {
        final String xml = manyNics(10_000);
        final long t0 = System.nanoTime();
        final TopoSystem system = NcclTopoXmlReader.parse(xml, "10k.xml");
        final long t1 = System.nanoTime();
        final TopoPaths paths = PathComputer.compute(system);
        final long t2 = System.nanoTime();
        System.out.printf("10,000 NICs (%d KiB of XML): read %.0f ms, paths %.0f ms%n", xml.length() / 1024,
            (t1 - t0) / 1e6, (t2 - t1) / 1e6);
        assertEquals(10_000, system.nics().size());
        assertEquals(8, system.gpus().size());
        // NIC 1250*s + k sits under switch s with GPU s: PIX there; no NVLink in this file, so no PXN: PHB from the
        // GPUs of the same CPU and SYS across.
        final TopoNode nic = system.nics().get(1250 * 5 + 17);
        for (final TopoNode gpu : system.gpus())
        {
            final PathType want = gpu.dev() == 5 ? PathType.PIX : gpu.dev() / 4 == 1 ? PathType.PHB : PathType.SYS;
            assertEquals(want, paths.type(gpu, nic), gpu.toString());
        }
        // GPU 5 has 1,250 equally close NICs and is the only GPU near them; ncclTopoGetLocalGpu tries 64 channels
        // (MAXCHANNELS) and GPU 5 uses NIC c on channel c, so its first 64 NICs have it as local GPU, the rest none.
        assertSame(system.gpus().get(5), paths.localGpu(system.nics().get(1250 * 5 + 63)));
        assertNull(paths.localGpu(system.nics().get(1250 * 5 + 64)));
    }

    /**
     * Paths are kept in one array row per source (CPUs and GPUs first, then NICs): every GPU-NIC and NIC-GPU pair
     * has its own path; past 1,024 NICs a NIC keeps no path to another NIC (a named error) but keeps its own.
     */
    @Test
    void everyPairHasItsOwnPath()
    {
        final TopoSystem system = NcclTopoXmlReader.parse(manyNics(16, 2_000), "16x2000.xml");
        final TopoPaths paths = PathComputer.compute(system);
        for (final TopoNode gpu : system.gpus())
        {
            for (final TopoNode nic : system.nics())
            {
                final TopoPath there = paths.path(gpu, nic);
                final TopoPath back = paths.path(nic, gpu);
                assertSame(gpu, there.from());
                assertSame(nic, there.to());
                assertSame(nic, back.from());
                assertSame(gpu, back.to());
                assertSame(nic, there.hops().getLast());
                assertSame(gpu, back.hops().getLast());
                assertEquals(there.hops().size(), back.hops().size());
                final int sw = system.nics().indexOf(nic) / 125;
                assertEquals(gpu.dev() == sw ? PathType.PIX : gpu.dev() / 8 == sw / 8 ? PathType.PHB : PathType.SYS,
                    there.type(), gpu + " " + nic);
            }
        }
        final TopoNode nic0 = system.nics().getFirst();
        assertEquals(PathType.LOC, paths.type(nic0, nic0));
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> paths.path(nic0, system.nics().get(1)));
        assertTrue(ex.getMessage().contains("between two NICs only up to 1024 NICs"), ex.getMessage());
    }

    /**
     * Writes the 64-GPU, 10,000-NIC file measured in docs/TOPOLOGY.md when {@code -Dgdrkit.topo.scale.write=FILE}
     * is given; skipped otherwise.
     */
    @Test
    void writesTheScaleFileWhenAsked() throws java.io.IOException
    {
        final String target = System.getProperty("gdrkit.topo.scale.write");
        org.junit.jupiter.api.Assumptions.assumeTrue(target != null,
            "no -Dgdrkit.topo.scale.write=FILE: the scale file is written only when asked");
        java.nio.file.Files.writeString(java.nio.file.Path.of(target), manyNics(64, 10_000));
        assertEquals(64, NcclTopoXmlReader.read(java.nio.file.Path.of(target)).gpus().size());
    }

    @Test
    void pastTheCapIsANamedError()
    {
        final TopologyParseException ex = assertThrows(TopologyParseException.class,
            () -> NcclTopoXmlReader.parse(manyNics(800), "big.xml", 500));
        assertTrue(ex.getMessage().contains("more than 500 topology nodes: past the input cap (docs/TOPOLOGY.md)"),
            ex.getMessage());
        assertTrue(ex.line() > 0, ex.getMessage());
    }
}
