/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

/** How GPU memory is handed to the NIC when it is registered. */
public enum RegMechanism {
    /** {@code ibv_reg_dmabuf_mr} with a DMA-BUF file descriptor exported by the GPU driver. */
    DMABUF_FD("DMA-BUF"),
    /** {@code ibv_reg_mr} with the GPU virtual address; the peermem kernel module pins the pages. */
    PEERMEM_POINTER("peermem"),
    /** Neither is usable: GPU memory cannot be registered, the connection falls back to the host bounce. */
    NONE("none");

    private final String label;

    RegMechanism(final String label) {
        this.label = label;
    }

    /** The short name log lines use: "DMA-BUF", "peermem", "none". */
    public String label() {
        return label;
    }
}
