/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import io.gdrkit.gdr.config.GdrConfiguration;

/**
 * What to do about a failed check, as NCCL's and NVIDIA's GPUDirect documentation say it: one line per kind of
 * failure, shown under the FAIL line (and as {@code hint} in JSON). Checks that pass, or whose outcome is unknown,
 * get none.
 */
public final class Hints {
    private Hints() {
    }

    /**
     * The fix for {@code c}, or null when it did not fail or there is no general advice for it.
     *
     * @param c a check
     * @return one line of advice, or null
     */
    public static String of(final Check c) {
        if (c.status() != Status.FAIL) {
            return null;
        }
        return switch (c.name()) {
            case "RDMA devices", "uverbs device files", "libibverbs (FFM)" -> "install the NIC's driver and rdma-core "
                + "(ibv_devices must list the device); in a container pass /dev/infiniband (--device) and allow "
                + "locked memory (--ulimit memlock=-1)";
            case "peermem" -> "load nvidia-peermem (modprobe nvidia-peermem; it ships with the NVIDIA driver), or "
                + "register by DMA-BUF instead (CUDA driver 11.7+, kernel 5.12+, "
                + GdrConfiguration.DMABUF_ENABLE.name() + "=1)";
            case "DMA-BUF" -> "DMA-BUF needs GPU attribute 124 = 1 (CUDA driver 11.7+), kernel 5.12+, a NIC driver "
                + "that imports dma-bufs, and " + GdrConfiguration.DMABUF_ENABLE.name()
                + "=1; otherwise load nvidia-peermem";
            case "mechanism" -> "no way to register GPU memory with the NIC: load nvidia-peermem or make DMA-BUF "
                + "usable (see the peermem and DMA-BUF lines)";
            case "GDRCopy /dev/gdrdrv", "GDRCopy libgdrapi" -> "optional (NCCL uses GDRCopy for low-latency CPU "
                + "access to GPU memory): install gdrcopy and load its gdrdrv module";
            case "CUDA driver" -> "install the NVIDIA driver (nvidia-smi must list the GPU); in a container pass the "
                + "GPU (--gpus all)";
            case "GPUDirect RDMA (116)" -> "this GPU or driver does not offer GPUDirect RDMA: use a data-center GPU "
                + "and a current driver; without it NCCL bounces through host memory";
            case "receive (NIC writes GPU)", "send (NIC reads GPU)" -> "the GDR gate said no: its log line names "
                + "why (a path longer than " + GdrConfiguration.NET_GDR_LEVEL.name() + ", "
                + GdrConfiguration.NET_GDR_READ.name() + " for sends, no registration); "
                + GdrConfiguration.NET_GDR_LEVEL.name() + "=SYS allows any path NCCL allows";
            case "memlock limit" -> "raise the locked-memory limit: ulimit -l unlimited (memlock in "
                + "/etc/security/limits.conf, LimitMEMLOCK=infinity under systemd, --ulimit memlock=-1 in docker)";
            default -> c.layer().equals("verbs") && c.name().contains("port") ? "bring the port up: check the cable and the switch (ibstat shows "
                + "its state) and, on InfiniBand, that a subnet manager runs" : null;
        };
    }
}
