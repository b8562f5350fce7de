/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

/**
 * Settings that change path computation, named after NCCL's variables.
 *
 * @param nvbDisable       NCCL_NVB_DISABLE: no NVLink routing through an intermediate GPU (no NVB paths).
 * @param pxnDisable       NCCL_PXN_DISABLE: no GPU-to-NIC relay through an NVLink peer (no PXN paths).
 * @param pxnC2c           NCCL_PXN_C2C (default on in NCCL 2.30): a relay GPU may reach the NIC over P2C, not only
 *                         PXB or closer.
 * @param divertWithoutGdr apply NCCL's last step: when GDR is not possible between a GPU and a NIC (either node
 *                         has attribute {@code gdr="0"}, or the distance exceeds the GDR level) route that pair
 *                         through the GPU's CPU. Off by default so that the matrices show the physical distance
 *                         the GDR gate compares.
 * @param gdrLevel         NCCL_NET_GDR_LEVEL; {@link GdrLevel#DEFAULT} means NCCL's default (P2C with
 *                         NCCL_NET_GDR_C2C, else PXB).
 * @param netGdrC2c        NCCL_NET_GDR_C2C (default on).
 * @param gdrRead          NCCL_NET_GDR_READ: 1, 0, or negative for NCCL's default rule; PXN needs GDR read for the
 *                         relay GPU.
 * @param ibHca            NCCL_IB_HCA: the NICs NCCL's IB transport uses; the others are no GPU's local NIC, relay
 *                         nothing and get no GDR.
 */
public record PathOptions(
    boolean nvbDisable,
    boolean pxnDisable,
    boolean pxnC2c,
    boolean divertWithoutGdr,
    GdrLevel gdrLevel,
    boolean netGdrC2c,
    int gdrRead,
    IbHcaFilter ibHca)
{
    /** NCCL 2.30's defaults: NVB and PXN on, PXN_C2C on, NET_GDR_C2C on, GDR read by NCCL's rule; no diversion. */
    public static final PathOptions DEFAULTS =
        new PathOptions(false, false, true, false, GdrLevel.DEFAULT, true, -2, IbHcaFilter.ALL);

    /**
     * @param disable true to turn PXN off.
     * @return a copy with NCCL_PXN_DISABLE set.
     */
    public PathOptions withPxnDisable(final boolean disable)
    {
        return new PathOptions(nvbDisable, disable, pxnC2c, divertWithoutGdr, gdrLevel, netGdrC2c, gdrRead, ibHca);
    }

    /**
     * @param disable true to turn NVB off.
     * @return a copy with NCCL_NVB_DISABLE set.
     */
    public PathOptions withNvbDisable(final boolean disable)
    {
        return new PathOptions(disable, pxnDisable, pxnC2c, divertWithoutGdr, gdrLevel, netGdrC2c, gdrRead, ibHca);
    }

    /**
     * @param enable NCCL_PXN_C2C.
     * @return a copy with NCCL_PXN_C2C set.
     */
    public PathOptions withPxnC2c(final boolean enable)
    {
        return new PathOptions(nvbDisable, pxnDisable, enable, divertWithoutGdr, gdrLevel, netGdrC2c, gdrRead, ibHca);
    }

    /**
     * @param divert true to route non-GDR GPU-NIC pairs through the CPU.
     * @param level  the GDR level.
     * @return a copy with GDR diversion set.
     */
    public PathOptions withDivertWithoutGdr(final boolean divert, final GdrLevel level)
    {
        return new PathOptions(nvbDisable, pxnDisable, pxnC2c, divert, level, netGdrC2c, gdrRead, ibHca);
    }

    /**
     * @param level the GDR level (NCCL_NET_GDR_LEVEL).
     * @return a copy with the level set.
     */
    public PathOptions withGdrLevel(final GdrLevel level)
    {
        return new PathOptions(nvbDisable, pxnDisable, pxnC2c, divertWithoutGdr, level, netGdrC2c, gdrRead, ibHca);
    }

    /**
     * @param enable NCCL_NET_GDR_C2C.
     * @return a copy with NCCL_NET_GDR_C2C set.
     */
    public PathOptions withNetGdrC2c(final boolean enable)
    {
        return new PathOptions(nvbDisable, pxnDisable, pxnC2c, divertWithoutGdr, gdrLevel, enable, gdrRead, ibHca);
    }

    /**
     * @param read NCCL_NET_GDR_READ (1, 0, or negative for the default rule).
     * @return a copy with NCCL_NET_GDR_READ set.
     */
    public PathOptions withGdrRead(final int read)
    {
        return new PathOptions(nvbDisable, pxnDisable, pxnC2c, divertWithoutGdr, gdrLevel, netGdrC2c, read, ibHca);
    }

    /**
     * @param filter NCCL_IB_HCA.
     * @return a copy with NCCL_IB_HCA set.
     */
    public PathOptions withIbHca(final IbHcaFilter filter)
    {
        return new PathOptions(nvbDisable, pxnDisable, pxnC2c, divertWithoutGdr, gdrLevel, netGdrC2c, gdrRead,
            filter == null ? IbHcaFilter.ALL : filter);
    }
}
