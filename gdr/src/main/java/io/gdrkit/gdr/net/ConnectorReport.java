/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.net;

import io.gdrkit.gdr.gate.FlushPolicy;
import io.gdrkit.gdr.gate.GdrDecision;
import io.gdrkit.gdr.reg.BufferPlacement;
import java.util.ArrayList;
import java.util.List;

/**
 * What the connector decided for one direction of one connection, after the connector gate.
 *
 * @param send      true for the sender's side (the NIC reads its GPU), false for the receiver's (it writes it)
 * @param gdr       the gates' decision including the connector gate
 * @param placement where the data buffer lives (DEVMEM for GDR, HOSTMEM for the host bounce) and why
 * @param flush     for the receive side: whether received data is flushed before the GPU consumes it
 * @param logLine   NCCL's line, e.g. {@code Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA}
 */
public record ConnectorReport(boolean send, GdrDecision gdr, BufferPlacement placement, FlushPolicy.Decision flush,
                              String logLine) {
    /** The evidence chain: the gates, the connector gate, the placement and the flush decision. */
    public List<String> evidence() {
        final List<String> out = new ArrayList<>(gdr.evidence());
        out.add("buffers: " + placement.evidence());
        if (flush != null) {
            out.add(flush.evidence());
        }
        return out;
    }
}
