/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.core.Errno;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;

/**
 * What a NET device (HCA) offers: the two ways it can register GPU memory.
 *
 * @param peermem          nv_peer_mem / nvidia_peermem present (CUDA pointers registrable)
 * @param peermemEvidence  what was looked at (/sys/kernel/mm/memory_peers/nv_mem/version, nv_mem_nc, /sys/module/nvidia_peermem)
 *                         or the registration of GPU memory by pointer that was tried
 * @param dmabufProvider   the provider registers DMA-BUF (ibv_reg_dmabuf_mr with fd -1 answered EBADF, not EOPNOTSUPP)
 * @param dmabufEvidence   the probe and its answer
 */
public record NetCaps(int dev, String name, boolean peermem, String peermemEvidence, boolean dmabufProvider,
                      String dmabufEvidence) {
    /** GPU memory the pointer question registers: one BAR1 page, the smallest a NIC can map. */
    static final long PROBE_BYTES = 64 * 1024;

    /**
     * Asks the device itself, through verbs calls, the two questions NCCL's IB transport asks before it lets a
     * connection use GPU memory:
     * <ul>
     *   <li>DMA-BUF: {@code ibv_reg_dmabuf_mr(pd, 0, 0, 0, fd = -1, 0)} (ncclIbDmaBufSupport). EOPNOTSUPP or
     *       EPROTONOSUPPORT means the provider or kernel cannot register DMA-BUF; anything else (EBADF: the
     *       provider got as far as looking the fd up) means it can.</li>
     *   <li>peermem: registering {@value #PROBE_BYTES} bytes of {@code gpu}'s memory by its address
     *       ({@code ibv_reg_mr}), which succeeds only when a peer-memory client (nvidia-peermem) claims GPU
     *       memory; without one it fails with EFAULT. NCCL infers this from sysfs; asking the device proves it.</li>
     * </ul>
     * Each answer is recorded as evidence with the call and what the device said. A simulated device says so.
     *
     * @param dev the NET device index the decisions name (NCCL's HCA number)
     * @param ctx an open context on the device; a PD is allocated for the probe and released
     * @param gpu the GPU whose memory the pointer question registers (allocated and freed here), or null when there
     *            is no GPU: peermem is then reported absent with "not asked" as its evidence
     */
    public static NetCaps probe(final int dev, final VerbsContext ctx, final GpuDevice gpu) {
        final String name = ctx.device().name();
        final String on = " on " + name + (ctx.device().isSimulated() ? " (software provider, simulated)" : "");
        final ProtectionDomain pd = ctx.allocPd();
        try {
            boolean dmabuf;
            String dmabufEvidence = "ibv_reg_dmabuf_mr(offset 0, length 0, iova 0, fd -1, access 0)" + on;
            try {
                pd.registerDmaBufMr(0, 0, 0, -1, 0).deregister();
                dmabuf = true;
                dmabufEvidence += " succeeded (unexpected for fd -1) -> DMA-BUF registration supported";
            } catch (final VerbsException e) {
                dmabuf = e.errno() != Errno.EOPNOTSUPP && e.errno() != Errno.EPROTONOSUPPORT;
                dmabufEvidence += " = " + e.getMessage() + " -> DMA-BUF registration "
                    + (dmabuf ? "supported" : "not supported");
            }
            if (gpu == null) {
                return new NetCaps(dev, name, false, "not asked: no GPU memory to register", dmabuf, dmabufEvidence);
            }
            final DeviceBuffer buffer = gpu.alloc(PROBE_BYTES);
            try {
                return askPeermem(dev, name, on, pd, gpu, buffer, dmabuf, dmabufEvidence);
            } finally {
                gpu.free(buffer);
            }
        } finally {
            pd.close();
        }
    }

    private static NetCaps askPeermem(final int dev, final String name, final String on, final ProtectionDomain pd,
                                      final GpuDevice gpu, final DeviceBuffer buffer, final boolean dmabuf,
                                      final String dmabufEvidence) {
        final String call = "ibv_reg_mr(GPU " + gpu.ordinal() + " memory 0x" + Long.toHexString(buffer.address())
            + ", " + PROBE_BYTES + " B)" + on;
        try (GpuDmaMemory memory = new GpuDmaMemory(gpu, buffer)) {
            try {
                pd.registerMr(memory, AccessFlags.LOCAL_WRITE).deregister();
                return new NetCaps(dev, name, true, call + " succeeded: a peer-memory client pins GPU memory",
                    dmabuf, dmabufEvidence);
            } catch (final VerbsException e) {
                return new NetCaps(dev, name, false, call + " = " + e.getMessage(), dmabuf, dmabufEvidence);
            }
        } catch (final GpuException e) {
            // the GPU itself refuses to map memory for a NIC (attribute 116 = 0, BAR1 full): the NIC is not asked
            return new NetCaps(dev, name, false, "not answered: GPU " + gpu.ordinal() + " cannot map memory for a "
                + "NIC: " + e.getMessage(), dmabuf, dmabufEvidence);
        }
    }
}
