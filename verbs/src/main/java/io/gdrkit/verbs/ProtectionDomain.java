/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import io.gdrkit.core.Errno;
import io.gdrkit.core.mem.DmaMemory;

import java.lang.foreign.MemorySegment;

/** A protection domain (ibv_pd): MRs and QPs of one PD may only be used together. */
public interface ProtectionDomain extends AutoCloseable {
    VerbsContext context();

    /**
     * Registers {@code segment} (ibv_reg_mr). The segment must be native memory; its address is the MR's
     * virtual address and SGEs and remote addresses refer to it.
     */
    MemoryRegion registerMr(MemorySegment segment, int accessFlags);

    /**
     * Registers memory the NIC reaches by DMA, such as GPU memory (GPUDirect RDMA): the NIC reads and writes it
     * only through {@code memory}. Providers that cannot do this throw EOPNOTSUPP.
     */
    default MemoryRegion registerMr(final DmaMemory memory, final int accessFlags) {
        throw new VerbsException(Errno.EOPNOTSUPP, "this provider cannot register " + memory.describe());
    }

    /**
     * Registers {@code [offset, offset + length)} of the DMA-BUF behind file descriptor {@code fd}
     * (ibv_reg_dmabuf_mr): the NIC imports the buffer from its exporter (a GPU driver) instead of pinning pages
     * by address, so no peer-memory kernel module is needed. {@code iova} is the MR's virtual address, the one
     * SGEs and remote addresses use. The fd may be closed once this returns: the MR holds the attachment.
     *
     * <p>Errors as the kernel gives them: EOPNOTSUPP when the provider cannot register DMA-BUF, EBADF when
     * {@code fd} is not an open file, EINVAL for a file that is not a DMA-BUF, a range outside it, or bad access
     * flags. NCCL's probe for provider support is this call with fd = -1: EBADF means supported.
     */
    default MemoryRegion registerDmaBufMr(final long offset, final long length, final long iova, final int fd,
                                          final int accessFlags) {
        throw new VerbsException(Errno.EOPNOTSUPP, "ibv_reg_dmabuf_mr: this provider does not register DMA-BUF");
    }

    QueuePair createQp(QpInitAttr attr);

    /**
     * Allocates a memory window of {@code type} {@link MemoryWindow#TYPE_1} or {@link MemoryWindow#TYPE_2}
     * (ibv_alloc_mw); unbound, its rkey grants nothing.
     *
     * @throws VerbsException EINVAL for another type
     */
    default MemoryWindow allocMw(final int type) {
        throw new VerbsException(io.gdrkit.core.Errno.EOPNOTSUPP, "this provider has no memory windows");
    }

    /**
     * Creates an address handle for UD sends (ibv_create_ah).
     *
     * @throws VerbsException EINVAL for LID 0, a multicast LID (0xC000 and up), or a port other than 1;
     *                        EOPNOTSUPP for a GRH (is_global). An AH to a LID nobody has is valid: its datagrams
     *                        are lost, as on a fabric.
     */
    default AddressHandle createAh(final AhAttr attr) {
        throw new VerbsException(io.gdrkit.core.Errno.EOPNOTSUPP, "this provider has no UD");
    }

    /**
     * Creates a shared receive queue (ibv_create_srq).
     *
     * @throws VerbsException EINVAL for max_wr or max_sge out of the device's range, or a limit above max_wr
     */
    default SharedReceiveQueue createSrq(final SrqInitAttr attr) {
        throw new VerbsException(io.gdrkit.core.Errno.EOPNOTSUPP, "this provider has no SRQ");
    }

    @Override
    void close();
}
