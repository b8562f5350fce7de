package io.gdrkit.gdr.gate;

import java.util.List;

/**
 * One GDR decision for a GPU, a NIC and a direction, with the evidence chain that led to it and the NCCL-style log
 * line. {@code mechanism} is "DMA-BUF", "peermem" or "none".
 */
public record GdrDecision(int gpu, int nic, boolean read, boolean enabled, String mechanism, List<String> evidence,
                          String logLine) {
    /** NCCL's connector suffix: "/GDRDMA" when the NIC reads or writes GPU memory directly. */
    public String connectorSuffix() {
        return enabled ? "/GDRDMA" : "";
    }

    public String direction() {
        return read ? "send (NIC reads GPU)" : "receive (NIC writes GPU)";
    }
}
