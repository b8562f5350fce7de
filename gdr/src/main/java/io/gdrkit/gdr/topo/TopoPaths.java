package io.gdrkit.gdr.topo;

import java.util.List;

/**
 * Computed paths of a {@link TopoSystem} (see {@link PathComputer}).
 */
public final class TopoPaths
{
    private final TopoSystem system;
    private final TopoPath[][] paths;
    private final PathOptions options;

    TopoPaths(final TopoSystem system, final TopoPath[][] paths, final PathOptions options)
    {
        this.system = system;
        this.paths = paths;
        this.options = options;
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
     * @param from a node.
     * @param to   a CPU, GPU, NIC or NVSwitch (paths are computed towards those).
     * @return the path.
     */
    public TopoPath path(final TopoNode from, final TopoNode to)
    {
        return paths[from.index()][to.index()];
    }

    /**
     * @param from a node.
     * @param to   a CPU, GPU, NIC or NVSwitch.
     * @return the path type.
     */
    public PathType type(final TopoNode from, final TopoNode to)
    {
        return path(from, to).type();
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
            final int hops = path(gpu, cpu).hops().size();
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
        PathType distance = path(effectiveGpu, nic).type();
        if (options.netGdrC2c() && distance == PathType.P2C)
        {
            distance = PathType.C2C;
        }
        final boolean allowed = level.allows(distance);
        final TopoNode cpu = localCpu(effectiveGpu);
        final boolean pci = cpu != null && path(effectiveGpu, cpu).type() == PathType.C2C && distance != PathType.C2C;
        return new GdrDistanceCheck(gpu, nic, path, distance, level, allowed, pci);
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
        for (final TopoNode n : nics)
        {
            sb.append(String.format("NIC%d: %s%n", n.typeIndex(), n.id()));
        }
        return sb.toString();
    }
}
