package io.gdrkit.gdr.topo;

import java.util.ArrayList;
import java.util.List;

/**
 * Computes the path type between every pair of nodes the way NCCL's ncclTopoComputePaths does (NCCL &gt;= 2.26).
 *
 * <ol>
 * <li>A breadth-first search from every CPU, GPU, NIC and NVSwitch. A path's type is the farthest of its steps:
 * a PCIe step is PIX, a step between two PCIe switches is PXB, a PCIe step touching a CPU or host bridge is PHB,
 * a CPU-CPU step is SYS, an NVLink step is NVL and becomes NVB when it continues through a GPU. Routing through
 * a GPU is allowed only as the single NVLink hop between two GPUs. A path is replaced when the new one has fewer
 * hops and more bandwidth (NCCL's exact rule).</li>
 * <li>GPUs on different hosts: NET. Unreachable on the same host: DIS.</li>
 * <li>P2C: when the GPU reaches its CPU over C2C and the CPU reaches the NIC over PHB, the GPU-NIC path is P2C
 * (if that is closer than what the search found).</li>
 * <li>PXN: for each NIC, take its local GPU (closest path type, then widest); another GPU uses it as relay when
 * the relay is PXB-or-closer to the NIC (P2C with NCCL_PXN_C2C), NVLink-connected to the GPU, on the same host,
 * and either has more bandwidth to the NIC or the GPU's own path is farther than PXN.</li>
 * <li>Optionally ({@link PathOptions#divertWithoutGdr()}), GPU-NIC pairs closer than PHB that can not use GDR
 * are routed through the GPU's CPU.</li>
 * </ol>
 * Not modelled: NCCL's diversion of GPU-GPU traffic through the CPU when P2P is disabled (it changes the route,
 * and the type only on C2C hosts), and the channel-based tie-break between equally close local GPUs (the lowest
 * GPU index wins here).
 */
public final class PathComputer
{
    private PathComputer()
    {
    }

    /**
     * @param system the topology.
     * @return paths with NCCL's default options.
     */
    public static TopoPaths compute(final TopoSystem system)
    {
        return compute(system, PathOptions.DEFAULTS);
    }

    /**
     * @param system  the topology.
     * @param options path settings.
     * @return the paths between every node and every CPU, GPU, NIC and NVSwitch.
     */
    public static TopoPaths compute(final TopoSystem system, final PathOptions options)
    {
        final int n = system.nodes().size();
        final Work[][] paths = new Work[n][n];
        for (int i = 0; i < n; i++)
        {
            for (int j = 0; j < n; j++)
            {
                paths[i][j] = new Work();
            }
        }
        for (final TopoNode base : system.nodes())
        {
            switch (base.type())
            {
                case CPU, GPU, NIC, NVS -> search(base, paths, options);
                default ->
                {
                }
            }
        }
        markNet(system, paths);
        applyP2c(system, paths);
        final TopoNode[] relay = new TopoNode[n * n];
        applyPxnAndGdr(system, paths, options, relay);

        final TopoPath[][] result = new TopoPath[n][n];
        for (final TopoNode from : system.nodes())
        {
            for (final TopoNode to : system.nodes())
            {
                final Work w = paths[from.index()][to.index()];
                result[from.index()][to.index()] = new TopoPath(
                    from, to, w.type, w.bw, List.copyOf(w.hops), relay[from.index() * n + to.index()]);
            }
        }
        return new TopoPaths(system, result, options);
    }

    // Mutable path while computing: the path from a node to a base node.
    private static final class Work
    {
        PathType type = PathType.DIS;
        double bw;
        int count;
        List<TopoNode> hops = List.of();
    }

