package io.gdrkit.gdr.topo;

/**
 * Settings that change path computation, named after NCCL's variables.
 *
 * @param nvbDisable       NCCL_NVB_DISABLE: no NVLink routing through an intermediate GPU (no NVB paths).
 * @param pxnDisable       NCCL_PXN_DISABLE: no GPU-to-NIC relay through an NVLink peer (no PXN paths).
 * @param pxnC2c           NCCL_PXN_C2C: a relay GPU may reach the NIC over P2C, not only PXB or closer.
 * @param divertWithoutGdr apply NCCL's last step: when GDR is not possible between a GPU and a NIC (either node
 *                         has attribute {@code gdr="0"}, or the distance exceeds {@code gdrLevel}) route that pair
 *                         through the GPU's CPU. Off by default so that the matrices show the physical distance
 *                         the GDR gate compares; the gate itself lives outside the topology.
 * @param gdrLevel         the GDR level used by {@code divertWithoutGdr}.
 * @param netGdrC2c        NCCL_NET_GDR_C2C (default on): a P2C GPU-NIC pair counts as C2C for the GDR distance.
 */
public record PathOptions(
    boolean nvbDisable,
    boolean pxnDisable,
    boolean pxnC2c,
    boolean divertWithoutGdr,
    GdrLevel gdrLevel,
    boolean netGdrC2c)
{
    /** NCCL's defaults: NVB and PXN on, PXN_C2C off, NET_GDR_C2C on; no GDR diversion. */
    public static final PathOptions DEFAULTS =
        new PathOptions(false, false, false, false, GdrLevel.DEFAULT, true);

    /**
     * @param disable true to turn PXN off.
     * @return a copy with NCCL_PXN_DISABLE set.
     */
    public PathOptions withPxnDisable(final boolean disable)
    {
        return new PathOptions(nvbDisable, disable, pxnC2c, divertWithoutGdr, gdrLevel, netGdrC2c);
    }

    /**
     * @param disable true to turn NVB off.
     * @return a copy with NCCL_NVB_DISABLE set.
     */
    public PathOptions withNvbDisable(final boolean disable)
    {
        return new PathOptions(disable, pxnDisable, pxnC2c, divertWithoutGdr, gdrLevel, netGdrC2c);
    }

    /**
     * @param divert true to route non-GDR GPU-NIC pairs through the CPU.
     * @param level  the GDR level.
     * @return a copy with GDR diversion set.
     */
    public PathOptions withDivertWithoutGdr(final boolean divert, final GdrLevel level)
    {
        return new PathOptions(nvbDisable, pxnDisable, pxnC2c, divert, level, netGdrC2c);
    }

    /**
     * @param enable NCCL_NET_GDR_C2C.
     * @return a copy with NCCL_NET_GDR_C2C set.
     */
    public PathOptions withNetGdrC2c(final boolean enable)
    {
        return new PathOptions(nvbDisable, pxnDisable, pxnC2c, divertWithoutGdr, gdrLevel, enable);
    }
}
