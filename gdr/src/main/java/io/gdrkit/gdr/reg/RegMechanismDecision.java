/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

/**
 * The DMA-BUF versus peermem branch NCCL's IB transport takes when it registers GPU memory: DMA-BUF first when
 * it is supported and enabled (no out-of-tree kernel module needed), else the plain pointer when peermem is
 * loaded, else nothing. A setting can only narrow what the platform offers, never add to it.
 *
 * @param mechanism the branch taken
 * @param evidence  the inputs and why the other branches were not taken
 */
public record RegMechanismDecision(RegMechanism mechanism, String evidence) {

    /** Decides the branch from the capabilities. */
    public static RegMechanismDecision decide(final RegCapabilities caps) {
        final String dmaBuf = caps.dmaBufSupported()
            ? (caps.dmaBufEnabled() ? "DMA-BUF supported and enabled" : "DMA-BUF supported but disabled by setting")
            : (caps.dmaBufEnabled() ? "DMA-BUF not supported" : "DMA-BUF not supported and disabled by setting");
        final String peermem = caps.peermemLoaded()
            ? (caps.peermemEnabled() ? "peermem loaded and enabled" : "peermem loaded but disabled by setting")
            : (caps.peermemEnabled() ? "peermem not loaded" : "peermem not loaded and disabled by setting");

        final RegMechanism mechanism;
        if (caps.dmaBufSupported() && caps.dmaBufEnabled()) {
            mechanism = RegMechanism.DMABUF_FD;
        } else if (caps.peermemLoaded() && caps.peermemEnabled()) {
            mechanism = RegMechanism.PEERMEM_POINTER;
        } else {
            mechanism = RegMechanism.NONE;
        }
        return new RegMechanismDecision(mechanism, mechanism + ": " + dmaBuf + "; " + peermem);
    }
}
