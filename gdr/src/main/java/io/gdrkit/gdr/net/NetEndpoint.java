/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.net;

import io.gdrkit.gdr.gate.GpuCaps;
import io.gdrkit.gdr.topo.PathType;
import io.gdrkit.gpu.GpuDevice;
import java.util.Objects;

/**
 * One rank's end of a NET connection: its GPU (and what that GPU offers), the NIC it uses, and the path between
 * them (for PXN, the intermediate GPU's distance).
 */
public record NetEndpoint(int rank, GpuDevice gpu, GpuCaps caps, NetNic nic, PathType distance) {
    public NetEndpoint {
        Objects.requireNonNull(gpu, "gpu");
        Objects.requireNonNull(caps, "caps");
        Objects.requireNonNull(nic, "nic");
        Objects.requireNonNull(distance, "distance");
        if (caps.ordinal() != gpu.ordinal()) {
            throw new IllegalArgumentException("caps describe GPU " + caps.ordinal() + ", not GPU " + gpu.ordinal());
        }
    }
}
