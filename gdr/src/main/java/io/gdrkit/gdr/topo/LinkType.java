/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

/**
 * Types of a direct link between two nodes. As in NCCL, a link's value equals the path type it starts a path
 * with (a PCI link starts as PIX), which is why the values have gaps.
 */
public enum LinkType
{
    /** Local: a NIC port to its own device. Counts as LOC in paths. */
    LOC(PathType.LOC),
    /** NVLink, possibly bonded (see {@link TopoLink#count()}). */
    NVL(PathType.NVL),
    /** Chip-to-chip link between a GPU and its CPU. */
    C2C(PathType.C2C),
    /** A PCIe link. */
    PCI(PathType.PIX),
    /** The SMP interconnect between two CPUs. */
    SYS(PathType.SYS),
    /** A network link. NCCL ignores it for path types (only the NIC to GPU part matters). */
    NET(PathType.LOC);

    private final PathType startType;

    LinkType(final PathType startType)
    {
        this.startType = startType;
    }

    /**
     * @return the path type a path gets from this link alone, before NCCL's PXB/PHB/NVB adjustments.
     */
    public PathType startType()
    {
        return startType;
    }
}
