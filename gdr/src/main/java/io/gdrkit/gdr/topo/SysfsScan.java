/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.util.List;

/**
 * The result of reading a host's topology from sysfs: the topology and the evidence of how it was found.
 *
 * @param system    the topology (possibly without any GPU or NIC).
 * @param root      the sysfs root that was read (normally {@code /sys}).
 * @param inspected one line per PCI device looked at: bus id, class, vendor, NUMA node and what it was taken for.
 * @param gpuCount  NVIDIA GPUs found.
 * @param rdmaCount RDMA NIC ports found.
 * @param findings  conclusions in words, e.g. "no NVIDIA GPU found".
 */
public record SysfsScan(
    TopoSystem system, String root, List<String> inspected, int gpuCount, int rdmaCount, List<String> findings)
{
    /**
     * @return a multi-line report: findings first, then every inspected device.
     */
    public String report()
    {
        final StringBuilder sb = new StringBuilder("sysfs topology from ").append(root).append(": ")
            .append(gpuCount).append(" NVIDIA GPU, ").append(rdmaCount).append(" RDMA NIC port\n");
        for (final String finding : findings)
        {
            sb.append("  ").append(finding).append('\n');
        }
        sb.append("  inspected ").append(inspected.size()).append(" PCI devices:\n");
        for (final String line : inspected)
        {
            sb.append("    ").append(line).append('\n');
        }
        return sb.toString();
    }
}