    private static void search(final TopoNode base, final Work[][] paths, final PathOptions options)
    {
        final int b = base.index();
        final Work basePath = paths[b][b];
        basePath.type = PathType.LOC;
        basePath.bw = TopologyBuilder.LOC_BW;
        basePath.count = 0;

        List<TopoNode> frontier = List.of(base);
        while (!frontier.isEmpty())
        {
            final List<TopoNode> next = new ArrayList<>();
            for (final TopoNode node : frontier)
            {
                final Work path = paths[node.index()][b];
                for (final TopoLink link : node.links())
                {
                    final TopoNode rem = link.to();
                    // Only a GPU's single NVLink hop to another GPU may go through a GPU (NVB).
                    if (node != base && node.type() == NodeType.GPU &&
                        (options.nvbDisable() || link.type() != LinkType.NVL || rem.type() != NodeType.GPU ||
                            path.count > 1))
                    {
                        continue;
                    }
                    final Work remPath = paths[rem.index()][b];
                    final double bw = Math.min(path.bw, link.bandwidth());
                    if ((remPath.bw == 0 || remPath.count > path.count) && remPath.bw < bw)
                    {
                        final List<TopoNode> hops = new ArrayList<>(path.count + 1);
                        hops.add(node);
                        hops.addAll(path.hops);
                        remPath.hops = hops;
                        remPath.count = path.count + 1;
                        remPath.bw = bw;

                        PathType type = link.type().startType();
                        if (node.type() == NodeType.PCI && rem.type() == NodeType.PCI)
                        {
                            type = PathType.PXB;
                        }
                        if (link.type() == LinkType.PCI && (node.type().isHostSide() || rem.type().isHostSide()))
                        {
                            type = PathType.PHB;
                        }
                        if (node.type() == NodeType.GPU && path.type == PathType.NVL && type == PathType.NVL &&
                            remPath.count > 1)
                        {
                            type = PathType.NVB;
                        }
                        remPath.type = path.type.max(type);
                        if (!next.contains(rem))
                        {
                            next.add(rem);
                        }
                    }
                }
            }
            frontier = next;
        }
    }

    private static void markNet(final TopoSystem system, final Work[][] paths)
    {
        // NCCL marks peers it can reach neither by P2P nor SHM as NET; in a host model that means another host.
        for (final TopoNode a : system.gpus())
        {
            for (final TopoNode b : system.gpus())
            {
                if (a.systemId() != b.systemId())
                {
                    final Work w = paths[a.index()][b.index()];
                    w.type = PathType.NET;
                    w.hops = List.of();
                    w.bw = 0;
                    w.count = 0;
                }
            }
        }
    }

    private static void applyP2c(final TopoSystem system, final Work[][] paths)
    {
        for (final TopoNode nic : system.nics())
        {
            for (final TopoNode gpu : system.gpus())
            {
                final TopoNode cpu = localCpu(system, gpu, paths);
                if (cpu == null)
                {
                    continue;
                }
                final PathType merged = merge(
                    paths[gpu.index()][cpu.index()].type, paths[nic.index()][cpu.index()].type);
                if (merged == PathType.P2C)
                {
                    final Work g2n = paths[gpu.index()][nic.index()];
                    final Work n2g = paths[nic.index()][gpu.index()];
                    g2n.type = PathType.P2C.min(g2n.type);
                    n2g.type = PathType.P2C.min(n2g.type);
                }
            }
        }
    }

