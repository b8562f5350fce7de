/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

/**
 * A directed link from one node to another. Links are created in pairs (one each way) by {@link TopologyBuilder}.
 *
 * @param from      the node the link leaves.
 * @param to        the node the link reaches.
 * @param type      the link type.
 * @param bandwidth bandwidth in GB/s, used as NCCL does to prefer wider paths and in the PXN rule.
 * @param count     number of bonded lanes (NVLink count); 1 for other links.
 */
public record TopoLink(TopoNode from, TopoNode to, LinkType type, double bandwidth, int count)
{
    @Override
    public String toString()
    {
        return from.id() + " -" + type + (count > 1 ? "x" + count : "") + "-> " + to.id();
    }
}
