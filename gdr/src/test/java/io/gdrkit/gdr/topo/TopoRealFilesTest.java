/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import static io.gdrkit.gdr.topo.PathType.NVL;
import static io.gdrkit.gdr.topo.PathType.PHB;
import static io.gdrkit.gdr.topo.PathType.PIX;
import static io.gdrkit.gdr.topo.PathType.PXN;
import static io.gdrkit.gdr.topo.PathType.SYS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.gdr.topo.TopoGdr.Tri;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Real topology files and nvidia-smi outputs published by clouds, vendors and users (each fixture names its source
 * in a comment), with the answers NCCL 2.30's code gives for them, worked out from that code (topo.cc ncclTopoAddPci
 * and ncclTopoAddNet, paths.cc ncclTopoComputePaths and ncclTopoCheckGdr, topo.cc ncclTopoGetLocal,
 * ncclTopoGetLocalNet and ncclTopoGetLocalGpu), not from gdrkit's output.
 */
class TopoRealFilesTest
{
    private static TopoSystem xml(final String name)
    {
        return TopoFixtures.xml("real/" + name);
    }

    private static TopoGdr.Decision write(final TopoPaths paths, final TopoNode gpu, final TopoNode nic)
    {
        return TopoGdr.decide(paths, gpu, nic, false, GdrLevel.DEFAULT, -2);
    }

    private static TopoGdr.Decision read(final TopoPaths paths, final TopoNode gpu, final TopoNode nic)
    {
        return TopoGdr.decide(paths, gpu, nic, true, GdrLevel.DEFAULT, -2);
    }

    /**
     * AWS p5.48xlarge: one CPU, eight PCIe switches, each with one H100 (dev k) and four EFA NICs (dev 4k..4k+3),
     * gdr="1" everywhere, no NVLink in the file. NCCL: a GPU and its switch's NICs are PIX (GPU -> switch -> NIC);
     * every other pair crosses the CPU, PHB. Each NIC's closest GPUs (ncclTopoGetLocal: widest, then closest) are
     * its switch's one GPU, and that GPU's four local NICs are picked on channels 0..3, so the NIC's local GPU is
     * it. No NVLink, so no PXN. GDR: PIX <= P2C (the default level with NCCL_NET_GDR_C2C=1) with both gdr=1 and
     * sm 90 >= 80 for reads: enabled both ways; PHB > P2C: disabled by distance.
     */
    @Test
    void awsP5FullFile()
    {
        final TopoSystem system = xml("aws-p5.48xl-topo.xml");
        assertEquals(8, system.gpus().size());
        assertEquals(32, system.nics().size());
        final TopoPaths paths = PathComputer.compute(system);
        for (final TopoNode gpu : system.gpus())
        {
            final int k = gpu.dev();
            assertEquals("GPU" + k, gpu.label());
            for (final TopoNode nic : system.nics())
            {
                final boolean own = nic.dev() / 4 == k;
                assertEquals(own ? PIX : PHB, paths.type(gpu, nic), gpu + " " + nic);
                final TopoGdr.Decision w = write(paths, gpu, nic);
                final TopoGdr.Decision r = read(paths, gpu, nic);
                // Issue 34: the file has no <nvlink>, so NCCL looks NVLink up with NVML at run time (xml.cc); with
                // the p5's NVSwitch every other GPU reaches the NIC through its switch's GPU (PXN, PIX <= P2C).
                // The file alone can not say: unknown, naming what it lacks; the own-switch pairs it proves.
                assertEquals(own ? Tri.YES : Tri.UNKNOWN, w.enabled(), w.reason());
                assertEquals(own ? Tri.YES : Tri.UNKNOWN, r.enabled(), r.reason());
                if (own)
                {
                    assertEquals("unknown", w.mechanism(), "no topology file says DMA-BUF or peermem");
                    assertTrue(w.reason().contains("mechanism unknown"), w.reason());
                }
                else
                {
                    assertEquals("", w.gate());
                    assertTrue(w.reason().contains("distance PHB > P2C unless NVLink to GPU " + nic.dev() / 4 +
                        " (PXN, PIX)"), w.reason());
                    assertTrue(w.reason().contains("the file lists no <nvlink> for GPU"), w.reason());
                    assertTrue(w.reason().contains("NVML"), w.reason());
                }
            }
            for (final TopoNode other : system.gpus())
            {
                if (other != gpu)
                {
                    assertEquals(PHB, paths.type(gpu, other));
                }
            }
        }
        for (final TopoNode nic : system.nics())
        {
            assertEquals(nic.dev() / 4, paths.localGpu(nic).dev(), nic.toString());
            // The file's <net dev> and name label the NIC; the bus id comes from the enclosing <pci>.
            assertEquals("NIC" + nic.dev(), nic.label());
        }
        final TopoNode nic5 = system.nics().get(5);
        assertEquals("rdmap97s0", nic5.id());
        assertEquals("0000:62:00.0", nic5.busId());
        assertEquals("0000:60:00.0", system.gpus().get(1).busId());
        assertTrue(system.notes().stream().anyMatch(n -> n.startsWith("at run time NCCL adds: NVLink/NVSwitch")),
            system.notes().toString());
    }

