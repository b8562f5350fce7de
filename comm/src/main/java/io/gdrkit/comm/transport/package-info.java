/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * The network seam shaped like NCCL's ncclNet_t ({@link io.gdrkit.comm.transport.NetTransport}) and the
 * transports behind it. The transports never decide GDR themselves: the caller asks the control plane's gates
 * ({@link io.gdrkit.gdr.gate.GdrGate}) and registers GPU memory or host bounce buffers accordingly.
 */
package io.gdrkit.comm.transport;
