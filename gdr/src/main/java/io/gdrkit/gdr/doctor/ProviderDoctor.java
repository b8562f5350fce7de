/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import io.gdrkit.gdr.gate.FlushPolicy;
import io.gdrkit.gdr.gate.GdrDecision;
import io.gdrkit.gdr.gate.GdrGate;
import io.gdrkit.gdr.gate.GdrSettings;
import io.gdrkit.gdr.gate.GpuCaps;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.net.ConnectorReport;
import io.gdrkit.gdr.net.NetConnector;
import io.gdrkit.gdr.net.NetEndpoint;
import io.gdrkit.gdr.net.NetLink;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.gdr.reg.RegMechanism;
import io.gdrkit.gdr.reg.RegMechanismDecision;
import io.gdrkit.gdr.topo.GdrDistanceCheck;
import io.gdrkit.gdr.topo.PathComputer;
import io.gdrkit.gdr.topo.PathType;
import io.gdrkit.gdr.topo.TopoNode;
import io.gdrkit.gdr.topo.TopoPaths;
import io.gdrkit.gdr.topo.TopoSystem;
import io.gdrkit.gpu.FlushResult;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuAttributes;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The doctor over a verbs provider and a GPU it can reach: every line comes from a call. Port state from
 * {@link VerbsContext#queryPort}, the driver version from {@link GpuDevice#driverVersion()}, what each NIC can
 * register from {@link NetCaps#probe}, the GPU-NIC distance from the path engine over the host's {@link TopoSystem},
 * the gates with the user's {@link NcclSettings}, then the connector registers and connects, 1 MiB moves GPU to GPU
 * and is compared byte by byte, and the flush is the actual flush call. Rank 0 sends through the first NIC, rank 1
 * receives through the second.
 */
public final class ProviderDoctor {
    /** Connection buffer of the end-to-end check: 1 MiB, whole pages. */
    public static final int E2E_BYTES = 1 << 20;
    private static final String[] PORT_STATES = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};

    private final List<Check> checks = new ArrayList<>();

    /**
     * What to probe.
     *
     * @param gpu          the GPU both ranks use
     * @param sendNic      rank 0's NIC (the NIC reads the GPU)
     * @param recvNic      rank 1's NIC (the NIC writes the GPU)
     * @param providerNote how the provider was configured, printed with the device list
     * @param topology     the host's topology, holding one GPU and nodes named after both NICs
     * @param settings     the NCCL settings in effect
     */
    public record Input(GpuDevice gpu, VerbsContext sendNic, VerbsContext recvNic, String providerNote,
                        TopoSystem topology, NcclSettings settings) {
    }

    private ProviderDoctor() {
    }

    /** Runs every check; never throws for what it finds, only for programming errors. */
    public static DoctorReport run(final Input in) {
        return new ProviderDoctor().doRun(in);
    }

    private void add(final String layer, final String name, final Status s, final String evidence) {
        checks.add(new Check(layer, name, s, evidence));
    }

    private DoctorReport doRun(final Input in) {
        final GpuDevice gpu = in.gpu();
        final NcclSettings s = in.settings();
        final boolean simulated = gpu.isSimulated() || in.sendNic().device().isSimulated();
        final String sim = simulated ? " (simulated)" : "";
        final GpuAttributes a = gpu.attributes();
        add("GPU", "device", Status.PASS, gpu.describe());
        add("GPU", "GPUDirect RDMA (116)", a.gpuDirectRdmaSupported() != 0 ? Status.PASS : Status.FAIL,
            "attribute 116 = " + a.gpuDirectRdmaSupported() + sim);
        final int driver = gpu.driverVersion();
        add("GPU", "driver version", driver > 0 ? Status.PASS : Status.UNKNOWN, "cuDriverGetVersion = " + driver
            + " (" + driver / 1000 + "." + driver % 1000 / 10 + ")" + (gpu.isSimulated() ? " from the simulated "
            + "driver" : ""));
        final String names = in.sendNic().device().name() + ", " + in.recvNic().device().name();
        add("verbs", "RDMA devices", Status.PASS, names + (in.sendNic().device().isSimulated()
            ? " (software NICs, simulated)" : "") + "; " + in.providerNote());
        final boolean portsUp = port(in.sendNic()) & port(in.recvNic());

        final List<NetCaps> nets = new ArrayList<>();
        final List<NetCaps> hw = new ArrayList<>();
        for (final VerbsContext ctx : new VerbsContext[] {in.sendNic(), in.recvNic()}) {
            final NetCaps probed = NetCaps.probe(nets.size(), ctx, gpu);
            hw.add(probed);
            // NCCL_IB_DISABLE=1 or NCCL_NET=Socket: the NET is the socket transport, which has no GPU pointer support
            nets.add(s.socketOnly() ? new NetCaps(probed.dev(), probed.name(), false, "NET/Socket selected ("
                + socketWhy(s) + "): the socket transport registers host memory only", false, "NET/Socket selected ("
                + socketWhy(s) + "): no DMA-BUF registration") : probed);
        }
        final NetCaps net0 = nets.get(0);
        final NetCaps net1 = nets.get(1);
        final GpuCaps caps = GpuCaps.of(gpu, driver, false, true);
        final NetCaps hw1 = hw.get(1);
        final boolean dmabufHw = hw1.dmabufProvider() && caps.dmabufSupported() && driver >= GdrGate.DMABUF_MIN_DRIVER;
        add("registration", "DMA-BUF", dmabufHw && s.dmabufEnable().value() && !s.socketOnly() ? Status.PASS
            : Status.FAIL, net1.dmabufEvidence() + "; GPU attribute 124 = " + a.dmaBufSupported() + ", driver "
            + driver + (driver >= GdrGate.DMABUF_MIN_DRIVER ? " >= " : " < ") + GdrGate.DMABUF_MIN_DRIVER
            + (dmabufHw && !s.dmabufEnable().value() ? "; disabled by " + NcclSettings.describe(s.dmabufEnable()) : ""));
        add("registration", "peermem", net1.peermem() ? Status.PASS : Status.FAIL, net1.peermemEvidence());
        final RegMechanismDecision branch = RegMechanismDecision.decide(GdrGate.regCapabilities(caps, net1, s.gdr()));
        add("registration", "mechanism", branch.mechanism() == RegMechanism.NONE ? Status.FAIL : Status.PASS,
            branch.evidence());

        // topology: the path engine over the host's topology
        final TopoPaths paths = PathComputer.compute(in.topology(), s.pathOptions());
        final GdrDistanceCheck d0 = distance(in, paths, in.sendNic(), s);
        final GdrDistanceCheck d1 = distance(in, paths, in.recvNic(), s);
        if (d0 == null || d1 == null) {
            add("end to end", "GDR", Status.BLOCKED, "the topology has no GPU or no node for a NIC: no distance");
            return report(simulated, in, Verdict.blocked("topology: no GPU-NIC pair"), caps, null, null, null,
                dmabufHw, net1.peermem(), null);
        }
        final GdrDecision write = GdrGate.decide(caps, net1, d1.distance(), d1.path().type() == PathType.PXN, false,
            s.gdr());
        final GdrDecision read = GdrGate.decide(caps, net0, d0.distance(), d0.path().type() == PathType.PXN, true,
            s.gdr());
        add("gates", "receive (NIC writes GPU)", write.enabled() ? Status.PASS : Status.FAIL, write.logLine());
        add("gates", "send (NIC reads GPU)", read.enabled() ? Status.PASS : Status.FAIL, read.logLine());
        final FlushPolicy.Decision flush = FlushPolicy.decide(caps, write, s.gdr());
        add("gates", "flush", Status.PASS, flush.evidence());
        if (!portsUp) {
            add("end to end", "GDR", Status.BLOCKED, "a port is not ACTIVE: no connection can be made");
            return report(simulated, in, Verdict.blocked("a port is not ACTIVE"), caps, d1, write, read, dmabufHw,
                net1.peermem(), flush);
        }
        try (NetNic nic0 = new NetNic(0, in.sendNic(), net0); NetNic nic1 = new NetNic(1, in.recvNic(), net1)) {
            final Verdict v = connectAndMove(gpu, caps, nic0, nic1, hw, d0.distance(), d1.distance(), s);
            return report(simulated, in, v, caps, d1, write, read, dmabufHw, net1.peermem(), flush);
        }
    }

    private static String socketWhy(final NcclSettings s) {
        return s.ibDisable().value() ? NcclSettings.describe(s.ibDisable()) : NcclSettings.describe(s.net());
    }

    /** Port 1 of {@code ctx}, queried: state, LID, MTU, link layer. */
    private boolean port(final VerbsContext ctx) {
        final String name = ctx.device().name() + " port 1";
        try {
            final PortAttr p = ctx.queryPort(1);
            final boolean active = p.state() == PortAttr.PORT_ACTIVE;
            add("verbs", name, active ? Status.PASS : Status.FAIL, "ibv_query_port: state " + (p.state() >= 0
                && p.state() < PORT_STATES.length ? PORT_STATES[p.state()] : Integer.toString(p.state())) + ", lid "
                + p.lid() + ", active MTU " + Mtu.toBytes(p.activeMtu()) + ", link layer " + p.linkLayer()
                + (ctx.device().isSimulated() ? " (simulated)" : ""));
            return active;
        } catch (final VerbsException e) {
            add("verbs", name, Status.FAIL, "ibv_query_port = " + e.getMessage());
            return false;
        }
    }

    private GdrDistanceCheck distance(final Input in, final TopoPaths paths, final VerbsContext nic,
                                      final NcclSettings s) {
        final String nicName = nic.device().name();
        final TopoSystem topo = in.topology();
        final TopoNode nicNode = topo.nics().stream().filter(n -> n.id().equals(nicName)).findFirst().orElse(null);
        if (topo.gpus().isEmpty() || nicNode == null) {
            add("topology", "GPU-" + nicName + " distance", Status.BLOCKED, "no " + (topo.gpus().isEmpty() ? "GPU"
                : "node '" + nicName + "'") + " in the topology (" + topo.source() + ")");
            return null;
        }
        final GdrDistanceCheck c = paths.gdrDistance(topo.gpus().get(0), nicNode, s.gdrLevel().value());
        add("topology", "GPU-" + nicName + " distance", Status.PASS, "path engine over " + topo.source() + ": "
            + c.path() + "; " + c.logLine());
        return c;
    }

    /** The connector gate and the end-to-end transfer; returns the verdict. */
    private Verdict connectAndMove(final GpuDevice gpu, final GpuCaps caps, final NetNic nic0, final NetNic nic1,
                                   final List<NetCaps> hw, final PathType dist0, final PathType dist1,
                                   final NcclSettings s) {
        final NetEndpoint sender = new NetEndpoint(0, gpu, caps, nic0, dist0);
        final NetEndpoint receiver = new NetEndpoint(1, gpu, caps, nic1, dist1);
        try (NetLink link = NetConnector.connect(0, sender, receiver, E2E_BYTES, s.gdr())) {
            final ConnectorReport send = link.sendReport();
            final ConnectorReport recv = link.receiveReport();
            for (final ConnectorReport r : new ConnectorReport[] {send, recv}) {
                final List<String> ev = r.gdr().evidence();
                final String why = r.gdr().enabled() ? " (" + r.gdr().mechanism().label() + ")"
                    : r.gdr().failedGate().equals("connector") ? "; " + ev.get(ev.size() - 1)
                    : "; host bounce: the " + r.gdr().failedGate() + " gate failed before the connector";
                add("connector", r.send() ? "send" : "receive", r.gdr().enabled() ? Status.PASS : Status.FAIL,
                    r.logLine() + why);
            }
            final long mismatch = move(gpu, link);
            final boolean flushed = recv.flush() != null && recv.flush().flush();
            add("end to end", "data over the connection", mismatch == -1 ? Status.PASS : Status.FAIL,
                "1 MiB GPU to GPU over channel 0: " + path(send, "read") + ", RDMA WRITE_WITH_IMM SUCCESS, "
                + path(recv, "wrote") + (flushed ? ", flushed (1-byte READ)" : "") + ", " + (mismatch == -1
                ? "byte-exact" : "mismatch at byte " + mismatch) + (gpu.isSimulated() ? " (simulated)" : ""));
            flushCall(gpu, recv, flushed);
            final boolean gdr = send.gdr().enabled() && recv.gdr().enabled();
            add("end to end", "GDR", gdr && mismatch == -1 ? Status.PASS : Status.FAIL, gdr
                ? "the NICs read and wrote GPU memory directly, both directions" + (gpu.isSimulated()
                ? " (simulated)" : "") : "host bounce on " + (recv.gdr().enabled() ? "the send side"
                : send.gdr().enabled() ? "the receive side" : "both sides"));
            if (!recv.gdr().enabled()) {
                return degraded(recv, caps, hw.get(1), dist1, s);
            }
            if (!send.gdr().enabled()) {
                return degraded(send, caps, hw.get(0), dist0, s);
            }
            return mismatch == -1 ? Verdict.ready() : Verdict.degraded("end to end failed: mismatch at byte "
                + mismatch, "");
        }
    }

    private static long move(final GpuDevice gpu, final NetLink link) {
        final MemorySegment sent = gpu.allocHost(E2E_BYTES);
        final MemorySegment back = gpu.allocHost(E2E_BYTES);
        try {
            for (int i = 0; i < E2E_BYTES; i++) {
                sent.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
            }
            gpu.copyHtoD(link.senderBuffer(), 0, sent, 0, E2E_BYTES);
            link.transfer(E2E_BYTES, Duration.ofSeconds(10));
            gpu.copyDtoH(back, 0, link.receiverBuffer(), 0, E2E_BYTES);
            return sent.mismatch(back);
        } finally {
            gpu.freeHost(sent);
            gpu.freeHost(back);
        }
    }

    /** The flush as it was done: the connector's 1-byte READ, and cuFlushGPUDirectRDMAWrites asked of the GPU. */
    private void flushCall(final GpuDevice gpu, final ConnectorReport recv, final boolean flushed) {
        final String connector = flushed ? "the connector flushed with a 1-byte RDMA READ on its loopback QP before "
            + "releasing the buffer" : "the connector did not flush (" + (recv.flush() == null ? "no decision"
            : recv.flush().evidence()) + ")";
        if ((gpu.attributes().flushWritesOptions() & GpuAttributes.FLUSH_OPTION_HOST) == 0) {
            add("end to end", "flush", Status.PASS, connector + "; cuFlushGPUDirectRDMAWrites not offered (117 = "
                + gpu.attributes().flushWritesOptions() + ")");
            return;
        }
        try {
            final FlushResult r = gpu.flushGpuDirectRdmaWrites(FlushScope.TO_OWNER);
            add("end to end", "flush", Status.PASS, connector + "; cuFlushGPUDirectRDMAWrites(TO_OWNER): "
                + r.evidence());
        } catch (final GpuException e) {
            add("end to end", "flush", Status.FAIL, connector + "; cuFlushGPUDirectRDMAWrites(TO_OWNER) = "
                + e.getMessage());
        }
    }

    private static String path(final ConnectorReport r, final String verb) {
        return r.gdr().enabled() ? "NIC " + verb + " GPU memory (" + r.gdr().mechanism().label() + ")"
            : "NIC " + verb + " pinned host memory (host bounce)";
    }

    /** DEGRADED for {@code r}, naming a restrictive setting when NCCL's defaults would have allowed GDR. */
    private static Verdict degraded(final ConnectorReport r, final GpuCaps caps, final NetCaps hardware,
                                    final PathType distance, final NcclSettings s) {
        final GdrDecision d = r.gdr();
        // the same gates on what the NIC answered, with NCCL's defaults: on means a setting, not the host, said no
        final boolean defaultsAllow = !d.failedGate().equals("connector")
            && GdrGate.decide(caps, hardware, distance, false, d.read(), GdrSettings.DEFAULTS).enabled();
        return Verdict.degraded((r.send() ? "send" : "receive") + ", " + d.failedGate() + " gate: " + d.logLine(),
            SettingsTable.cause(s, d, defaultsAllow));
    }

    private DoctorReport report(final boolean simulated, final Input in, final Verdict v, final GpuCaps caps,
                                final GdrDistanceCheck d, final GdrDecision receive, final GdrDecision send,
                                final boolean dmabufHw, final boolean peermem, final FlushPolicy.Decision flush) {
        final Facts f = new Facts(in.topology().gpus().size(), d == null ? null : d.distance(), caps.gdrSupported(),
            dmabufHw, peermem, receive, send, flush, in.gpu().isSimulated() ? null : Boolean.FALSE, true);
        return new DoctorReport(simulated, in.sendNic().device().name() + ", " + in.recvNic().device().name()
            + " and " + in.gpu().attributes().name(), checks, SettingsTable.rows(in.settings(), f), v);
    }
}
