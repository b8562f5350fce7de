/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import io.gdrkit.gdr.config.GdrConfiguration;
import java.util.List;
import java.util.Map;

/**
 * Computed paths of a {@link TopoSystem} (see {@link PathComputer}).
 */
public final class TopoPaths
{
    private final TopoSystem system;
    private final PathComputer.Table paths;
    private final PathOptions options;
    private final Map<TopoNode, TopoNode> localGpu;

    TopoPaths(
        final TopoSystem system,
        final PathComputer.Table paths,
        final PathOptions options,
        final Map<TopoNode, TopoNode> localGpu)
    {
        this.system = system;
        this.paths = paths;
        this.options = options;
        this.localGpu = localGpu;
    }

    /**
     * @param nic a NIC.
     * @return NCCL's local GPU of the NIC (ncclTopoGetLocalGpu, the GPU that relays for others with PXN), or null
     *     when no GPU picks this NIC (NCCL's -1: a storage NIC, for example).
     */
    public TopoNode localGpu(final TopoNode nic)
    {
        return localGpu.get(nic);
    }

    /**
     * @return the topology.
     */
    public TopoSystem system()
    {
        return system;
    }

    /**
     * @return the options the paths were computed with.
     */
    public PathOptions options()
    {
        return options;
    }

    /**
     * @param from a CPU, GPU or NIC.
     * @param to   a CPU, GPU or NIC (paths between two NICs are not kept).
     * @return the path.
     * @throws IllegalArgumentException for a pair whose path is not kept.
     */
    public TopoPath path(final TopoNode from, final TopoNode to)
    {
        final PathComputer.Work w = paths.get(from, to);
        if (w == null)
        {
            if (from == to)
            {
                return new TopoPath(from, to, PathType.LOC, TopologyBuilder.LOC_BW, List.of(), null);
            }
            throw new IllegalArgumentException("no path kept from " + from + " to " + to +
                ": paths are kept between CPUs, GPUs and NICs, and between two NICs only up to " +
                PathComputer.NIC_PAIRS_UP_TO + " NICs");
        }
        return new TopoPath(from, to, w.type, w.bw, List.copyOf(w.hops()), w.relay);
    }

    /**
     * @param from a CPU, GPU or NIC.
     * @param to   a CPU, GPU or NIC.
     * @return the path type.
     */
    public PathType type(final TopoNode from, final TopoNode to)
    {
        final PathComputer.Work w = paths.get(from, to);
        return w != null ? w.type : path(from, to).type();
    }

    /**
     * @param from a CPU, GPU or NIC.
     * @param to   a CPU, GPU or NIC.
     * @return the path's bandwidth, without copying its hops.
     */
    public double bandwidth(final TopoNode from, final TopoNode to)
    {
        final PathComputer.Work w = paths.get(from, to);
        return w != null ? w.bw : path(from, to).bandwidth();
    }

    /**
     * @param from a CPU, GPU or NIC.
     * @param to   a CPU, GPU or NIC.
     * @return the path's PXN relay GPU ({@link TopoPath#intermediate()}), or null, without copying its hops.
     */
    public TopoNode relay(final TopoNode from, final TopoNode to)
    {
        final PathComputer.Work w = paths.get(from, to);
        return w != null ? w.relay : path(from, to).intermediate();
    }

    /**
     * @param gpu a GPU index.
     * @param nic a NIC index.
     * @return the GPU-to-NIC path (the direction PXN applies to, as in NCCL).
     */
    public TopoPath gpuToNic(final int gpu, final int nic)
    {
        return path(system.gpus().get(gpu), system.nics().get(nic));
    }

    /**
     * @param a a GPU index.
     * @param b a GPU index.
     * @return the GPU-to-GPU path.
     */
    public TopoPath gpuToGpu(final int a, final int b)
    {
        return path(system.gpus().get(a), system.gpus().get(b));
    }

    /**
     * @param gpu a GPU.
     * @return the CPU with the fewest hops from the GPU (NCCL ncclGetLocalCpu), or null when none is reachable.
     */
    public TopoNode localCpu(final TopoNode gpu)
    {
        TopoNode best = null;
        int min = Integer.MAX_VALUE;
        for (final TopoNode cpu : system.cpus())
        {
            final PathComputer.Work w = paths.get(gpu, cpu);
            final int hops = w == null ? 0 : w.hops().size();
            if (hops > 0 && hops < min)
            {
                best = cpu;
                min = hops;
            }
        }
        return best;
    }

    /**
     * The distance gate of NCCL's ncclTopoCheckGdr.
     *
     * @param gpu   a GPU.
     * @param nic   a NIC.
     * @param level the GDR level.
     * @return the distance, the level and whether the distance is within it.
     */
    public GdrDistanceCheck gdrDistance(final TopoNode gpu, final TopoNode nic, final GdrLevel level)
    {
        final TopoPath path = path(gpu, nic);
        final TopoNode effectiveGpu = path.type() == PathType.PXN && path.intermediate() != null ?
            path.intermediate() : gpu;
        final PathType distance = type(effectiveGpu, nic);
        // NCCL 2.30: the default level is P2C with NCCL_NET_GDR_C2C (on by default), PXB without it.
        final GdrLevel used = GdrLevel.effective(level, options.netGdrC2c());
        final boolean allowed = used.allows(distance);
        final TopoNode cpu = localCpu(effectiveGpu);
        final boolean pci = cpu != null && type(effectiveGpu, cpu) == PathType.C2C && distance != PathType.P2C;
        return new GdrDistanceCheck(gpu, nic, path, distance, used, allowed, pci);
    }

    /**
     * @return a GPU x NIC then GPU x GPU matrix of path types, like {@code nvidia-smi topo -m}.
     */
    public String matrix()
    {
        final List<TopoNode> gpus = system.gpus();
        final List<TopoNode> nics = system.nics();
        final StringBuilder sb = new StringBuilder("      ");
        for (final TopoNode g : gpus)
        {
            sb.append(String.format("%-6s", g.label()));
        }
        for (final TopoNode n : nics)
        {
            sb.append(String.format("%-6s", n.label()));
        }
        sb.append('\n');
        for (final TopoNode g : gpus)
        {
            sb.append(String.format("%-6s", g.label()));
            for (final TopoNode o : gpus)
            {
                sb.append(String.format("%-6s", type(g, o)));
            }
            for (final TopoNode n : nics)
            {
                sb.append(String.format("%-6s", type(g, n)));
            }
            sb.append('\n');
        }
        for (final TopoNode g : gpus)
        {
            sb.append(String.format("%s: %s%n", g.label(), g.busId()));
        }
        for (final TopoNode n : nics)
        {
            sb.append(String.format("%s: %s%s%n", n.label(), n.id(), n.busId() != null && !n.busId().equals(n.id()) ?
                " (" + n.busId() + ")" : ""));
        }
        return sb.toString();
    }
}