    /**
     * Issue 34: the p5 file without its {@code gdr} attributes (as files written by hand often are). NCCL fills a
     * {@code <net>}'s missing gdr from its network plugin at run time (topo.cc, xmlInitAttrInt) and a {@code <gpu>}'s
     * from the CUDA driver: the file does not hold them, so the own-switch PIX pairs are unknown, not refused.
     */
    @Test
    void awsP5WithoutGdrAttributesIsUnknown()
    {
        final TopoSystem system = NcclTopoXmlReader.parse(
            TopoFixtures.text("real/aws-p5.48xl-topo.xml").replace(" gdr=\"1\"", ""), "p5-no-gdr.xml");
        final TopoPaths paths = PathComputer.compute(system);
        final TopoNode gpu = system.gpus().getFirst();
        final TopoNode nic = system.nics().getFirst();
        assertEquals(PIX, paths.type(gpu, nic));
        final TopoGdr.Decision w = write(paths, gpu, nic);
        assertEquals(Tri.UNKNOWN, w.enabled(), w.reason());
        assertTrue(w.reason().contains("<net> has no gdr attribute") && w.reason().contains("network plugin"),
            w.reason());
        assertEquals(Tri.UNKNOWN, TopoGdr.nicSupport(nic).value());
    }

    /**
     * Azure NDv4, a partial file: four switches under one CPU, each with two bare GPUs and two bare NICs. NCCL
     * merges them with what it detects; gdrkit models them with GDR support unknown. GPUs are numbered in bus order
     * (as CUDA numbers identical GPUs). Same switch: PIX; other switches: PHB. NIC k's closest GPUs are its switch's
     * two GPUs; each has two local NICs and two local GPUs share them, so a GPU uses one NIC per channel: dev % 2,
     * mirrored over two NICs, picks the first NIC for the even GPU and the second for the odd one: NIC k's local GPU
     * is GPU k. GDR: PIX pairs unknown (support unknown, and with no sm and no NVLink peer the read rule is unknown
     * too); PHB pairs disabled by distance whatever the support.
     */
    @Test
    void azureNdv4PartialFile()
    {
        final TopoSystem system = xml("azure-ndv4-topo.xml");
        assertEquals(8, system.gpus().size());
        assertEquals(8, system.nics().size());
        final TopoPaths paths = PathComputer.compute(system);
        final String[] gpuBus = { "0001", "0002", "0003", "0004", "000b", "000c", "000d", "000e" };
        for (int g = 0; g < 8; g++)
        {
            final TopoNode gpu = system.gpus().get(g);
            assertEquals(g, gpu.dev());
            assertEquals(gpuBus[g] + ":00:00.0", gpu.busId());
            for (int n = 0; n < 8; n++)
            {
                final TopoNode nic = system.nics().get(n);
                assertEquals(String.format("01%02x:00:00.0", n + 1), nic.busId());
                final boolean same = g / 2 == n / 2;
                assertEquals(same ? PIX : PHB, paths.type(gpu, nic), gpu + " " + nic);
                // PHB pairs: unknown, not false: with NVLink from NVML the NIC's local GPU n relays (PXN, PIX).
                final TopoGdr.Decision w = write(paths, gpu, nic);
                assertEquals(Tri.UNKNOWN, w.enabled(), w.reason());
                final TopoGdr.Decision r = read(paths, gpu, nic);
                assertEquals(Tri.UNKNOWN, r.enabled());
                if (same)
                {
                    assertTrue(r.reason().contains("compute capability unknown"), r.reason());
                }
                else
                {
                    assertTrue(w.reason().contains("unless NVLink to GPU " + n + " (PXN, PIX)") &&
                        w.reason().contains("no <nvlink>"), w.reason());
                }
            }
        }
        for (int n = 0; n < 8; n++)
        {
            assertSame(system.gpus().get(n), paths.localGpu(system.nics().get(n)), "NIC" + n);
        }
        final List<String> notes = system.notes();
        assertTrue(notes.stream().anyMatch(s -> s.contains("8 bare <pci class=\"0x03..\"> GPU(s)")), notes.toString());
        assertTrue(notes.stream().anyMatch(s -> s.contains("8 bare <pci class=\"0x02..\"> NIC(s)")), notes.toString());
        assertTrue(notes.stream().anyMatch(s -> s.startsWith("at run time NCCL adds: NVLink/NVSwitch links from " +
            "NVML") && s.contains("<gpu> attributes") && s.contains("<nic>/<net>")), notes.toString());
        assertEquals(Tri.UNKNOWN, TopoGdr.gpuSupport(system.gpus().getFirst()).value());
        assertEquals(Tri.UNKNOWN, TopoGdr.nicSupport(system.nics().getFirst()).value());
    }

