/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

/** How a device call reaches the NIC. */
public enum ShmemMode {
    /** CPU proxy (NVSHMEM's IBRC): the GPU writes a request into a host ring; a proxy thread posts the verbs. */
    IBRC,
    /** GPU-driven (NVSHMEM's IBGDA): the GPU writes the WQE into the NIC's send queue and rings its doorbell. */
    IBGDA
}
