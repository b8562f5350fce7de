/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

import io.gdrkit.gdr.topo.GdrDistanceCheck;
import io.gdrkit.gdr.topo.GdrLevel;
import io.gdrkit.gdr.topo.PathComputer;
import io.gdrkit.gdr.topo.TopoNode;
import io.gdrkit.gdr.topo.TopoPath;
import io.gdrkit.gdr.topo.TopoPaths;
import io.gdrkit.gdr.topo.TopoSystem;
import io.gdrkit.gdr.topo.TopologyBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What topology costs on the simulated host: the GPU and the NIC under one PCIe switch (the simulated host's
 * layout) against the NIC under the other socket. The path engine ({@link PathComputer}) gives each placement's path
 * type, its narrowest link from the simulated host's link parameters ({@link TopologyBuilder#PCI_BW},
 * {@link TopologyBuilder#SYS_BW}, NCCL's figures, not measured) and NCCL's GDR distance decision at the default
 * level. The data path that follows (GPUDirect when allowed, host staging otherwise) is priced with the fitted
 * {@link CrossoverModel}, its per-byte time floored by the path's narrowest link. Only the crossover part is fitted
 * and checked against a held-back measurement; no cross-socket measurement exists (the simulated host and the
 * machines measured have one socket between NIC and GPU), so the topology part's error is unknown.
 *
 * @param placements same switch first, then across sockets
 * @param crossover  the fitted per-path model that prices each placement
 * @param sizes      the sizes priced
 */
public record TopologyCostModel(List<Placement> placements, CrossoverModel crossover, List<Long> sizes) {
    /**
     * @param name       "same switch" or "across sockets"
     * @param path       the GPU-to-NIC path (type, hops, narrowest link)
     * @param gdr        NCCL's distance decision at the default level
     * @param dataPath   "gdr" when allowed, else "bounce"
     * @param mibS       predicted MiB/s at each of {@link #sizes()}
     * @param linkBinds  the narrowest link is slower than the fitted path's streaming rate, so it sets the price
     */
    public record Placement(String name, TopoPath path, GdrDistanceCheck gdr, String dataPath, List<Double> mibS,
                            boolean linkBinds) {
    }

    /** @param gpuSm the GPU's compute capability as NCCL's sm attribute (90 for an H200) */
    public static TopologyCostModel of(final CrossoverModel crossover, final int gpuSm, final List<Long> sizes) {
        final List<Placement> out = new ArrayList<>();
        for (final boolean cross : new boolean[] {false, true}) {
            final TopologyBuilder b = new TopologyBuilder().source("the simulated host's topology"
                + (cross ? ", NIC moved under a second socket" : "") + " (made-up bus ids, simulated)");
            final TopoNode cpu0 = b.cpu(0);
            final TopoNode sw0 = b.pciSwitch("0000:10:00.0", b.hostBridge("pci0000:00", cpu0));
            b.gpu("0000:11:00.0", sw0, TopologyBuilder.PCI_BW, Map.of("sm", Integer.toString(gpuSm), "gdr", "1"));
            if (cross) {
                final TopoNode cpu1 = b.cpu(1);
                final TopoNode sw1 = b.pciSwitch("0000:90:00.0", b.hostBridge("pci0000:80", cpu1));
                b.nic("soft0", "0000:92:00.0", sw1);
            } else {
                b.nic("soft0", "0000:12:00.0", sw0);
            }
            final TopoSystem sys = b.build();
            final TopoPaths paths = PathComputer.compute(sys);
            final TopoNode gpu = sys.gpus().get(0);
            final TopoNode nic = sys.nics().get(0);
            final TopoPath p = paths.path(gpu, nic);
            final GdrDistanceCheck check = paths.gdrDistance(gpu, nic, GdrLevel.DEFAULT);
            final CrossoverModel.Path priced = check.allowed() ? crossover.gdr() : crossover.bounce();
            final double linkBytesPerS = p.bandwidth() * 1e9;
            final List<Double> mib = new ArrayList<>();
            for (final long s : sizes) {
                final double perByte = Math.max(priced.fit().coefficients()[1], 1 / linkBytesPerS);
                final double t = priced.alphaSeconds() + s * perByte;
                mib.add(s / t / (1 << 20));
            }
            out.add(new Placement(cross ? "across sockets" : "same switch", p, check,
                check.allowed() ? "gdr" : "bounce", mib, 1 / linkBytesPerS > priced.fit().coefficients()[1]));
        }
        return new TopologyCostModel(out, crossover, List.copyOf(sizes));
    }
}
