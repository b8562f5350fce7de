/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

/**
 * Kinds of topology node. NCCL has GPU, PCI, NVS, CPU, NIC and NET; gdrkit folds NCCL's NIC+NET pair into one
 * {@link #NIC} node per network port (NCCL's NIC-to-NET link counts as LOC, so path types are unchanged) and adds
 * {@link #HOST_BRIDGE} for the PCI root complexes that sysfs shows, which NCCL folds into its CPU node.
 */
public enum NodeType
{
    /** A GPU. */
    GPU,
    /** A PCIe switch or bridge. */
    PCI,
    /** An NVSwitch (NCCL models all NVSwitches of a host as one node). */
    NVS,
    /** A CPU / NUMA node. */
    CPU,
    /** A network port usable by the NET transport (an RDMA device port). */
    NIC,
    /** A PCIe host bridge (root complex); paths through it are PHB, like paths through the CPU. */
    HOST_BRIDGE,
    /**
     * A GPU device that holds several GPUs (NCCL 2.30's DEV node: several {@code <gpu>} elements under one
     * {@code <pci>}). Only created for that form; a lone GPU is its own device, so paths keep their hop counts.
     */
    DEV;

    /**
     * @return true when a PCIe link touching this node makes the path PHB.
     */
    boolean isHostSide()
    {
        return this == CPU || this == HOST_BRIDGE;
    }
}
