/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Computes path types the way NCCL 2.30's ncclTopoComputePaths does (graph/paths.cc), between CPUs, GPUs and NICs.
 *
 * <ol>
 * <li>A breadth-first search towards every CPU, GPU and NIC. A path's type is the farthest of its steps: a PCIe step
 * is PIX, a step between two PCIe switches is PXB, a PCIe step touching a CPU or host bridge is PHB, a CPU-CPU step
 * is SYS, an NVLink step is NVL and becomes NVB when it continues through a GPU. A path may pass through a GPU only
 * as the single NVLink hop between two GPUs. A path is replaced when the new one has fewer hops and more bandwidth
 * (NCCL's rule, so of two equally short paths the first found is kept unless the later one is wider).</li>
 * <li>GPUs on different hosts: NET. Unreachable on the same host: DIS.</li>
 * <li>P2C: for each GPU and each of its local NICs (see below), when the GPU reaches its CPU over C2C and the NIC
 * reaches that CPU over PHB, the pair is P2C.</li>
 * <li>PXN: a NIC's local GPU (NCCL's ncclTopoGetLocalGpu: the GPU among the NIC's closest that picks this NIC on
 * some channel; none for a NIC that no GPU picks, such as a storage NIC) relays for another GPU when it is P2C or
 * closer to the NIC (PXB without NCCL_PXN_C2C), GDR read is possible for it, it is NVLink-connected to the GPU on
 * the same host, and it has more bandwidth to the NIC or the GPU's own path is farther than PXN.</li>
 * <li>Optionally ({@link PathOptions#divertWithoutGdr()}), a GPU-NIC pair closer than PHB that can not use GDR is
 * routed through the GPU's CPU.</li>
 * </ol>
 * "Closest" is NCCL's ncclTopoGetLocal: the widest paths, then among them the closest type. A GPU's or NIC's GDR
 * support that the source does not give is treated as supported here (paths only; the GDR decision says unknown).
 * Not modelled: NCCL's diversion of GPU-GPU traffic through the CPU when P2P is disabled.
 *
 * <p>Paths are kept only from CPUs, GPUs and NICs towards CPUs, GPUs and NICs, and between two NICs only up to 1,024
 * NICs, so that a file with 10,000 NICs needs memory in proportion to NICs x (GPUs + CPUs).
 */
public final class PathComputer
{
    // NCCL's MAXCHANNELS: ncclTopoGetLocalGpu tries this many channels.
    private static final int MAX_CHANNELS = 64;
    // NIC-to-NIC paths (only the nvidia-smi matrix check needs them) are kept up to this many NICs.
    static final int NIC_PAIRS_UP_TO = 1024;

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
     * @return the paths between CPUs, GPUs and NICs.
     */
    public static TopoPaths compute(final TopoSystem system, final PathOptions options)
    {
        return new Run(system, options).run();
    }

    // Mutable path while computing.
    static final class Work
    {
        PathType type = PathType.DIS;
        double bw;
        int count;
        TopoNode relay;
        private List<TopoNode> hops = List.of();
        // Hops not yet listed: a search's predecessor array, the node the path starts from and, for a NIC that
        // copies its twin's path, the node that replaces the last hop. Listing 1.3 million paths' hops eagerly is
        // most of a 64-GPU, 10,000-NIC host's path time, and only a few are ever read.
        private int[] pred;
        private List<TopoNode> nodes;
        private int from;
        private TopoNode last;

        List<TopoNode> hops()
        {
            if (pred != null)
            {
                final List<TopoNode> list = new ArrayList<>(count);
                for (int at = pred[from]; at >= 0; at = pred[at])
                {
                    list.add(nodes.get(at));
                }
                if (last != null && !list.isEmpty())
                {
                    list.set(list.size() - 1, last);
                }
                hops = list;
                pred = null;
                nodes = null;
                last = null;
            }
            return hops;
        }

        void hops(final List<TopoNode> list)
        {
            hops = list;
            pred = null;
            nodes = null;
            last = null;
        }
    }

    /**
     * The kept paths, one array row per source: CPUs and GPUs come first, then NICs, so a lookup is two array reads
     * instead of a hash probe (1.3 million paths on a 64-GPU, 10,000-NIC host). A NIC's row holds its paths to CPUs
     * and GPUs, and to other NICs only up to {@link #NIC_PAIRS_UP_TO} NICs.
     */
    static final class Table
    {
        private final int[] slot;
        private final int sources;
        private final int ends;
        private final boolean nicPairs;
        private final Work[][] rows;

        Table(final TopoSystem system)
        {
            final List<TopoNode> nodes = system.nodes();
            slot = new int[nodes.size()];
            Arrays.fill(slot, -1);
            int next = 0;
            for (final TopoNode node : nodes)
            {
                if (node.type() == NodeType.CPU || node.type() == NodeType.GPU)
                {
                    slot[node.index()] = next++;
                }
            }
            sources = next;
            for (final TopoNode node : nodes)
            {
                if (node.type() == NodeType.NIC)
                {
                    slot[node.index()] = next++;
                }
            }
            ends = next;
            nicPairs = system.nics().size() <= NIC_PAIRS_UP_TO;
            rows = new Work[ends][];
        }

        Work get(final TopoNode from, final TopoNode to)
        {
            final int f = slot[from.index()];
            final int t = column(f, slot[to.index()]);
            if (f < 0 || t < 0)
            {
                return null;
            }
            final Work[] row = rows[f];
            return row == null || t >= row.length ? null : row[t];
        }

        // past NIC_PAIRS_UP_TO, a NIC's row keeps only the NIC itself after the CPUs and GPUs
        private int column(final int f, final int t)
        {
            if (nicPairs || f < sources || t < sources)
            {
                return t;
            }
            return t == f ? sources : -1;
        }

        Work work(final TopoNode from, final TopoNode to)
        {
            final int f = slot[from.index()];
            final int t = column(f, slot[to.index()]);
            if (f < 0 || t < 0)
            {
                throw new IllegalArgumentException("no path is kept from " + from + " to " + to);
            }
            Work[] row = rows[f];
            if (row == null)
            {
                row = new Work[f < sources || nicPairs ? ends : sources + 1];
                rows[f] = row;
            }
            Work w = row[t];
            if (w == null)
            {
                w = new Work();
                row[t] = w;
            }
            return w;
        }
    }

    private static final class Run
    {
        private final TopoSystem system;
        private final PathOptions options;
        private final List<TopoNode> nodes;
        private final int n;
        private final Table paths;
        private final double[] netBw;
        // BFS scratch, reused for every base.
        private final PathType[] type;
        private final double[] bw;
        private final int[] count;
        private final int[] pred;
        private final int[] queued;
        private int stamp;
        private final List<TopoNode> sources = new ArrayList<>();
        private int nicToGpuVersion;
        // bumped whenever a GPU-to-NIC path changes: localGpu's cache is valid while neither version moves
        private int gpuToNicVersion;
        private final Map<TopoNode, TopoNode> localGpuCache = new HashMap<>();
        private int localGpuCacheNic = -1;
        private int localGpuCacheGpu = -1;
        // ncclTopoGetLocal(GPU g -> NET), kept up to date as paths change.
        private final Map<TopoNode, LocalSet> localNets = new HashMap<>();
        private final Map<TopoNode, TopoNode> deviceOf = new HashMap<>();

        Run(final TopoSystem system, final PathOptions options)
        {
            this.system = system;
            this.options = options;
            this.nodes = system.nodes();
            this.n = nodes.size();
            this.paths = new Table(system);
            this.netBw = new double[n];
            this.type = new PathType[n];
            this.bw = new double[n];
            this.count = new int[n];
            this.pred = new int[n];
            this.queued = new int[n];
            for (final TopoNode node : nodes)
            {
                netBw[node.index()] = node.type() == NodeType.NIC ? netBandwidth(node) : TopologyBuilder.LOC_BW;
                if (node.type() == NodeType.GPU)
                {
                    for (final TopoLink l : node.links())
                    {
                        if (l.type() == LinkType.LOC && l.to().type() == NodeType.DEV)
                        {
                            deviceOf.put(node, l.to());
                        }
                    }
                }
            }
        }

        TopoPaths run()
        {
            // NICs that hang by one link of the same kind and width from the same node, with the same NET width, have
            // the same search from the second round on: their paths from GPUs and CPUs differ only in the last hop.
            // One search per such group (exact, not an approximation) is what makes 10,000 NICs cheap.
            final Map<String, TopoNode> leafGroups = new HashMap<>();
            sources.addAll(system.cpus());
            sources.addAll(system.gpus());
            for (final TopoNode base : nodes)
            {
                if (base.type() == NodeType.CPU || base.type() == NodeType.GPU)
                {
                    search(base);
                }
                else if (base.type() == NodeType.NIC)
                {
                    final boolean keepNicPairs = system.nics().size() <= NIC_PAIRS_UP_TO;
                    final String group = !keepNicPairs && base.links().size() == 1 ? leafKey(base) : null;
                    final TopoNode twin = group == null ? null : leafGroups.get(group);
                    if (twin != null)
                    {
                        copyFromTwin(twin, base);
                    }
                    else
                    {
                        search(base);
                        if (group != null)
                        {
                            leafGroups.put(group, base);
                        }
                    }
                }
            }
            markNet();
            applyP2c();
            applyPxnAndGdr();
            final Map<TopoNode, TopoNode> localGpu = new HashMap<>();
            for (final TopoNode nic : system.nics())
            {
                localGpu.put(nic, localGpu(nic));
            }
            return new TopoPaths(system, paths, options, localGpu);
        }

        private String leafKey(final TopoNode nic)
        {
            final TopoLink up = nic.links().getFirst();
            return up.to().index() + "/" + up.type() + "/" + up.bandwidth() + "/" + netBw[nic.index()];
        }

        private void copyFromTwin(final TopoNode twin, final TopoNode base)
        {
            for (final TopoNode from : sources)
            {
                final Work src = paths.get(from, twin);
                final Work w = work(from, base);
                w.type = src.type;
                w.bw = src.bw;
                w.count = src.count;
                if (src.pred != null)
                {
                    w.pred = src.pred;
                    w.nodes = src.nodes;
                    w.from = src.from;
                    w.last = base;
                }
                else if (!src.hops.isEmpty())
                {
                    final List<TopoNode> hops = new ArrayList<>(src.hops);
                    hops.set(hops.size() - 1, base);
                    w.hops(hops);
                }
            }
            final Work self = work(base, base);
            self.type = PathType.LOC;
            self.bw = netBw[base.index()];
        }

        private static double netBandwidth(final TopoNode nic)
        {
            // A NIC read from <net> carries NCCL's NET link: speed in Mb/s, 10 Gb/s when unset or <= 0 (topo.cc).
            if (!nic.attributes().containsKey("#net"))
            {
                return TopologyBuilder.LOC_BW;
            }
            int mbps = nic.intAttribute("speed", 0);
            if (mbps <= 0)
            {
                mbps = 10000;
            }
            return mbps / 8000.0;
        }

        private boolean devLike(final TopoNode node)
        {
            return node.type() == NodeType.DEV || (node.type() == NodeType.GPU && !deviceOf.containsKey(node));
        }

        private boolean stored(final TopoNode from, final TopoNode base)
        {
            final NodeType f = from.type();
            if (f != NodeType.CPU && f != NodeType.GPU && f != NodeType.NIC)
            {
                return false;
            }
            return !(f == NodeType.NIC && base.type() == NodeType.NIC) || system.nics().size() <= NIC_PAIRS_UP_TO;
        }

        Work work(final TopoNode from, final TopoNode to)
        {
            return paths.work(from, to);
        }

        // NCCL ncclTopoSetPaths: breadth-first from the base over every link, NCCL's replacement rule.
        private void search(final TopoNode base)
        {
            Arrays.fill(type, PathType.DIS);
            Arrays.fill(bw, 0);
            Arrays.fill(count, 0);
            Arrays.fill(pred, -1);
            final int b = base.index();
            type[b] = PathType.LOC;
            bw[b] = netBw[b];
            final TopoNode baseDev = deviceOf.getOrDefault(base, base);
            final int maxLength = deviceOf.containsKey(base) ? 2 : 1;
            List<TopoNode> frontier = List.of(base);
            while (!frontier.isEmpty())
            {
                stamp++;
                final List<TopoNode> next = new ArrayList<>();
                for (final TopoNode node : frontier)
                {
                    final int i = node.index();
                    for (final TopoLink link : node.links())
                    {
                        final TopoNode rem = link.to();
                        final int r = rem.index();
                        if (node != baseDev && devLike(node) &&
                            !(node.type() == NodeType.DEV && link.type() == LinkType.LOC &&
                                rem.type() == NodeType.GPU) &&
                            (options.nvbDisable() || link.type() != LinkType.NVL || !devLike(rem) ||
                                count[i] > maxLength))
                        {
                            continue;
                        }
                        final double nbw = Math.min(bw[i], link.bandwidth());
                        if ((bw[r] == 0 || count[r] > count[i]) && bw[r] < nbw)
                        {
                            pred[r] = i;
                            count[r] = count[i] + 1;
                            bw[r] = nbw;
                            PathType t = link.type().startType();
                            if (node.type() == NodeType.PCI && rem.type() == NodeType.PCI)
                            {
                                t = PathType.PXB;
                            }
                            if (link.type() == LinkType.PCI && (node.type().isHostSide() || rem.type().isHostSide()))
                            {
                                t = PathType.PHB;
                            }
                            if (devLike(node) && type[i] == PathType.NVL && t == PathType.NVL &&
                                count[r] > maxLength)
                            {
                                t = PathType.NVB;
                            }
                            type[r] = type[i].max(t);
                            if (queued[r] != stamp)
                            {
                                queued[r] = stamp;
                                next.add(rem);
                            }
                        }
                    }
                }
                frontier = next;
            }
            int[] tree = null;
            for (final TopoNode from : nodes)
            {
                if (!stored(from, base))
                {
                    continue;
                }
                final int f = from.index();
                final Work w = work(from, base);
                w.type = type[f];
                // A NIC source is NCCL's NET node: its NET link bounds the path's bandwidth.
                w.bw = from == base ? netBw[f] : Math.min(bw[f], netBw[f]);
                w.count = count[f];
                if (from != base && type[f] != PathType.DIS)
                {
                    if (tree == null)
                    {
                        tree = Arrays.copyOf(pred, pred.length);
                    }
                    w.hops(List.of());
                    w.pred = tree;
                    w.nodes = nodes;
                    w.from = f;
                }
            }
        }

        private void markNet()
        {
            // NCCL marks peers it can reach neither by P2P nor SHM as NET; in a host model that means another host.
            for (final TopoNode a : system.gpus())
            {
                for (final TopoNode c : system.gpus())
                {
                    if (a.systemId() != c.systemId())
                    {
                        final Work w = work(a, c);
                        w.type = PathType.NET;
                        w.hops(List.of());
                        w.bw = 0;
                        w.count = 0;
                    }
                }
            }
        }

        // P2C is only set for the GPU's local NICs (2.30); other NICs are left to PXN.
        private void applyP2c()
        {
            for (final TopoNode gpu : system.gpus())
            {
                final TopoNode cpu = localCpu(gpu);
                if (cpu == null)
                {
                    continue;
                }
                for (final int idx : locals(gpu).array())
                {
                    final TopoNode nic = system.nics().get(idx);
                    if (merge(work(gpu, cpu).type, work(nic, cpu).type) == PathType.P2C)
                    {
                        final Work g2n = work(gpu, nic);
                        setType(gpu, nic, g2n, PathType.P2C.min(g2n.type), g2n.bw);
                        final Work n2g = work(nic, gpu);
                        n2g.type = PathType.P2C.min(n2g.type);
                        nicToGpuVersion++;
                    }
                }
            }
        }

        private void applyPxnAndGdr()
        {
            for (final TopoNode nic : system.nics())
            {
                for (final TopoNode gpu : system.gpus())
                {
                    if (!options.pxnDisable())
                    {
                        final TopoNode peer = localGpu(nic);
                        if (peer != null && peer != gpu)
                        {
                            final Work peerToNic = work(peer, nic);
                            final Work gpuToNic = work(gpu, nic);
                            final PathType pxnType = options.pxnC2c() ? PathType.P2C : PathType.PXB;
                            if (peerToNic.type.value() <= pxnType.value() && gdrPossible(peer, nic, true) &&
                                work(peer, gpu).type.value() <= PathType.NVL.value() &&
                                peer.systemId() == gpu.systemId() &&
                                (peerToNic.bw > gpuToNic.bw || gpuToNic.type.value() > PathType.PXN.value()))
                            {
                                interStep(peer, gpu, nic, PathType.PXN);
                                work(gpu, nic).relay = peer;
                            }
                        }
                    }
                    if (options.divertWithoutGdr() && work(gpu, nic).type.value() < PathType.PHB.value() &&
                        !gdrPossible(gpu, nic, false))
                    {
                        final TopoNode cpu = localCpu(gpu);
                        if (cpu != null)
                        {
                            interStep(cpu, nic, gpu, null);
                            interStep(cpu, gpu, nic, null);
                            work(gpu, nic).relay = null;
                        }
                    }
                }
            }
        }

        // ncclTopoCheckGdr as far as the topology knows; unknown support counts as supported.
        private boolean gdrPossible(final TopoNode gpu, final TopoNode nic, final boolean read)
        {
            if ("0".equals(gpu.attributes().get("gdr")) || TopoGdr.nicSupport(nic).value() == TopoGdr.Tri.NO)
            {
                return false;
            }
            if (read && options.gdrRead() == 0)
            {
                return false;
            }
            if (read && options.gdrRead() < 0 && gpu.attributes().containsKey("sm") &&
                gpu.intAttribute("sm", 0) < 80 && !hasNvlinkPeer(gpu) && system.gpus().size() > 1)
            {
                return false;
            }
            final Work path = work(gpu, nic);
            final TopoNode via = path.type == PathType.PXN && path.relay != null ? path.relay : gpu;
            return effectiveLevel(options).value() >= work(via, nic).type.value();
        }

        private boolean hasNvlinkPeer(final TopoNode gpu)
        {
            for (final TopoNode other : system.gpus())
            {
                if (other != gpu && work(gpu, other).type == PathType.NVL)
                {
                    return true;
                }
            }
            return false;
        }

        // NCCL addInterStep: src -> inter, then inter -> dst; the type merges both halves, PXN when inter is a GPU.
        private void interStep(final TopoNode inter, final TopoNode src, final TopoNode dst, final PathType forced)
        {
            final Work first = work(src, inter);
            final Work second = work(inter, dst);
            final Work target = work(src, dst);
            final List<TopoNode> hops = new ArrayList<>(first.hops());
            hops.addAll(second.hops());
            target.hops(hops);
            target.count = hops.size();
            final PathType t = forced != null ? forced : merge(first.type, second.type);
            if (src.type() == NodeType.NIC)
            {
                nicToGpuVersion++;
            }
            setType(src, dst, target, t, Math.min(first.bw, second.bw));
        }

        private void setType(final TopoNode src, final TopoNode dst, final Work w, final PathType t, final double b)
        {
            final PathType oldType = w.type;
            final double oldBw = w.bw;
            w.type = t;
            w.bw = b;
            if (src.type() == NodeType.GPU && dst.type() == NodeType.NIC && (oldType != t || oldBw != b))
            {
                gpuToNicVersion++;
                final LocalSet set = localNets.get(src);
                if (set != null)
                {
                    set.update(dst.typeIndex(), oldType, oldBw, t, b);
                }
            }
        }

        // NCCL ncclGetLocalCpu: the CPU with the fewest hops from the GPU.
        private TopoNode localCpu(final TopoNode gpu)
        {
            TopoNode best = null;
            int minHops = 0;
            for (final TopoNode cpu : system.cpus())
            {
                final int hops = work(gpu, cpu).count;
                if (hops > 0 && (minHops == 0 || hops < minHops))
                {
                    best = cpu;
                    minHops = hops;
                }
            }
            return best;
        }

        private LocalSet locals(final TopoNode gpu)
        {
            LocalSet set = localNets.get(gpu);
            if (set == null)
            {
                set = new LocalSet(gpu);
                localNets.put(gpu, set);
            }
            return set;
        }

        // NCCL ncclTopoGetLocal(NET n -> GPU): widest, then closest; in GPU order.
        private List<TopoNode> localGpusOf(final TopoNode nic)
        {
            PathType minType = PathType.DIS;
            double maxBw = 0;
            final List<TopoNode> result = new ArrayList<>();
            for (final TopoNode gpu : system.gpus())
            {
                final Work w = work(nic, gpu);
                if (w.bw > maxBw || (w.bw == maxBw && w.type.value() < minType.value()))
                {
                    maxBw = w.bw;
                    minType = w.type;
                    result.clear();
                }
                if (w.bw == maxBw && w.type == minType && w.bw > 0)
                {
                    result.add(gpu);
                }
            }
            return result;
        }

        // NCCL ncclTopoGetLocalNet (NETDEVS_POLICY AUTO): the NIC a GPU uses on a channel; null when it has none.
        private TopoNode localNet(final TopoNode gpu, final int channel)
        {
            final int[] nets = locals(gpu).array();
            if (nets.length == 0)
            {
                return null;
            }
            final int localGpuCount = locals(gpu).localGpuCount(nets[0]);
            final int netsPerGpu = (nets.length + localGpuCount - 1) / localGpuCount;
            int net = gpu.dev() % localGpuCount;
            if (Integer.bitCount(nets.length) == 1)
            {
                net = mirrorBits(net, nets.length);
            }
            net += channel % netsPerGpu;
            return system.nics().get(nets[net % nets.length]);
        }

        // NCCL ncclTopoGetLocalGpu: the first of the NIC's closest GPUs that picks this NIC on some channel.
        private TopoNode localGpu(final TopoNode nic)
        {
            if (localGpuCacheNic != nicToGpuVersion || localGpuCacheGpu != gpuToNicVersion)
            {
                localGpuCache.clear();
                localGpuCacheNic = nicToGpuVersion;
                localGpuCacheGpu = gpuToNicVersion;
            }
            if (localGpuCache.containsKey(nic))
            {
                return localGpuCache.get(nic);
            }
            final TopoNode gpu = computeLocalGpu(nic);
            localGpuCache.put(nic, gpu);
            return gpu;
        }

        private TopoNode computeLocalGpu(final TopoNode nic)
        {
            if (!options.ibHca().accepts(nic))
            {
                return null;
            }
            final List<TopoNode> candidates = localGpusOf(nic);
            for (int c = 0; c < MAX_CHANNELS; c++)
            {
                for (final TopoNode gpu : candidates)
                {
                    if (localNet(gpu, c) == nic)
                    {
                        return gpu;
                    }
                }
            }
            return null;
        }

        // ncclTopoGetLocal(GPU g -> NET), updated in place when one of g's NIC paths changes.
        private final class LocalSet
        {
            private final TopoNode gpu;
            private final TreeSet<Integer> members = new TreeSet<>();
            private PathType minType;
            private double maxBw;
            private int[] array;
            private int gpuCount = -1;
            private int gpuCountVersion = -1;

            LocalSet(final TopoNode gpu)
            {
                this.gpu = gpu;
                recompute();
            }

            private void recompute()
            {
                members.clear();
                minType = PathType.DIS;
                maxBw = 0;
                for (final TopoNode nic : system.nics())
                {
                    if (options.ibHca().accepts(nic))
                    {
                        final Work w = work(gpu, nic);
                        consider(nic.typeIndex(), w.type, w.bw);
                    }
                }
                array = null;
            }

            private void consider(final int idx, final PathType t, final double b)
            {
                if (b > maxBw || (b == maxBw && t.value() < minType.value()))
                {
                    maxBw = b;
                    minType = t;
                    members.clear();
                }
                if (b == maxBw && t == minType && b > 0)
                {
                    members.add(idx);
                }
                array = null;
            }

            void update(final int idx, final PathType oldType, final double oldBw, final PathType t, final double b)
            {
                if (!options.ibHca().accepts(system.nics().get(idx)))
                {
                    return; // NCCL_IB_HCA leaves this NIC out: it is no GPU's local NIC
                }
                if (members.contains(idx) && (b != maxBw || t != minType))
                {
                    members.remove(idx);
                    if (members.isEmpty() || b > maxBw || (b == maxBw && t.value() < minType.value()))
                    {
                        recompute();
                        return;
                    }
                    array = null;
                    return;
                }
                consider(idx, t, b);
            }

            // ncclTopoGetLocal(NET first -> GPU).size(), cached until this set or a NIC-to-GPU path changes.
            int localGpuCount(final int firstNic)
            {
                if (array == null || gpuCount < 0 || gpuCountVersion != nicToGpuVersion)
                {
                    array();
                    gpuCount = Math.max(1, localGpusOf(system.nics().get(firstNic)).size());
                    gpuCountVersion = nicToGpuVersion;
                }
                return gpuCount;
            }

            int[] array()
            {
                if (array == null)
                {
                    array = members.stream().mapToInt(Integer::intValue).toArray();
                    gpuCount = -1;
                }
                return array;
            }
        }
    }

    // NCCL mirrorBits: reverse the low log2(pow2) bits, so GPUs spread over a power-of-two number of NICs.
    static int mirrorBits(final int value, final int pow2)
    {
        int mirror = 0;
        for (int b = 1, mb = pow2 >> 1; b < pow2; b <<= 1, mb >>= 1)
        {
            if ((value & b) != 0)
            {
                mirror |= mb;
            }
        }
        return mirror;
    }

    // NCCL mergePathType: C2C then PHB is P2C, otherwise the farther type.
    static PathType merge(final PathType a, final PathType b)
    {
        final PathType max = a.max(b);
        final PathType min = a.min(b);
        return max == PathType.PHB && min == PathType.C2C ? PathType.P2C : max;
    }

    /**
     * NCCL's GDR level: NCCL_NET_GDR_LEVEL when set, otherwise P2C with NCCL_NET_GDR_C2C (its default) and PXB
     * without.
     *
     * @param options path options.
     * @return the farthest distance GDR is used at.
     */
    static PathType effectiveLevel(final PathOptions options)
    {
        return effectiveLevel(options.gdrLevel(), options.netGdrC2c());
    }

    static PathType effectiveLevel(final GdrLevel level, final boolean netGdrC2c)
    {
        return GdrLevel.effective(level, netGdrC2c).path();
    }
}
