/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.gdr.reg.RegMechanism;
import java.util.List;

/**
 * One GDR decision for a GPU, a NIC and a direction, with the evidence chain that led to it and the NCCL-style log
 * line.
 *
 * @param mechanism  how GPU memory is registered when enabled; {@link RegMechanism#NONE} when not
 * @param failedGate the gate that turned GDR off ("NCCL_IB_HCA", "GPU", "NET", "read policy", "distance", "connector"); empty when
 *                   enabled
 */
public record GdrDecision(int gpu, int nic, boolean read, boolean enabled, RegMechanism mechanism, String failedGate,
                          List<String> evidence, String logLine) {
    /** NCCL's connector suffix: "/GDRDMA" when the NIC reads or writes GPU memory directly. */
    public String connectorSuffix() {
        return enabled ? "/GDRDMA" : "";
    }

    public String direction() {
        return read ? "send (NIC reads GPU)" : "receive (NIC writes GPU)";
    }
}
