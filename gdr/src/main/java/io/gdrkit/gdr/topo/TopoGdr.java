/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import io.gdrkit.gdr.config.GdrConfiguration;
import java.util.ArrayList;
import java.util.List;

/**
 * NCCL's ncclTopoCheckGdr (graph/paths.cc) for a GPU and a NIC of a topology description, in NCCL's order: NIC
 * support, GPU support, the read policy (for sends), then the distance. A description may not say whether a device
 * supports GDR, so each gate answers yes, no or unknown, and the decision is no when any gate is certainly closed,
 * unknown when none is closed but one is unknown, and yes only when every gate is open. How GPU memory would be
 * registered (DMA-BUF or peermem) is not in any topology source, so the mechanism is always {@code unknown} here;
 * {@code gdrkit doctor} asks the devices.
 */
public final class TopoGdr
{
    private TopoGdr()
    {
    }

    /** A gate's answer. */
    public enum Tri
    {
        /** Open. */
        YES,
        /** Closed. */
        NO,
        /** The source does not say. */
        UNKNOWN;

        /**
         * @return true, false or the string "unknown", for JSON.
         */
        public Object json()
        {
            return this == UNKNOWN ? "unknown" : this == YES;
        }
    }

    /**
     * A device's GDR support as the source gives it.
     *
     * @param value    yes, no or unknown.
     * @param evidence where the answer comes from.
     */
    public record Support(Tri value, String evidence)
    {
    }

    /**
     * One decision.
     *
     * @param gpu       the GPU.
     * @param nic       the NIC.
     * @param read      true for sends (the NIC reads GPU memory), false for receives.
     * @param enabled   yes, no or unknown.
     * @param gate      the first closed gate ("NCCL_IB_HCA", "NIC", "GPU", "read policy", "distance"), or "" when none is.
     * @param distance  the distance compared with the level (the relay GPU's for PXN).
     * @param level     the GDR level used.
     * @param relay     the PXN relay GPU, or null.
     * @param mechanism how GPU memory would be registered: always "unknown" from a topology description.
     * @param reason    an NCCL-style log line with the reason.
     * @param evidence  every gate's answer with its source.
     */
    public record Decision(
        TopoNode gpu, TopoNode nic, boolean read, Tri enabled, String gate, PathType distance, PathType level,
        TopoNode relay, String mechanism, String reason, List<String> evidence)
    {
    }

    /**
     * @param nic a NIC.
     * @return its GDR support: the {@code gdr} attribute of its {@code <net>}; unknown when the {@code <net>} has
     *     none (NCCL takes it from its network plugin), for a bare PCI NIC, or a source without the attribute.
     */
    public static Support nicSupport(final TopoNode nic)
    {
        final String gdr = nic.attributes().get("gdr");
        if (gdr != null)
        {
            final Tri v = nic.intAttribute("gdr", 0) != 0 ? Tri.YES : Tri.NO;
            return new Support(v, "NIC gdr=\"" + gdr.trim() + "\" in " + sourceOf(nic));
        }
        if (nic.attributes().containsKey("#net"))
        {
            return new Support(Tri.UNKNOWN, "<net> has no gdr attribute: the file does not hold it; NCCL fills it " +
                "from its network plugin at run time (topo.cc xmlInitAttrInt on the NICs it detects; a <net> the " +
                "plugin does not find is dropped)");
        }
        if (nic.attributes().containsKey("#bare"))
        {
            return new Support(Tri.UNKNOWN, "bare <pci> NIC: NCCL takes gdr from its network plugin at run time");
        }
        return new Support(Tri.UNKNOWN, "the source carries no NIC GDR support");
    }

