/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.util.List;

/**
 * The path NCCL would use from one node to another.
 *
 * @param from         the source node.
 * @param to           the destination node.
 * @param type         the path type.
 * @param bandwidth    the narrowest link on the path, GB/s (0 when disconnected).
 * @param hops         the nodes after {@code from}, ending with {@code to}; empty for LOC and DIS.
 * @param intermediate for PXN, the GPU that relays to the NIC; null otherwise.
 */
public record TopoPath(
    TopoNode from, TopoNode to, PathType type, double bandwidth, List<TopoNode> hops, TopoNode intermediate)
{
    /**
     * @return the route as text, e.g. {@code GPU0 -> 0000:03:00.0 -> NIC0}.
     */
    public String route()
    {
        final StringBuilder sb = new StringBuilder(from.label());
        for (final TopoNode hop : hops)
        {
            sb.append(" -> ").append(hop.label());
        }
        return sb.toString();
    }

    @Override
    public String toString()
    {
        return from.label() + "->" + to.label() + " " + type + " bw=" + bandwidth +
            (intermediate != null ? " via " + intermediate.label() : "") + " [" + route() + "]";
    }
}
