/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.gdr.config.GdrConfiguration;

/**
 * Whether received data needs a flush before the GPU may consume it (NCCL's ncclTopoNeedFlush and the IB
 * transport's iflush): only when the NIC wrote GPU memory directly, and then when the GPU's compute capability is
 * below 9.0 or NCCL_NET_FORCE_FLUSH is set. Forcing a flush on a connection without GDR flushes nothing: there is
 * no GPU write to order.
 */
public final class FlushPolicy {
    private FlushPolicy() {
    }

    public record Decision(boolean flush, String evidence) {
    }

    public static Decision decide(final GpuCaps gpu, final GdrDecision receive, final GdrSettings s) {
        if (!receive.enabled()) {
            return new Decision(false, "no flush: the NIC does not write GPU memory on this connection (host bounce)"
                + (s.forceFlush() ? "; " + GdrConfiguration.NET_FORCE_FLUSH.name() + "=1 has nothing to flush" : ""));
        }
        if (s.forceFlush()) {
            return new Decision(true, "flush: " + GdrConfiguration.NET_FORCE_FLUSH.name() + "=1");
        }
        if (gpu.computeCap() < 90) {
            return new Decision(true, "flush: compute capability " + gpu.computeCap() + " < 9.0");
        }
        return new Decision(false, "no flush: compute capability " + gpu.computeCap() + " >= 9.0");
    }
}
