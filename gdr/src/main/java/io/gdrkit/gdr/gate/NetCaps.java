package io.gdrkit.gdr.gate;

/**
 * What a NET device (HCA) offers: the two ways it can register GPU memory.
 *
 * @param peermem          nv_peer_mem / nvidia_peermem present (CUDA pointers registrable)
 * @param peermemEvidence  what was looked at (/sys/kernel/mm/memory_peers/nv_mem/version, nv_mem_nc, /sys/module/nvidia_peermem)
 * @param dmabufProvider   the provider registers DMA-BUF (ibv_reg_dmabuf_mr with fd -1 answered EBADF, not EOPNOTSUPP)
 * @param dmabufEvidence   the probe and its answer
 */
public record NetCaps(int dev, String name, boolean peermem, String peermemEvidence, boolean dmabufProvider,
                      String dmabufEvidence) {
}
