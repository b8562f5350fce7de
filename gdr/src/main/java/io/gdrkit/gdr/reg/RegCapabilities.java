/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

/**
 * What the platform offers for registering GPU memory, and what the settings allow of it.
 *
 * @param dmaBufSupported the provider registers DMA-BUF and the GPU exports it (driver, attribute)
 * @param dmaBufEnabled   the setting allows DMA-BUF (NCCL_DMABUF_ENABLE, default on)
 * @param peermemLoaded   a peermem module is loaded (nvidia_peermem / nv_peer_mem)
 * @param peermemEnabled  the setting allows the pointer path (gdrkit's own switch, default on)
 */
public record RegCapabilities(
    boolean dmaBufSupported, boolean dmaBufEnabled, boolean peermemLoaded, boolean peermemEnabled) {

    /** Everything available and allowed. */
    public static RegCapabilities all() {
        return new RegCapabilities(true, true, true, true);
    }

    /** A copy with DMA-BUF switched off by setting; the hardware capability is kept for the evidence. */
    public RegCapabilities withDmaBufDisabled() {
        return new RegCapabilities(dmaBufSupported, false, peermemLoaded, peermemEnabled);
    }

    /** A copy with the peermem pointer path switched off by setting. */
    public RegCapabilities withPeermemDisabled() {
        return new RegCapabilities(dmaBufSupported, dmaBufEnabled, peermemLoaded, false);
    }
}
