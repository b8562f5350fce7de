/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

/**
 * Path types between two topology nodes, in NCCL's order and with NCCL's numeric values (src/graph/topo.h,
 * NCCL &gt;= 2.26). A smaller value is a closer path; the GDR distance gate compares these values.
 */
public enum PathType
{
    /** The node itself. */
    LOC(0),
    /** Direct NVLink (GPU to GPU, or GPU to GPU through an NVSwitch). */
    NVL(1),
    /** NVLink through one intermediate GPU. */
    NVB(2),
    /** The C2C link between a GPU and its CPU (Grace Hopper and similar). */
    C2C(3),
    /** Through at most one PCIe switch. */
    PIX(4),
    /** Through several PCIe switches, without crossing a host bridge. */
    PXB(5),
    /** GPU to NIC through the GPU's C2C link to the CPU, then PCIe from the CPU to the NIC. */
    P2C(6),
    /** GPU to NIC through an intermediate GPU: NVLink to that GPU, then its PCIe path to the NIC. */
    PXN(7),
    /** Through a PCIe host bridge (typically the CPU). */
    PHB(8),
    /** Across the SMP interconnect between NUMA nodes (QPI/UPI). */
    SYS(9),
    /** Through the network (GPUs on different hosts). */
    NET(10),
    /** Disconnected: no path. */
    DIS(11);

    private static final PathType[] BY_VALUE = values();

    private final int value;

    PathType(final int value)
    {
        this.value = value;
    }

    /**
     * @return NCCL's numeric value for this path type.
     */
    public int value()
    {
        return value;
    }

    /**
     * @param value NCCL's numeric value, 0..11.
     * @return the path type with that value.
     * @throws IllegalArgumentException when the value is out of range.
     */
    public static PathType ofValue(final int value)
    {
        if (value < 0 || value >= BY_VALUE.length)
        {
            throw new IllegalArgumentException("no NCCL path type has value " + value + " (0..11)");
        }
        return BY_VALUE[value];
    }

    /**
     * @param other another path type.
     * @return the farther of the two (NCCL's std::max on path types).
     */
    public PathType max(final PathType other)
    {
        return other.value > value ? other : this;
    }

    /**
     * @param other another path type.
     * @return the closer of the two.
     */
    public PathType min(final PathType other)
    {
        return other.value < value ? other : this;
    }
}
