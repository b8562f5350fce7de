/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.gdr.config.GdrConfiguration;
import io.gdrkit.gdr.reg.RegCapabilities;
import io.gdrkit.gdr.reg.RegMechanism;
import io.gdrkit.gdr.reg.RegMechanismDecision;
import io.gdrkit.gdr.topo.GdrLevel;
import io.gdrkit.gdr.topo.IbHcaFilter;
import io.gdrkit.gdr.topo.PathType;
import java.util.ArrayList;
import java.util.List;

/**
 * NCCL's GPUDirect RDMA gates (transport/net_ib.cc ncclIbGdrSupport / ncclIbDmaBufSupport and graph/paths.cc
 * ncclTopoCheckGdr), each checked in turn and recorded as evidence. GDR is allowed only when every gate passes:
 * NCCL_IB_HCA selecting the HCA (net_ib/init.cc: an HCA it leaves out is not a NET device at all),
 * GPU support (attribute 116), NET ptrSupport (peermem, or DMA-BUF when enabled, registered by the provider, driver
 * >= 11.7 and attribute 124 = 1), distance <= the GDR level (NCCL 2.30's rule, {@link GdrLevel#effective}: P2C by
 * default with NCCL_NET_GDR_C2C=1; the intermediate GPU's distance for PXN), the send
 * (read) policy, and finally the connector's registration succeeding. Settings only narrow: no setting turns on a
 * gate the hardware fails.
 */
public final class GdrGate {
    /** CUDA 11.7 as cuDriverGetVersion reports it: NCCL's floor for DMA-BUF. */
    public static final int DMABUF_MIN_DRIVER = 11070;

    private GdrGate() {
    }

    /**
     * @param distance the GPU-NIC path type (for PXN: pass the path through the intermediate GPU as
     *                 {@code viaPxn}, and that GPU's own distance to the NIC as {@code distance})
     */
    public static GdrDecision decide(final GpuCaps gpu, final NetCaps net, final PathType distance,
                                     final boolean viaPxn, final boolean read, final GdrSettings s) {
        final List<String> ev = new ArrayList<>();
        final String hca = "HCA " + net.dev() + " '" + net.name() + "'";
        // gate 0: NCCL_IB_HCA selects the HCAs the IB transport uses at all
        final IbHcaFilter filter = s.ibHca() == null ? IbHcaFilter.ALL : s.ibHca();
        if (!filter.accepts(net.name(), -1)) {
            ev.add(IbHcaFilter.ENV + ": " + net.name() + " is not used: " + filter.describe());
            return off(gpu, net, read, ev, IbHcaFilter.ENV, "HCA " + net.dev() + " '" + net.name()
                + "' not used: " + filter.describe());
        }
        if (!filter.selectsAll()) {
            ev.add(IbHcaFilter.ENV + ": " + net.name() + " selected by " + filter.describe());
        }
        // gate 1: the GPU
        ev.add("GPU " + gpu.ordinal() + " attribute 116 (GPU_DIRECT_RDMA_SUPPORTED) = " + (gpu.gdrSupported() ? 1 : 0)
            + " [" + gpu.source() + "]");
        if (!gpu.gdrSupported()) {
            return off(gpu, net, read, ev, "GPU", "GPU Direct RDMA Disabled for GPU " + gpu.ordinal()
                + " (attribute 116 = 0)");
        }
        // gate 2: the NET device can register GPU memory (ptrSupport)
        final RegMechanism mechanism = mechanism(gpu, net, s, ev);
        if (mechanism == RegMechanism.NONE) {
            return off(gpu, net, read, ev, "NET", "GPU Direct RDMA Disabled for " + hca
                + " (no nv_peer_mem/nvidia_peermem and no usable DMA-BUF)");
        }
        // gate 3: the send (read) policy
        if (read) {
            if (s.gdrRead() == 0) {
                ev.add(GdrSettings.GDR_READ + "=0: sends do not read GPU memory");
                return off(gpu, net, true, ev, "read policy", "GPU Direct RDMA Disabled for GPU " + gpu.ordinal()
                    + " / " + hca + " (" + GdrConfiguration.NET_GDR_READ.name() + "=0)");
            }
            if (s.gdrRead() < 0 && gpu.computeCap() < 80 && !gpu.nvlinkPeer() && !gpu.singleGpu()) {
                ev.add("default read policy: compute capability " + gpu.computeCap()
                    + " < 8.0 needs an NVLink peer or a single GPU; neither");
                return off(gpu, net, true, ev, "read policy", "GPU Direct RDMA Disabled for GPU " + gpu.ordinal()
                    + " / " + hca + " (read, cc " + gpu.computeCap() + " < 80 without NVLink peer)");
            }
            ev.add("read policy: " + (s.gdrRead() > 0 ? io.gdrkit.gdr.config.GdrConfiguration.NET_GDR_READ.name()
                + "=1" : "default, cc " + gpu.computeCap()
                + (gpu.computeCap() >= 80 ? " >= 8.0" : gpu.nvlinkPeer() ? ", NVLink peer" : ", single GPU")));
        }
        // gate 4: distance
        final GdrLevel level = s.gdrLevel();
        ev.add("distance " + distance + (viaPxn ? " (PXN: the intermediate GPU's distance)" : "") + ", level "
            + level);
        if (!level.allows(distance)) {
            return off(gpu, net, read, ev, "distance", "GPU Direct RDMA Disabled for GPU " + gpu.ordinal() + " / "
                + hca + " (distance " + distance + " > " + level.path() + ")");
        }
        return new GdrDecision(gpu.ordinal(), net.dev(), read, true, mechanism, "", List.copyOf(ev),
            "GPU Direct RDMA Enabled for GPU " + gpu.ordinal() + " / " + hca + " (distance " + distance + " <= "
                + level.path() + "), read " + (read ? 1 : 0) + ", via " + mechanism.label());
    }