    private static void applyPxnAndGdr(
        final TopoSystem system, final Work[][] paths, final PathOptions options, final TopoNode[] relay)
    {
        final int n = system.nodes().size();
        for (final TopoNode nic : system.nics())
        {
            for (final TopoNode gpu : system.gpus())
            {
                if (!options.pxnDisable())
                {
                    final TopoNode peer = localGpu(system, nic, paths);
                    if (peer != null && peer != gpu)
                    {
                        final Work peerToNic = paths[peer.index()][nic.index()];
                        final Work gpuToNic = paths[gpu.index()][nic.index()];
                        final PathType pxnType = options.pxnC2c() ? PathType.P2C : PathType.PXB;
                        if (peerToNic.type.value() <= pxnType.value() &&
                            paths[peer.index()][gpu.index()].type.value() <= PathType.NVL.value() &&
                            peer.systemId() == gpu.systemId() &&
                            (peerToNic.bw > gpuToNic.bw || gpuToNic.type.value() > PathType.PXN.value()))
                        {
                            interStep(paths, peer, gpu, nic, PathType.PXN);
                            relay[gpu.index() * n + nic.index()] = peer;
                        }
                    }
                }
                if (options.divertWithoutGdr() &&
                    paths[gpu.index()][nic.index()].type.value() < PathType.PHB.value() &&
                    !gdrPossible(system, paths, gpu, nic, options, relay))
                {
                    final TopoNode cpu = localCpu(system, gpu, paths);
                    if (cpu != null)
                    {
                        interStep(paths, cpu, nic, gpu, null);
                        interStep(paths, cpu, gpu, nic, null);
                        relay[gpu.index() * n + nic.index()] = null;
                    }
                }
            }
        }
    }

    private static boolean gdrPossible(
        final TopoSystem system,
        final Work[][] paths,
        final TopoNode gpu,
        final TopoNode nic,
        final PathOptions options,
        final TopoNode[] relay)
    {
        if ("0".equals(gpu.attributes().get("gdr")) || "0".equals(nic.attributes().get("gdr")))
        {
            return false;
        }
        final TopoNode via = relay[gpu.index() * system.nodes().size() + nic.index()];
        PathType distance = paths[(via != null ? via : gpu).index()][nic.index()].type;
        if (options.netGdrC2c() && distance == PathType.P2C)
        {
            distance = PathType.C2C;
        }
        return options.gdrLevel().allows(distance);
    }

    // NCCL addInterStep: src -> inter, then inter -> dst; the type merges both halves, PXN when inter is a GPU.
    private static void interStep(
        final Work[][] paths, final TopoNode inter, final TopoNode src, final TopoNode dst, final PathType forced)
    {
        final Work first = paths[src.index()][inter.index()];
        final Work second = paths[inter.index()][dst.index()];
        final Work target = paths[src.index()][dst.index()];
        final List<TopoNode> hops = new ArrayList<>(first.hops);
        hops.addAll(second.hops);
        target.hops = hops;
        target.count = hops.size();
        target.type = forced != null ? forced : merge(first.type, second.type);
        target.bw = Math.min(first.bw, second.bw);
    }

    // NCCL mergePathType: C2C then PHB is P2C, otherwise the farther type.
    static PathType merge(final PathType a, final PathType b)
    {
        final PathType max = a.max(b);
        final PathType min = a.min(b);
        return max == PathType.PHB && min == PathType.C2C ? PathType.P2C : max;
    }

    // NCCL ncclGetLocalCpu: the CPU with the fewest hops from the GPU.
    private static TopoNode localCpu(final TopoSystem system, final TopoNode gpu, final Work[][] paths)
    {
        TopoNode best = null;
        int minHops = 0;
        for (final TopoNode cpu : system.cpus())
        {
            final int hops = paths[gpu.index()][cpu.index()].count;
            if (hops > 0 && (minHops == 0 || hops < minHops))
            {
                best = cpu;
                minHops = hops;
            }
        }
        return best;
    }

    // NCCL ncclTopoGetLocal(NET, GPU): closest path type from the NIC, then widest; ties go to the lowest index.
    private static TopoNode localGpu(final TopoSystem system, final TopoNode nic, final Work[][] paths)
    {
        TopoNode best = null;
        PathType minType = PathType.DIS;
        double maxBw = 0;
        for (final TopoNode gpu : system.gpus())
        {
            final Work w = paths[nic.index()][gpu.index()];
            if (w.type.value() < minType.value() || (w.type == minType && w.bw > maxBw))
            {
                minType = w.type;
                maxBw = w.bw;
                best = gpu;
            }
        }
        return minType == PathType.DIS ? null : best;
    }
}