    /**
     * @param gpu a GPU.
     * @return its GDR support: the {@code gdr} attribute of its {@code <gpu>}, unknown when the source has none
     *     (NCCL requires it and fills it from the CUDA driver at run time).
     */
    public static Support gpuSupport(final TopoNode gpu)
    {
        final String gdr = gpu.attributes().get("gdr");
        if (gdr != null)
        {
            return new Support(gpu.intAttribute("gdr", 0) != 0 ? Tri.YES : Tri.NO,
                "GPU gdr=\"" + gdr.trim() + "\" in " + sourceOf(gpu));
        }
        if (gpu.attributes().containsKey("#bare"))
        {
            return new Support(Tri.UNKNOWN, "bare <pci> GPU: NCCL fills <gpu gdr> from the CUDA driver at run time");
        }
        if (gpu.attributes().containsKey("#gpu"))
        {
            return new Support(Tri.UNKNOWN, "<gpu> has no gdr attribute: NCCL fills it from the CUDA driver at " +
                "run time");
        }
        return new Support(Tri.UNKNOWN, "the source carries no GPU GDR support");
    }

    private static String sourceOf(final TopoNode node)
    {
        return node.attributes().containsKey("#net") ? "<net>" : node.attributes().containsKey("#gpu") ? "<gpu>" :
            "the source";
    }

    /**
     * @param paths   the paths.
     * @param gpu     a GPU.
     * @param nic     a NIC.
     * @param read    true for sends (NIC reads GPU memory).
     * @param level   NCCL_NET_GDR_LEVEL, or {@link GdrLevel#DEFAULT}.
     * @param gdrRead NCCL_NET_GDR_READ: 1, 0, or negative for NCCL's default rule.
     * @return the decision with its evidence.
     */
    public static Decision decide(
        final TopoPaths paths, final TopoNode gpu, final TopoNode nic, final boolean read, final GdrLevel level,
        final int gdrRead)
    {
        final List<String> evidence = new ArrayList<>();
        final List<String> unknown = new ArrayList<>();
        final GdrDistanceCheck dist = paths.gdrDistance(gpu, nic, level);
        final String who = who(gpu, nic);
        final String name = who + ", distance " + dist.distance() +
            (dist.path().intermediate() != null ? " via GPU " + dist.path().intermediate().dev() + " (PXN)" : "");

        final IbHcaFilter hca = paths.options().ibHca();
        if (!hca.accepts(nic))
        {
            evidence.add(IbHcaFilter.ENV + ": " + nic.id() + " is not used: " + hca.describe());
            return off(gpu, nic, read, IbHcaFilter.ENV, dist, evidence, who + " (not selected by " + hca.describe() +
                ")");
        }
        if (!hca.selectsAll() && nic.attributes().containsKey("#bare"))
        {
            unknown.add(IbHcaFilter.ENV + "=" + hca.raw() + " matches device names, and this bare NIC has none in the file");
        }
        final Support nicSup = nicSupport(nic);
        evidence.add("NIC: " + nicSup.value() + " [" + nicSup.evidence() + "]");
        if (nicSup.value() == Tri.NO)
        {
            return off(gpu, nic, read, "NIC", dist, evidence, who + " (NIC: " + nicSup.evidence() + ")");
        }
        if (nicSup.value() == Tri.UNKNOWN)
        {
            unknown.add("NIC support unknown (" + nicSup.evidence() + ")");
        }
        final Support gpuSup = gpuSupport(gpu);
        evidence.add("GPU: " + gpuSup.value() + " [" + gpuSup.evidence() + "]");
        if (gpuSup.value() == Tri.NO)
        {
            return off(gpu, nic, read, "GPU", dist, evidence, who + " (GPU: " + gpuSup.evidence() + ")");
        }
        if (gpuSup.value() == Tri.UNKNOWN)
        {
            unknown.add("GPU support unknown (" + gpuSup.evidence() + ")");
        }
        if (read)
        {
            final Tri policy = readPolicy(paths, gpu, gdrRead, evidence);
            if (policy == Tri.NO)
            {
                return off(gpu, nic, true, "read policy", dist, evidence, who + " (" + evidence.getLast() + ")");
            }
            if (policy == Tri.UNKNOWN)
            {
                unknown.add(evidence.getLast());
            }
        }
        evidence.add("distance " + dist.distance() + (dist.path().intermediate() != null ?
            " (PXN: the relay GPU " + dist.path().intermediate().dev() + "'s distance)" : "") + ", level " +
            dist.level());
        if (!dist.allowed())
        {
            final TopoNode relay = dist.path().intermediate() == null ? nvmlPxnRelay(paths, gpu, nic, dist) : null;
            if (relay != null)
            {
                final PathType relayDistance = paths.type(relay, nic);
                final String lacks = "the file lists no <nvlink> for GPU " +
                    (gpu.nvlinkUnknown() && relay.nvlinkUnknown() ? gpu.dev() + " nor GPU " + relay.dev() :
                        (gpu.nvlinkUnknown() ? gpu : relay).dev());
                evidence.add("distance: unknown: " + lacks + "; NCCL looks NVLink up with NVML at run time " +
                    "(xml.cc), and with NVLink between them routes this pair through PXN relay GPU " + relay.dev() +
                    " (distance " + relayDistance + " <= " + dist.level().path() + "); without NVLink, distance " +
                    dist.distance() + " > " + dist.level().path());
                unknown.add(evidence.getLast());
                return new Decision(gpu, nic, read, Tri.UNKNOWN, "", dist.distance(), dist.level().path(), null,
                    "unknown", "GPU Direct RDMA unknown for " + who + ", distance " + dist.distance() + " > " +
                    dist.level().path() + " unless NVLink to GPU " + relay.dev() + " (PXN, " + relayDistance +
                    "): " + String.join("; ", unknown), List.copyOf(evidence));
            }
            return off(gpu, nic, read, "distance", dist, evidence,
                who + " (distance " + dist.distance() + " > " + dist.level().path() + ")");
        }
        final String mechanism = "unknown";
        if (!unknown.isEmpty())
        {
            return new Decision(gpu, nic, read, Tri.UNKNOWN, "", dist.distance(), dist.level().path(),
                dist.path().intermediate(), mechanism, "GPU Direct RDMA unknown for " + name + " <= " +
                dist.level().path() + ": " + String.join("; ", unknown), List.copyOf(evidence));
        }
        return new Decision(gpu, nic, read, Tri.YES, "", dist.distance(), dist.level().path(),
            dist.path().intermediate(), mechanism, "GPU Direct RDMA Enabled for " + name + " <= " +
            dist.level().path() + ", read " + (read ? 1 : 0) + "; mechanism unknown: no topology source says " +
            "DMA-BUF or peermem", List.copyOf(evidence));
    }