    /**
     * AWS p4d.24xlarge, a partial file: two CPUs, two switches each, each switch with two bare GPUs and one bare
     * EFA NIC. Same switch PIX, same CPU PHB, other CPU SYS. Each GPU has one local NIC (its switch's); both GPUs of
     * a switch pick it on every channel, so the NIC's local GPU is the first of them in GPU order.
     */
    @Test
    void awsP4dPartialFile()
    {
        final TopoSystem system = xml("aws-p4d-24xl-topo.xml");
        assertEquals(8, system.gpus().size());
        assertEquals(4, system.nics().size());
        assertEquals(2, system.cpus().size());
        final TopoPaths paths = PathComputer.compute(system);
        for (final TopoNode gpu : system.gpus())
        {
            for (final TopoNode nic : system.nics())
            {
                final int g = gpu.dev();
                final int n = nic.typeIndex();
                final PathType expected = g / 2 == n ? PIX : g / 4 == n / 2 ? PHB : SYS;
                assertEquals(expected, paths.type(gpu, nic), gpu + " " + nic);
                // every pair unknown: PIX ones on GDR support, the others also on NVLink (PXN through GPU 2n)
                final TopoGdr.Decision w = write(paths, gpu, nic);
                assertEquals(Tri.UNKNOWN, w.enabled(), w.reason());
                assertEquals(expected != PIX, w.reason().contains("unless NVLink to GPU " + 2 * n), w.reason());
            }
        }
        for (int n = 0; n < 4; n++)
        {
            assertSame(system.gpus().get(2 * n), paths.localGpu(system.nics().get(n)));
        }
        assertEquals("0000:90:1b.0", system.nics().get(2).id(), "a bare NIC is named by its bus id");
    }

    /**
     * NCCL issue #392's dump: every link says link_width="0" and link_speed="". NCCL reads width 0 as x16 and an
     * unknown speed as 8 GT/s per lane (12 GB/s), so the GPUs and the NIC under one switch are PIX, not
     * disconnected. Every <gpu> and <net> says gdr="0": GDR is disabled at the first gate, the NIC's.
     */
    @Test
    void linkWidthZeroIsX16()
    {
        final TopoSystem system = xml("nccl-issue-392-width0.xml");
        assertEquals(4, system.gpus().size());
        final TopoPaths paths = PathComputer.compute(system);
        final TopoNode nic = system.nics().getFirst();
        for (final TopoNode gpu : system.gpus())
        {
            final TopoPath path = paths.path(gpu, nic);
            assertEquals(PIX, path.type());
            assertEquals(12.0, path.bandwidth(), 1e-9, "x16 at NCCL's fallback 8 GT/s");
            final TopoGdr.Decision w = write(paths, gpu, nic);
            assertEquals(Tri.NO, w.enabled());
            assertEquals("NIC", w.gate());
            assertTrue(w.reason().contains("NIC gdr=\"0\""), w.reason());
            assertEquals("none", w.mechanism());
        }
        assertTrue(system.notes().stream().anyMatch(s -> s.contains("NCCL reads a width of 0 as x16") &&
            s.contains("6 element(s)")), system.notes().toString());

        // The same host with gdr="1": writes enabled at PIX; reads hang on NCCL's default rule for sm 70 < 80, which
        // needs an NVLink peer, and this excerpt has no <nvlink> (NCCL would ask NVML): unknown, not refused.
        final TopoSystem on = NcclTopoXmlReader.parse(
            TopoFixtures.text("real/nccl-issue-392-width0.xml").replace("gdr=\"0\"", "gdr=\"1\""), "gdr1.xml");
        final TopoPaths onPaths = PathComputer.compute(on);
        final TopoNode gpu0 = on.gpus().getFirst();
        assertEquals(Tri.YES, write(onPaths, gpu0, on.nics().getFirst()).enabled());
        final TopoGdr.Decision r = read(onPaths, gpu0, on.nics().getFirst());
        assertEquals(Tri.UNKNOWN, r.enabled(), r.reason());
        assertTrue(r.reason().contains("sm=70 < 80 and the file lists no <nvlink>"), r.reason());
    }

