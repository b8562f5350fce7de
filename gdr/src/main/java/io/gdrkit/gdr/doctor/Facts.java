/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import io.gdrkit.gdr.gate.FlushPolicy;
import io.gdrkit.gdr.gate.GdrDecision;
import io.gdrkit.gdr.topo.PathType;

/**
 * What a doctor run established about the host, for the settings table: each setting's effect is stated against
 * these. A null field is "not established" (no GPU, no NIC, not modelled).
 *
 * @param gpuCount        GPUs the host has
 * @param distance        the GPU-NIC distance the GDR gate compared, or null when there is no pair
 * @param gpuGdr          attribute 116, or null with no GPU
 * @param dmabufHardware  DMA-BUF registrable by provider, driver and GPU (before NCCL_DMABUF_ENABLE), or null
 * @param peermem         a peer-memory client registers GPU memory, or null
 * @param receive         the receive decision, or null when not decided
 * @param send            the send decision, or null when not decided
 * @param flush           the flush decision, or null
 * @param gdrcopy         GDRCopy present (/dev/gdrdrv and libgdrapi), or null when not modelled
 * @param ibDevices       the IB transport has a device to use
 */
record Facts(int gpuCount, PathType distance, Boolean gpuGdr, Boolean dmabufHardware, Boolean peermem,
             GdrDecision receive, GdrDecision send, FlushPolicy.Decision flush, Boolean gdrcopy, boolean ibDevices) {
}
