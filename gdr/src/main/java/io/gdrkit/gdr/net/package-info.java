/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * A small NET connector with NCCL's setup semantics (src/transport/net.cc): per direction it decides GDR through
 * the gates, places and registers the buffers through the NIC's MR cache with the mechanism the device offers,
 * connects an RC QP pair, and reports the decision with its evidence and NCCL's log line. A failure of a step that
 * exists only for GDR (registering GPU memory, the flush QP) turns GDR off for that connection: the connector gate.
 */
package io.gdrkit.gdr.net;
