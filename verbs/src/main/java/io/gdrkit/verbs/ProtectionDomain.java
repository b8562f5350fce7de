package io.gdrkit.verbs;

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

    QueuePair createQp(QpInitAttr attr);

    @Override
    void close();
}
