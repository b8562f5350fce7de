/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

/** What a put-with-signal does to the signal word (NVSHMEM_SIGNAL_SET / NVSHMEM_SIGNAL_ADD). */
public enum SignalOp {
    /** An 8-byte RDMA WRITE of the value (inline in the WQE). */
    SET,
    /** An 8-byte FETCH_AND_ADD of the value. */
    ADD
}