    /**
     * @return how a reason names the pair: {@code GPU 0 (0000:01:00.0) / HCA 3 'mlx5_3'}.
     */
    static String who(final TopoNode gpu, final TopoNode nic)
    {
        return "GPU " + gpu.dev() + " (" + gpu.busId() + ") / HCA " + nic.dev() + " '" + nic.id() + "'";
    }

    static Tri readPolicy(
        final TopoPaths paths, final TopoNode gpu, final int gdrRead, final List<String> evidence)
    {
        if (gdrRead == 0)
        {
            evidence.add("read policy: " + GdrConfiguration.NET_GDR_READ_NAME + "=0: sends do not read GPU memory");
            return Tri.NO;
        }
        if (gdrRead > 0)
        {
            evidence.add("read policy: " + GdrConfiguration.NET_GDR_READ_NAME + "=" + gdrRead);
            return Tri.YES;
        }
        final String sm = gpu.attributes().get("sm");
        if (sm != null && gpu.intAttribute("sm", 0) >= 80)
        {
            evidence.add("read policy: default, compute capability sm=" + sm + " >= 80");
            return Tri.YES;
        }
        final List<TopoNode> gpus = paths.system().gpus();
        boolean nvlink = gpus.size() == 1;
        for (final TopoNode other : gpus)
        {
            nvlink |= other != gpu && paths.type(gpu, other) == PathType.NVL;
        }
        if (nvlink)
        {
            evidence.add("read policy: default, " + (gpus.size() == 1 ? "single GPU" : "NVLink peer") +
                (sm == null ? " (compute capability unknown, not needed)" : ", sm=" + sm));
            return Tri.YES;
        }
        final boolean nvlinkUnknown = gpus.stream().anyMatch(TopoNode::nvlinkUnknown);
        if (nvlinkUnknown)
        {
            evidence.add("read policy: unknown: " + (sm == null ? "compute capability unknown (the source gives " +
                "no sm)" : "sm=" + sm + " < 80") + " and the file lists no <nvlink> for " +
                (gpu.nvlinkUnknown() ? "this GPU" : "some GPU") + ": NCCL's default rule reads with an NVLink peer, " +
                "which NCCL looks up with NVML at run time");
            return Tri.UNKNOWN;
        }
        if (sm == null)
        {
            evidence.add("read policy: compute capability unknown (the source gives no sm) and no NVLink peer: " +
                "NCCL's default rule needs sm >= 80 here");
            return Tri.UNKNOWN;
        }
        evidence.add("read policy: default, sm=" + sm + " < 80 without an NVLink peer");
        return Tri.NO;
    }