    /**
     * The last gate, connector success: the connector had to register the GPU buffer and make the connection's
     * GDR resources; when that failed, GDR is off for this connection and it bounces through host memory.
     *
     * @param why what failed, e.g. "registration: ibv_reg_dmabuf_mr on soft1: ENOMEM: ..."
     */
    public static GdrDecision afterConnect(final GdrDecision d, final boolean connected, final String why) {
        if (!d.enabled() || connected) {
            return d;
        }
        final List<String> ev = new ArrayList<>(d.evidence());
        ev.add("connector gate failed: " + why + " -> host bounce");
        return new GdrDecision(d.gpu(), d.nic(), d.read(), false, RegMechanism.NONE, "connector", List.copyOf(ev),
            "GPU Direct RDMA Disabled for GPU " + d.gpu() + " / HCA " + d.nic() + " (connector: " + why + ")");
    }

    /**
     * What the gates see of the two registration mechanisms: DMA-BUF is supported when the provider registers it
     * (the fd = -1 probe), the driver is at least 11.7 and attribute 124 is set, and enabled by NCCL_DMABUF_ENABLE;
     * peermem is the provider's pointer registration (no setting switches it off).
     */
    public static RegCapabilities regCapabilities(final GpuCaps gpu, final NetCaps net, final GdrSettings s) {
        return new RegCapabilities(net.dmabufProvider() && gpu.driverVersion() >= DMABUF_MIN_DRIVER
            && gpu.dmabufSupported(), s.dmabufEnable(), net.peermem(), true);
    }

    private static RegMechanism mechanism(final GpuCaps gpu, final NetCaps net, final GdrSettings s,
                                          final List<String> ev) {
        final boolean driverOk = gpu.driverVersion() >= DMABUF_MIN_DRIVER;
        final RegCapabilities caps = regCapabilities(gpu, net, s);
        ev.add("DMA-BUF: " + GdrSettings.DMABUF_ENABLE + "=" + (s.dmabufEnable() ? 1 : 0) + ", provider "
            + (net.dmabufProvider() ? "yes" : "no") + " [" + net.dmabufEvidence() + "], driver " + gpu.driverVersion()
            + (driverOk ? " >= " : " < ") + DMABUF_MIN_DRIVER + ", attribute 124 = " + (gpu.dmabufSupported() ? 1 : 0)
            + " -> " + (caps.dmaBufSupported() && caps.dmaBufEnabled() ? "usable" : "not usable"));
        ev.add("peermem: " + (net.peermem() ? "present" : "absent") + " [" + net.peermemEvidence() + "]");
        final RegMechanismDecision d = RegMechanismDecision.decide(caps);
        ev.add("registration branch: " + d.evidence());
        return d.mechanism();
    }

    private static GdrDecision off(final GpuCaps gpu, final NetCaps net, final boolean read, final List<String> ev,
                                   final String gate, final String log) {
        return new GdrDecision(gpu.ordinal(), net.dev(), read, false, RegMechanism.NONE, gate, List.copyOf(ev), log);
    }
}
