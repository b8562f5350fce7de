/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * Rank rendezvous, like NCCL's bootstrap (ncclGetUniqueId, ncclCommInitRank): a {@link
 * io.gdrkit.comm.bootstrap.BootstrapRoot} (started by the launcher or by one rank) accepts the ranks of one run,
 * identified by a {@link io.gdrkit.comm.bootstrap.UniqueId}; each rank's {@link io.gdrkit.comm.bootstrap.Bootstrap}
 * then exchanges small blobs (addresses, keys, handles) by allgather, broadcast and barrier. A rank that dies
 * aborts the run for every other rank with a named remote error.
 */
package io.gdrkit.comm.bootstrap;
