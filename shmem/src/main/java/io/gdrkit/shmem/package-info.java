/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * PGAS in the style of NVSHMEM over the software NIC: a symmetric heap on every PE's GPU, put, get, put-with-signal
 * and atomics from the host and from GPU kernels.
 *
 * <p>Each processing element is a {@link io.gdrkit.shmem.ShmemPe}: its heap (the same offset names the same object on
 * every PE), connections to every PE, the host API, and the {@link io.gdrkit.shmem.ShmemDevice device API} its
 * kernels call. A device call reaches the NIC by one of two control paths ({@link io.gdrkit.shmem.ShmemMode}):
 * through a CPU proxy (IBRC), or with the GPU writing work requests and ringing the doorbell itself (IBGDA).
 *
 * <p>To run PEs, configure a {@link io.gdrkit.shmem.ShmemContext} and use {@link io.gdrkit.shmem.ShmemWorld} (every
 * PE a thread of this JVM) or {@link io.gdrkit.shmem.ShmemProcess} (one PE per launched rank process).
 * {@link io.gdrkit.shmem.ShmemPerf} and {@link io.gdrkit.shmem.CudaShmemPerf} measure the operations in the manner of
 * NVSHMEM's perftest, and {@link io.gdrkit.shmem.MoeRun} runs a mixture-of-experts dispatch and combine. Failures are
 * {@link io.gdrkit.shmem.ShmemException}s with a named reason.
 */
package io.gdrkit.shmem;