    /**
     * NVIDIA/nccl-tests issue #256's bare-metal H200 dump: each GPU lists 18 NVLinks as four {@code <nvlink>}
     * elements, one per NVSwitch (5+5+4+4). NCCL models every NVSwitch as one node and sums the links into one
     * (topo.cc ncclTopoConnectNodes, {@code link->bw += bw}): 18 x 20.6 GB/s (sm 90) each way, so GPU-GPU is NVL at
     * 370.8 GB/s, not one element's 5 links (103 GB/s).
     */
    @Test
    void nvlinksToNvswitchesAreSummed()
    {
        final TopoSystem system = xml("nccl-tests-issue-256-h200-nvswitch.xml");
        assertEquals(3, system.gpus().size());
        final TopoNode gpu0 = system.gpus().getFirst();
        final TopoLink toSwitch = gpu0.links().stream().filter(l -> l.type() == LinkType.NVL).findFirst().orElseThrow();
        assertEquals(NodeType.NVS, toSwitch.to().type());
        assertEquals(1, gpu0.links().stream().filter(l -> l.type() == LinkType.NVL).count(), "one aggregated link");
        assertEquals(18 * 20.6, toSwitch.bandwidth(), 1e-9);
        assertEquals(18, toSwitch.count());
        final TopoLink back = toSwitch.to().links().stream().filter(l -> l.to() == gpu0).findFirst().orElseThrow();
        assertEquals(18 * 20.6, back.bandwidth(), 1e-9, "the NVSwitch's link back to the GPU is summed too");
        final TopoPaths paths = PathComputer.compute(system);
        final TopoPath p = paths.path(gpu0, system.gpus().get(1));
        assertEquals(NVL, p.type());
        assertEquals(18 * 20.6, p.bandwidth(), 1e-9);
        assertTrue(system.notes().stream().noneMatch(n -> n.contains("listed with count")), system.notes().toString());
    }

    /**
     * NCCL issue #1264's nvidia-smi output: 8 H100 on NVSwitch (NV18), 10 NICs. GPU k is PIX to one NIC; NIC3 and
     * NIC4 are PIX to no GPU (storage NICs). For a compute NIC, its PIX GPU is its local GPU, and every other GPU
     * reaches it through that GPU over NVLink (PXN: NVLink-connected, the relay is PIX <= P2C, and the GPU's own
     * path is SYS > PXN). For a storage NIC, every GPU's local NICs are its own PIX NIC only (wider than the SYS
     * path), so no GPU ever picks NIC3 or NIC4: ncclTopoGetLocalGpu returns -1, no PXN, the path stays SYS and GDR
     * is off by distance.
     */
    @Test
    void nvidiaSmiWithStorageNics()
    {
        final TopoSystem system = TopoFixtures.smi("real/nvidia-smi-nccl-issue-1264-h100.txt");
        final TopoPaths paths = PathComputer.compute(system);
        final int[] own = { 0, 1, 2, 5, 6, 7, 8, 9 };
        for (final TopoNode gpu : system.gpus())
        {
            for (final TopoNode nic : system.nics())
            {
                final int n = nic.dev();
                final TopoGdr.Decision w = write(paths, gpu, nic);
                if (n == 3 || n == 4)
                {
                    assertEquals(SYS, paths.type(gpu, nic), gpu + " " + nic);
                    assertEquals(Tri.NO, w.enabled());
                    assertEquals("distance", w.gate());
                }
                else if (own[gpu.dev()] == n)
                {
                    assertEquals(PIX, paths.type(gpu, nic));
                    assertEquals(Tri.UNKNOWN, w.enabled(), "nvidia-smi says nothing of GDR support");
                }
                else
                {
                    final TopoPath path = paths.path(gpu, nic);
                    assertEquals(PXN, path.type(), gpu + " " + nic);
                    assertEquals(paths.localGpu(nic), path.intermediate());
                    assertEquals(PIX, w.distance(), "PXN uses the relay GPU's distance");
                    assertEquals(Tri.UNKNOWN, w.enabled());
                }
            }
            for (final TopoNode other : system.gpus())
            {
                if (other != gpu)
                {
                    assertEquals(NVL, paths.type(gpu, other));
                }
            }
        }
        assertNull(paths.localGpu(system.nics().get(3)), "storage NIC3: no GPU picks it");
        assertNull(paths.localGpu(system.nics().get(4)), "storage NIC4: no GPU picks it");
        assertEquals(3, paths.localGpu(system.nics().get(5)).dev());
        // The read rule needs no compute capability here: every GPU has an NVLink peer.
        final TopoGdr.Decision r = read(paths, system.gpus().getFirst(), system.nics().getFirst());
        assertTrue(r.evidence().stream().anyMatch(e -> e.contains("NVLink peer (compute capability unknown")),
            r.evidence().toString());
        assertTrue(r.evidence().stream().noneMatch(e -> e.contains("cc 0")), r.evidence().toString());
    }

