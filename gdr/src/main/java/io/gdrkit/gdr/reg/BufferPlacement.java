/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

/**
 * Where one direction of a NET connection keeps its buffers, decided as NCCL's proxy connect does.
 *
 * <ul>
 *   <li>Bulk data goes to GPU memory only when GDR is allowed for this direction; otherwise it is staged in
 *       pinned host memory (the host bounce) and copied by the GPU.</li>
 *   <li>Shared buffers (p2p) come from the per-peer pool, in the same memory the private ones would use.</li>
 *   <li>The sync words (the receive tail) go to {@link BufferKind#GDCMEM} only when GDRCopy is present and the
 *       data is on the GPU: without GDRCopy the CPU proxy cannot write GPU memory cheaply, so they stay in
 *       host memory.</li>
 * </ul>
 *
 * @param data     the bank holding the data buffers
 * @param sync     the bank holding the sync words (tail/head)
 * @param evidence why, in one line: the inputs and the rule that fired
 */
public record BufferPlacement(BufferKind data, BufferKind sync, String evidence) {

    /**
     * Decides the placement.
     *
     * @param gdr     GDR allowed for this direction (all gates passed)
     * @param shared  the connection uses the shared per-peer buffer pool
     * @param gdrCopy GDRCopy is available (driver and library)
     * @return the placement with its evidence
     */
    public static BufferPlacement decide(final boolean gdr, final boolean shared, final boolean gdrCopy) {
        final BufferKind data;
        final String dataWhy;
        if (gdr) {
            data = shared ? BufferKind.SHARED_DEVMEM : BufferKind.DEVMEM;
            dataWhy = "GDR allowed: the NIC reaches GPU memory directly";
        } else {
            data = shared ? BufferKind.SHARED_HOSTMEM : BufferKind.HOSTMEM;
            dataWhy = "GDR not allowed: host bounce through pinned host memory";
        }

        final BufferKind sync;
        final String syncWhy;
        if (gdr && gdrCopy) {
            sync = BufferKind.GDCMEM;
            syncWhy = "GDRCopy present: sync words in GPU memory mapped for the CPU";
        } else if (gdrCopy) {
            sync = BufferKind.HOSTMEM;
            syncWhy = "GDRCopy present but unused: data is not on the GPU";
        } else {
            sync = BufferKind.HOSTMEM;
            syncWhy = "GDRCopy absent: sync words in host memory";
        }

        final String evidence = "gdr=" + gdr + " shared=" + shared + " gdrcopy=" + gdrCopy +
            " -> data " + data + " (" + dataWhy + "), sync " + sync + " (" + syncWhy + ")";
        return new BufferPlacement(data, sync, evidence);
    }

    /** True when the data is staged in host memory rather than read/written by the NIC in GPU memory. */
    public boolean hostBounce() {
        return !data.onDevice();
    }
}
