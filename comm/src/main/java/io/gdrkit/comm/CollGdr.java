/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.config.GdrConfiguration;
import io.gdrkit.gdr.doctor.SimulatedHostTopology;
import io.gdrkit.gdr.gate.FlushPolicy;
import io.gdrkit.gdr.gate.GdrDecision;
import io.gdrkit.gdr.gate.GdrGate;
import io.gdrkit.gdr.gate.GpuCaps;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.gdr.reg.RegMechanism;
import io.gdrkit.gdr.topo.GdrDistanceCheck;
import io.gdrkit.gdr.topo.PathComputer;
import io.gdrkit.gdr.topo.TopoPaths;
import io.gdrkit.gdr.topo.TopoSystem;
import io.gdrkit.gpu.GpuDevice;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank's GDR decision for a collective whose buffers are on a GPU: whether the NIC reads and writes the
 * buffers' device memory directly (the device buffers registered with the NIC through the NetTransport seam) or
 * the data bounces through host memory. Made by the control plane's gates, never by the transport: both directions
 * go through {@link GdrGate#decide} (GPU attribute 116, the NIC's probed ptrSupport and DMA-BUF/peermem branch,
 * NCCL_NET_GDR_READ for the send side, the GPU-NIC distance against NCCL_NET_GDR_LEVEL), the flush through
 * {@link FlushPolicy}, and a registration that fails afterwards turns it off through {@link GdrGate#afterConnect}
 * (the connector gate). Per direction, as NCCL: the two decisions differ only in the read policy, so either both
 * pass, or the receive side passes and the send side does not (NCCL_NET_GDR_READ=0, or compute capability below 8.0
 * without an NVLink peer): then the NIC writes GPU memory and what is sent goes through host memory first.
 *
 * @param on            the NIC writes GPU memory directly (receive-side GDR): the buffers live on the device
 * @param sendOn        the NIC also reads GPU memory (send-side GDR); false: sends bounce through the host half
 * @param gate          the gate that turned it off ("send read policy", "receive distance", "NET", "connector"
 *                      ...), empty when on
 * @param reason        NCCL's log line of the deciding gate, plus the setting that caused it when one did
 * @param mechanism     how GPU memory is registered when on (DMA-BUF fd or peermem pointer), NONE when off
 * @param flush         iflush posts its 1-byte RDMA READ before received data is read on the GPU
 * @param flushEvidence the flush gate's reason
 * @param evidence      every step of both directions' gates
 * @param settings      the gates' settings as {@code NAME=value (source)}
 */
public record CollGdr(boolean on, boolean sendOn, String gate, String reason, RegMechanism mechanism, boolean flush,
                      String flushEvidence, List<String> evidence, List<String> settings) {
    /** Copies the lists, so that the record cannot change. */
    public CollGdr {
        evidence = List.copyOf(evidence);
        settings = List.copyOf(settings);
    }

    /**
     * Decides for {@code gpu} and the software NIC {@code nic} (whose capabilities were probed with this GPU). The
     * GPU-NIC distance comes from the path engine over {@link SimulatedHostTopology} (the software NIC beside the
     * GPU under one PCIe switch, labelled simulated: a software NIC has no PCIe position of its own).
     *
     * @param gpu    this rank's GPU
     * @param nic    the software NIC the rank's transport uses
     * @param reader where the GDR settings come from
     * @param singleGpu every rank of the job uses this one GPU (the read policy's "single GPU")
     * @return the decision, with its evidence
     */
    public static CollGdr decide(final GpuDevice gpu, final NetNic nic, final SettingsReader reader,
                                 final boolean singleGpu) {
        final NcclSettings s = new NcclSettings.Context().reader(reader).conclude();
        final List<String> ev = new ArrayList<>();
        final GpuCaps caps = GpuCaps.of(gpu, gpu.driverVersion(), false, singleGpu);
        final TopoSystem topo = SimulatedHostTopology.build(gpu, List.of(nic.caps().name()));
        final TopoPaths paths = PathComputer.compute(topo, s.pathOptions());
        final GdrDistanceCheck dist = paths.gdrDistance(topo.gpus().get(0), topo.nics().get(0),
            s.gdrLevel().value());
        ev.add("distance: path engine over " + topo.source() + ": " + dist.path() + "; " + dist.logLine());
        final GdrDecision send = GdrGate.decide(caps, nic.caps(), dist.distance(), false, true, s.gdr());
        final GdrDecision recv = GdrGate.decide(caps, nic.caps(), dist.distance(), false, false, s.gdr());
        for (final String e : send.evidence()) {
            ev.add("send: " + e);
        }
        ev.add("send: " + send.logLine());
        for (final String e : recv.evidence()) {
            ev.add("receive: " + e);
        }
        ev.add("receive: " + recv.logLine());
        final List<String> set = settings(s);
        if (recv.enabled()) {
            final FlushPolicy.Decision f = FlushPolicy.decide(caps, recv, s.gdr());
            if (send.enabled()) {
                return new CollGdr(true, true, "", recv.logLine() + "; " + send.logLine(), recv.mechanism(),
                    f.flush(), f.evidence(), ev, set);
            }
            // the gates differ only in the read policy: the NIC writes GPU memory, sends go through the host
            return new CollGdr(true, false, "send " + send.failedGate(), recv.logLine() + "; send: " + send.logLine()
                + cause(send, s) + " (sends bounce through host memory)", recv.mechanism(), f.flush(), f.evidence(),
                ev, set);
        }
        return new CollGdr(false, false, "receive " + recv.failedGate(), "receive: " + recv.logLine()
            + cause(recv, s), RegMechanism.NONE, false, noFlush(s), ev, set);
    }

    /**
     * NET/Socket registers host memory only (ptrSupport HOST): the NET gate fails for both directions.
     *
     * @param reader where the GDR settings come from
     * @return the decision, with its evidence
     */
    public static CollGdr socket(final SettingsReader reader) {
        final NcclSettings s = new NcclSettings.Context().reader(reader).conclude();
        return new CollGdr(false, false, "NET", "GPU Direct RDMA Disabled for NET/Socket (ptrSupport HOST: no GPU pointer "
            + "support)", RegMechanism.NONE, false, noFlush(s), List.of("NET/Socket: ptrSupport HOST"),
            settings(s));
    }

    /** {@return the decision when no GDR gate was asked (a GPU attached without a decision): host bounce} */
    public static CollGdr notAsked() {
        return new CollGdr(false, false, "not asked", "no GDR decision was made for this communicator: host bounce",
            RegMechanism.NONE, false, "no flush: host bounce", List.of(), List.of());
    }

    /**
     * The connector gate: registering the GPU memory with the NIC failed ({@code why}), so the rank bounces.
     *
     * @param why why the registration failed
     * @return this decision with GDR off and the reason added to its evidence (this one when GDR was off already)
     */
    public CollGdr afterRegistration(final String why) {
        if (!on) {
            return this;
        }
        final List<String> ev = new ArrayList<>(evidence);
        ev.add("connector gate failed: " + why + " -> host bounce");
        return new CollGdr(false, false, "connector", "GPU Direct RDMA Disabled (connector: " + why + ")",
            RegMechanism.NONE, false, "no flush: the NIC does not write GPU memory (host bounce after the connector "
            + "gate)", ev, settings);
    }

    /**
     * The gates allowed GDR, but the software NIC's path into a real CUDA GPU is held back ({@code why}, with the
     * setting that would release it): the rank bounces, and the gates' verdict stays in the evidence.
     *
     * @param why why the path is held back, with the setting that would release it
     * @return this decision with GDR off and the reason added to its evidence (this one when GDR was off already)
     */
    public CollGdr heldBack(final String why) {
        if (!on) {
            return this;
        }
        final List<String> ev = new ArrayList<>(evidence);
        ev.add("the gates allowed GDR (" + reason + "); held back: " + why + " -> host bounce");
        return new CollGdr(false, false, "software NIC on CUDA", "GPU Direct RDMA held back: " + why,
            RegMechanism.NONE, false, "no flush: the NIC does not write GPU memory (host bounce)", ev, settings);
    }

    /** {@return what the data path is called in records: gdr, gdr-recv (sends bounce) or host-bounce} */
    public String dataPath() {
        return on ? (sendOn ? "gdr" : "gdr-recv") : "host-bounce";
    }

    /**
     * {@return what a GPU buffer's registrations cover: gpu, gpu (receives) + host (sends), or host (bounce halves)}
     */
    public String nicMr() {
        return on ? (sendOn ? "gpu" : "gpu (receives) + host (sends)") : "host";
    }

    /** {@return one line for text output} */
    public String summary() {
        return (on ? "GDR " + (sendOn ? "on" : "on for receives, sends bounce") + ", " + mechanism.label()
            + (flush ? ", flush READ on" : ", no flush") : "GDR off (" + gate + ")") + ": " + reason + "; "
            + flushEvidence;
    }

    private static String noFlush(final NcclSettings s) {
        return "no flush: the NIC does not write GPU memory (host bounce)" + (s.forceFlush().value()
            ? "; " + GdrConfiguration.NET_FORCE_FLUSH.name() + "=1 has nothing to flush" : "");
    }

    /** The setting behind a gate that a setting narrowed, with its source. */
    private static String cause(final GdrDecision d, final NcclSettings s) {
        final Setting<?> c = switch (d.failedGate()) {
            case "distance" -> s.gdrLevel();
            case "read policy" -> s.gdrRead();
            case GdrConfiguration.IB_HCA_NAME -> s.ibHca();
            case "NET" -> s.dmabufEnable();
            default -> null;
        };
        return c == null || c.source() == io.gdrkit.core.config.Source.DEFAULT ? "" : "; cause: " + text(c, "");
    }

    private static List<String> settings(final NcclSettings s) {
        return List.of(text(s.gdrLevel(), NcclSettings.display(s.gdrLevel())), text(s.gdrRead(), "unset (cc >= 8.0 reads)"),
            text(s.dmabufEnable(), "1"), text(s.forceFlush(), "0"), text(s.gdrC2c(), "1"));
    }

    /** {@code NAME=value (source)}, the value as given (or NCCL's default spelled as NCCL documents it). */
    private static String text(final Setting<?> s, final String defaultText) {
        return s.name() + "=" + (s.raw() != null ? s.raw() : defaultText) + " ("
            + s.source().name().toLowerCase(java.util.Locale.ROOT) + ")";
    }
}
