/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

/**
 * The memory banks a NET connection's buffers are carved from, named after NCCL's {@code NCCL_NET_MAP_*} banks
 * (src/transport/net.cc). The ordinal matches NCCL's bank number.
 */
public enum BufferKind {
    /** Pinned host memory: the host bounce buffer used when the NIC may not touch GPU memory. */
    HOSTMEM,
    /** GPU memory the NIC reads/writes directly (GPUDirect RDMA). */
    DEVMEM,
    /** A host pool shared by the connections of one peer (p2p), still a host bounce. */
    SHARED_HOSTMEM,
    /** A GPU pool shared by the connections of one peer (p2p), reached directly by the NIC. */
    SHARED_DEVMEM,
    /** GPU memory also mapped to the CPU through GDRCopy: holds the small sync words (tail/head), never bulk data. */
    GDCMEM;

    /** True for the banks that live in GPU memory (the NIC must reach them by GDR or GDRCopy). */
    public boolean onDevice() {
        return this == DEVMEM || this == SHARED_DEVMEM || this == GDCMEM;
    }

    /** True for the banks shared between the connections to one peer. */
    public boolean shared() {
        return this == SHARED_HOSTMEM || this == SHARED_DEVMEM;
    }
}
