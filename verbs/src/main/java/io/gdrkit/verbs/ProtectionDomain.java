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

    QueuePair createQp(QpInitAttr attr);

    @Override
    void close();
}