    private static Decision off(
        final TopoNode gpu, final TopoNode nic, final boolean read, final String gate, final GdrDistanceCheck dist,
        final List<String> evidence, final String detail)
    {
        return new Decision(gpu, nic, read, Tri.NO, gate, dist.distance(), dist.level().path(),
            dist.path().intermediate(), "none", "GPU Direct RDMA Disabled for " + detail, List.copyOf(evidence));
    }

    /**
     * NCCL's PXN condition (paths.cc) for a pair whose answer hangs on NVLink the source does not give: the NIC's
     * local GPU could relay for {@code gpu} if NCCL found NVLink between them with NVML at run time.
     *
     * @return the relay, or null when the file itself rules PXN out (or both GPUs' NVLinks are known).
     */
    private static TopoNode nvmlPxnRelay(
        final TopoPaths paths, final TopoNode gpu, final TopoNode nic, final GdrDistanceCheck dist)
    {
        return nvmlPxnRelay(paths, gpu, nic, dist.level());
    }

    static TopoNode nvmlPxnRelay(
        final TopoPaths paths, final TopoNode gpu, final TopoNode nic, final GdrLevel level)
    {
        final PathOptions o = paths.options();
        final TopoNode peer = paths.localGpu(nic);
        if (o.pxnDisable() || peer == null || peer == gpu || peer.systemId() != gpu.systemId() ||
            !(gpu.nvlinkUnknown() || peer.nvlinkUnknown()) || paths.type(peer, gpu).value() <= PathType.NVL.value())
        {
            return null;
        }
        final PathType peerToNic = paths.type(peer, nic);
        final PathType gpuToNic = paths.type(gpu, nic);
        final PathType pxnType = o.pxnC2c() ? PathType.P2C : PathType.PXB;
        if (peerToNic.value() > pxnType.value() || !level.allows(peerToNic) ||
            !(paths.bandwidth(peer, nic) > paths.bandwidth(gpu, nic) || gpuToNic.value() > PathType.PXN.value()))
        {
            return null;
        }
        // the relay must be able to do GDR reads (NCCL's ncclTopoCheckGdr(peer, read=1) in the PXN condition)
        if (gpuSupport(peer).value() == Tri.NO || o.gdrRead() == 0)
        {
            return null;
        }
        final String sm = peer.attributes().get("sm");
        if (o.gdrRead() < 0 && sm != null && peer.intAttribute("sm", 0) < 80 && !peer.nvlinkUnknown() &&
            !gpu.nvlinkUnknown())
        {
            return null;
        }
        return peer;
    }
}
