package io.gdrkit.gdr.gate;

import io.gdrkit.gdr.topo.GdrLevel;
import io.gdrkit.gdr.topo.PathType;
import java.util.ArrayList;
import java.util.List;

/**
 * NCCL's GPUDirect RDMA gates (transport/net_ib.cc ncclIbGdrSupport / ncclIbDmaBufSupport and graph/paths.cc
 * ncclTopoCheckGdr), each checked in turn and recorded as evidence. GDR is allowed only when every gate passes:
 * GPU support (attribute 116), NET ptrSupport (peermem, or DMA-BUF when enabled, registered by the provider, driver
 * >= 11.7 and attribute 124 = 1), distance <= NCCL_NET_GDR_LEVEL (the intermediate GPU's distance for PXN), the send
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
        // gate 1: the GPU
        ev.add("GPU " + gpu.ordinal() + " attribute 116 (GPU_DIRECT_RDMA_SUPPORTED) = " + (gpu.gdrSupported() ? 1 : 0)
            + " [" + gpu.source() + "]");
        if (!gpu.gdrSupported()) {
            return off(gpu, net, read, ev, "GPU Direct RDMA Disabled for GPU " + gpu.ordinal()
                + " (attribute 116 = 0)");
        }
        // gate 2: the NET device can register GPU memory (ptrSupport)
        final String mechanism = mechanism(gpu, net, s, ev);
        if (mechanism.equals("none")) {
            return off(gpu, net, read, ev, "GPU Direct RDMA Disabled for " + hca
                + " (no nv_peer_mem/nvidia_peermem and no usable DMA-BUF)");
        }
        // gate 3: the send (read) policy
        if (read) {
            if (s.gdrRead() == 0) {
                ev.add(GdrSettings.GDR_READ + "=0: sends do not read GPU memory");
                return off(gpu, net, true, ev, "GPU Direct RDMA Disabled for GPU " + gpu.ordinal() + " / " + hca
                    + " (NCCL_NET_GDR_READ=0)");
            }
            if (s.gdrRead() < 0 && gpu.computeCap() < 80 && !gpu.nvlinkPeer() && !gpu.singleGpu()) {
                ev.add("default read policy: compute capability " + gpu.computeCap()
                    + " < 8.0 needs an NVLink peer or a single GPU; neither");
                return off(gpu, net, true, ev, "GPU Direct RDMA Disabled for GPU " + gpu.ordinal() + " / " + hca
                    + " (read, cc " + gpu.computeCap() + " < 80 without NVLink peer)");
            }
            ev.add("read policy: " + (s.gdrRead() > 0 ? "NCCL_NET_GDR_READ=1" : "default, cc " + gpu.computeCap()
                + (gpu.computeCap() >= 80 ? " >= 8.0" : gpu.nvlinkPeer() ? ", NVLink peer" : ", single GPU")));
        }
        // gate 4: distance
        final GdrLevel level = s.gdrLevel();
        ev.add("distance " + distance + (viaPxn ? " (PXN: the intermediate GPU's distance)" : "") + ", level "
            + level);
        if (!level.allows(distance)) {
            return off(gpu, net, read, ev, "GPU Direct RDMA Disabled for GPU " + gpu.ordinal() + " / " + hca
                + " (distance " + distance + " > " + level.path() + ")");
        }
        return new GdrDecision(gpu.ordinal(), net.dev(), read, true, mechanism, List.copyOf(ev),
            "GPU Direct RDMA Enabled for GPU " + gpu.ordinal() + " / " + hca + " (distance " + distance + " <= "
                + level.path() + "), read " + (read ? 1 : 0) + ", via " + mechanism);
    }

    /** The last gate: the connector had to register the buffer; if it failed, GDR is off for this connection. */
    public static GdrDecision afterConnect(final GdrDecision d, final boolean registered, final String why) {
        if (!d.enabled() || registered) {
            return d;
        }
        final List<String> ev = new ArrayList<>(d.evidence());
        ev.add("connector: registration failed: " + why + " -> host bounce");
        return new GdrDecision(d.gpu(), d.nic(), d.read(), false, "none", List.copyOf(ev),
            "GPU Direct RDMA Disabled for GPU " + d.gpu() + " / HCA " + d.nic() + " (connector: " + why + ")");
    }

    private static String mechanism(final GpuCaps gpu, final NetCaps net, final GdrSettings s,
                                    final List<String> ev) {
        final boolean driverOk = gpu.driverVersion() >= DMABUF_MIN_DRIVER;
        final boolean dmabuf = s.dmabufEnable() && net.dmabufProvider() && driverOk && gpu.dmabufSupported();
        ev.add("DMA-BUF: " + GdrSettings.DMABUF_ENABLE + "=" + (s.dmabufEnable() ? 1 : 0) + ", provider "
            + (net.dmabufProvider() ? "yes" : "no") + " [" + net.dmabufEvidence() + "], driver " + gpu.driverVersion()
            + (driverOk ? " >= " : " < ") + DMABUF_MIN_DRIVER + ", attribute 124 = " + (gpu.dmabufSupported() ? 1 : 0)
            + " -> " + (dmabuf ? "usable" : "not usable"));
        ev.add("peermem: " + (net.peermem() ? "present" : "absent") + " [" + net.peermemEvidence() + "]");
        return dmabuf ? "DMA-BUF" : net.peermem() ? "peermem" : "none";
    }

    private static GdrDecision off(final GpuCaps gpu, final NetCaps net, final boolean read, final List<String> ev,
                                   final String log) {
        return new GdrDecision(gpu.ordinal(), net.dev(), read, false, "none", List.copyOf(ev), log);
    }
}
