/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link TopoGdrPairs} decides once per class of pair; its decisions must equal {@link TopoGdr#decide}'s, field by
 * field and byte by byte in the reason and the evidence, for every pair, under every setting that changes a gate.
 */
class TopoGdrPairsTest
{
    private static final List<GdrLevel> LEVELS = List.of(GdrLevel.DEFAULT, GdrLevel.parse("LOC", "level"),
        GdrLevel.parse("PIX", "level"), GdrLevel.parse("PHB", "level"), GdrLevel.parse("SYS", "level"));

    private static final List<PathOptions> OPTIONS = List.of(PathOptions.DEFAULTS,
        PathOptions.DEFAULTS.withPxnDisable(true), PathOptions.DEFAULTS.withGdrRead(0),
        PathOptions.DEFAULTS.withGdrRead(1), PathOptions.DEFAULTS.withNetGdrC2c(false),
        PathOptions.DEFAULTS.withIbHca(IbHcaFilter.parse("^mlx5_0")),
        PathOptions.DEFAULTS.withIbHca(IbHcaFilter.parse("mlx5_1,mlx5_2")),
        PathOptions.DEFAULTS.withNvbDisable(true).withPxnC2c(true));

    /** Every pair, both directions, every level: the straightforward per-pair decision and the classed one. */
    private static int compareAll(final TopoSystem system, final PathOptions options)
    {
        final TopoPaths paths = PathComputer.compute(system, options);
        int compared = 0;
        for (final GdrLevel level : LEVELS)
        {
            final TopoGdrPairs pairs = new TopoGdrPairs(paths, level, options.gdrRead());
            for (final TopoNode gpu : system.gpus())
            {
                for (final TopoNode nic : system.nics())
                {
                    for (final boolean read : new boolean[] { false, true })
                    {
                        final TopoGdr.Decision want = TopoGdr.decide(paths, gpu, nic, read, level,
                            options.gdrRead());
                        final TopoGdr.Decision got = pairs.decide(gpu, nic, read);
                        assertEquals(want, got, gpu + " " + nic + " read=" + read + " " + level + " " + options);
                        assertEquals(want.reason(), got.reason());
                        assertEquals(want.evidence(), got.evidence());
                        compared++;
                    }
                }
            }
        }
        return compared;
    }

    @Test
    void everyFixtureUnderEverySetting()
    {
        final List<TopoSystem> systems = List.of(TopoFixtures.xml("dgx-8gpu-4nic.xml"),
            TopoFixtures.xml("gh200-c2c.xml"), TopoFixtures.xml("pxn-box.xml"), TopoFixtures.xml("two-socket-pcie.xml"),
            TopoFixtures.xml("real/aws-p4d-24xl-topo.xml"), TopoFixtures.xml("real/aws-p5.48xl-topo.xml"),
            TopoFixtures.xml("real/azure-ndv4-topo.xml"), TopoFixtures.xml("real/nccl-issue-392-width0.xml"),
            TopoFixtures.xml("real/nccl-tests-issue-256-h200-nvswitch.xml"), TopoFixtures.smi("nvidia-smi-dgx.txt"),
            TopoFixtures.smi("nvidia-smi-two-socket.txt"), TopoFixtures.smi("real/nvidia-smi-h200-bond-storage.txt"),
            TopoFixtures.smi("real/nvidia-smi-nccl-issue-1264-h100.txt"),
            TopoFixtures.smi("real/nvidia-smi-nccl-issue-1343-a40.txt"));
        int compared = 0;
        for (final TopoSystem system : systems)
        {
            for (final PathOptions options : OPTIONS)
            {
                compared += compareAll(system, options);
            }
        }
        assertTrue(compared > 10_000, compared + " decisions compared");
    }

    /**
     * A generated host (16 GPUs, 800 NICs, seeded) whose devices differ: some NICs say gdr="0" or nothing, some
     * GPUs are sm 70 or say nothing of GDR, so every gate is open, closed and unknown somewhere.
     */
    @Test
    void aMixedGeneratedHostPairByPair()
    {
        final Random random = new Random(34);
        String xml = TopoScaleTest.manyNics(16, 800);
        for (int gpu = 0; gpu < 16; gpu++)
        {
            final String from = "<gpu dev=\"" + gpu + "\" sm=\"90\" rank=\"" + gpu + "\" gdr=\"1\"/>";
            final String to = switch (random.nextInt(4))
            {
                case 0 -> "<gpu dev=\"" + gpu + "\" sm=\"70\" rank=\"" + gpu + "\" gdr=\"1\"/>";
                case 1 -> "<gpu dev=\"" + gpu + "\" rank=\"" + gpu + "\"/>";
                case 2 -> "<gpu dev=\"" + gpu + "\" sm=\"90\" rank=\"" + gpu + "\" gdr=\"0\"/>";
                default -> from;
            };
            xml = xml.replace(from, to);
        }
        final StringBuilder sb = new StringBuilder();
        int at = 0;
        for (int nic = 0; nic < 800; nic++)
        {
            final String net = "<net name=\"mlx5_" + nic + "\" dev=\"" + nic + "\" speed=\"400000\" gdr=\"1\"/>";
            final int i = xml.indexOf(net, at);
            sb.append(xml, at, i);
            sb.append(switch (random.nextInt(6))
            {
                case 0 -> net.replace("gdr=\"1\"", "gdr=\"0\"");
                case 1 -> net.replace(" gdr=\"1\"", "");
                case 2 -> net.replace("400000", "100000");
                default -> net;
            });
            at = i + net.length();
        }
        sb.append(xml, at, xml.length());
        final TopoSystem system = NcclTopoXmlReader.parse(sb.toString(), "mixed.xml");
        assertEquals(2 * 5 * 16 * 800 * 3, compareAll(system, PathOptions.DEFAULTS) +
            compareAll(system, PathOptions.DEFAULTS.withGdrRead(0)) +
            compareAll(system, PathOptions.DEFAULTS.withIbHca(IbHcaFilter.parse("^mlx5_1"))));
    }

    /**
     * The scale shape (one switch per GPU, many NICs each): few classes for many pairs. The file lists no NVLink, so
     * a pair whose NIC has a local GPU may be relayed by it (unknown); such reasons name both GPUs, so those classes
     * are per GPU and relay: at most 16 x 16 per direction, and a handful more.
     */
    @Test
    void aLargeHostHasFewClasses()
    {
        final TopoSystem system = NcclTopoXmlReader.parse(TopoScaleTest.manyNics(16, 1600), "16x1600.xml");
        final TopoPaths paths = PathComputer.compute(system);
        final TopoGdrPairs pairs = new TopoGdrPairs(paths, GdrLevel.DEFAULT, -1);
        for (final TopoNode gpu : system.gpus())
        {
            for (final TopoNode nic : system.nics())
            {
                for (final boolean read : new boolean[] { false, true })
                {
                    assertEquals(TopoGdr.decide(paths, gpu, nic, read, GdrLevel.DEFAULT, -1),
                        pairs.decide(gpu, nic, read));
                }
            }
        }
        assertTrue(pairs.classes() < 2 * 16 * 16 + 50, pairs.classes() + " classes for " + 16 * 1600 * 2 + " decisions");
    }
}
