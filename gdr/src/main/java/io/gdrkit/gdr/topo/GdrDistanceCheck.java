/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

/**
 * The distance part of NCCL's ncclTopoCheckGdr for one GPU and one NIC: the distance compared with the GDR level.
 * For a PXN path the distance is the relay GPU's own path to the NIC; with NCCL_NET_GDR_C2C a P2C path counts as
 * C2C. The other gates (GPU and NIC support, read policy) are not decided here.
 *
 * @param gpu          the GPU.
 * @param nic          the NIC.
 * @param path         the GPU-to-NIC path.
 * @param distance     the distance compared with the level.
 * @param level        the GDR level.
 * @param allowed      {@code distance <= level}.
 * @param pciMapping   NCCL's ncclTopoGdrModePci: the GPU reaches its CPU over C2C but the NIC through PCIe.
 */
public record GdrDistanceCheck(
    TopoNode gpu, TopoNode nic, TopoPath path, PathType distance, GdrLevel level, boolean allowed,
    boolean pciMapping)
{
    /**
     * @return a line in the style of NCCL's log, e.g.
     *     {@code GPU Direct RDMA Disabled for GPU 2 / HCA mlx5_0 (distance SYS > PXB)}.
     */
    public String logLine()
    {
        final String via = path.intermediate() != null ? ", via " + path.intermediate().label() + " (PXN)" : "";
        return "GPU Direct RDMA " + (allowed ? "Enabled" : "Disabled") + " for GPU " + gpu.dev() +
            " / HCA " + nic.id() + " (distance " + distance + (allowed ? " <= " : " > ") + level.path() +
            via + ")" + (allowed && pciMapping ? " mode PCI" : "");
    }
}