    /**
     * NCCL issue #1343's nvidia-smi output: 8 A40 in NVLink pairs (NV4), NIC0 PIX to GPU2 and GPU3, NIC1 to GPU6
     * and GPU7. NIC0's local GPU is GPU2 (both are PIX and equally wide; one NIC for two GPUs: both pick it, the
     * first wins). GPU3 is NVLink-connected to GPU2 but its own path is PIX and no narrower, so no PXN. GPU0 and
     * GPU1 are NODE (PHB) to NIC0 and not NVLink-connected to GPU2: PHB, GDR off. GPUs of the other socket: SYS.
     */
    @Test
    void nvidiaSmiA40Pairs()
    {
        final TopoSystem system = TopoFixtures.smi("real/nvidia-smi-nccl-issue-1343-a40.txt");
        final TopoPaths paths = PathComputer.compute(system);
        final PathType[][] expected = {
            { PHB, SYS }, { PHB, SYS }, { PIX, SYS }, { PIX, SYS },
            { SYS, PHB }, { SYS, PHB }, { SYS, PIX }, { SYS, PIX } };
        for (final TopoNode gpu : system.gpus())
        {
            for (final TopoNode nic : system.nics())
            {
                final PathType want = expected[gpu.dev()][nic.dev()];
                assertEquals(want, paths.type(gpu, nic), gpu + " " + nic);
                final TopoGdr.Decision r = read(paths, gpu, nic);
                assertEquals(want == PIX ? Tri.UNKNOWN : Tri.NO, r.enabled(), r.reason());
            }
        }
        assertEquals(2, paths.localGpu(system.nics().get(0)).dev());
        assertEquals(6, paths.localGpu(system.nics().get(1)).dev());
        assertEquals(NVL, paths.type(system.gpus().get(2), system.gpus().get(3)));
        assertEquals(PHB, paths.type(system.gpus().get(0), system.gpus().get(2)));
    }

    /**
     * An H200 host's nvidia-smi output from a public blog post: GPU k PIX to NIC k, NODE to the other NICs of its
     * socket, and a bonded NIC8 NODE to GPU0..3. NIC8's closest GPUs are GPU0..3 (PHB, as wide as the rest), but
     * each of those has its PIX NIC as its only local NIC, so no GPU picks NIC8: no local GPU, no PXN, PHB from
     * GPU0..3 and SYS from GPU4..7, GDR off by distance. A compute NIC is reached from every other GPU through its
     * PIX GPU over NVLink (the GPU's own path is PHB or SYS, farther than PXN).
     */
    @Test
    void nvidiaSmiH200WithABondedStorageNic()
    {
        final TopoSystem system = TopoFixtures.smi("real/nvidia-smi-h200-bond-storage.txt");
        assertEquals(8, system.gpus().size());
        assertEquals(9, system.nics().size());
        assertEquals("mlx5_bond_0", system.nics().get(8).id());
        assertEquals("mlx5_3", system.nics().get(1).id(), "names from the NIC legend");
        final TopoPaths paths = PathComputer.compute(system);
        final TopoNode bond = system.nics().get(8);
        assertNull(paths.localGpu(bond));
        for (final TopoNode gpu : system.gpus())
        {
            final int g = gpu.dev();
            assertEquals(g < 4 ? PHB : SYS, paths.type(gpu, bond), gpu.toString());
            assertEquals(Tri.NO, write(paths, gpu, bond).enabled());
            for (int n = 0; n < 8; n++)
            {
                final TopoNode nic = system.nics().get(n);
                assertEquals(n, paths.localGpu(nic).dev());
                assertEquals(n == g ? PIX : PXN, paths.type(gpu, nic), gpu + " " + nic);
            }
        }
        assertTrue(system.notes().stream().noneMatch(s -> s.contains("no NUMA affinity known")),
            "the shortened NUMA column is read: " + system.notes());
    }
}
