/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

import java.util.Objects;

/**
 * One NET connection of a communicator, as the registration cache sees it.
 *
 * @param name    for messages: "send ch0 -> rank 3", say
 * @param usesGdr the connection reads/writes GPU memory directly (NCCL's NCCL_DIRECT_NIC flag); only such a
 *                connection can use a registered user buffer, the others copy through their host bounce
 * @param nic     where this connection registers (usually the NIC's {@link NetMrCache})
 */
public record NetConnection(String name, boolean usesGdr, Registrar nic) {
    public NetConnection {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(nic, "nic");
    }
}
