/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.labs.perf.Deadline;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gdr.gate.FlushPolicy;
import io.gdrkit.gdr.gate.GdrDecision;
import io.gdrkit.gdr.gate.GdrGate;
import io.gdrkit.gdr.gate.GdrSettings;
import io.gdrkit.gdr.gate.GpuCaps;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.net.ConnectorReport;
import io.gdrkit.gdr.net.NetConnector;
import io.gdrkit.gdr.net.NetEndpoint;
import io.gdrkit.gdr.net.NetLink;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.gdr.reg.RegMechanism;
import io.gdrkit.gdr.reg.RegMechanismDecision;
import io.gdrkit.gdr.topo.PathType;
import io.gdrkit.gdr.topo.SysfsScan;
import io.gdrkit.gdr.topo.SysfsTopoReader;
import io.gdrkit.gpu.GpuAttributes;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.gpu.cuda.CudaProbe;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.VerbsContext;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code doctor}: probes this machine layer by layer for what GPUDirect RDMA needs and prints one line per check
 * with PASS / FAIL / BLOCKED / UNKNOWN and the evidence it read, then a verdict: GDR_READY (proven end to end),
 * DEGRADED (naming the failing gate) or HARDWARE_BLOCKED. Nothing is invented: a probe that finds nothing says so
 * and names what it looked at. {@code --provider soft --gpu sim:h200} runs it against the software NIC and a
 * simulated GPU, labelled simulated: the NICs are probed through verbs calls, the connector registers and connects,
 * and data moves GPU to GPU, so it can prove GDR end to end; {@code --soft-dmabuf off} / {@code --soft-peermem off}
 * take a registration branch away from the provider to show the other branch, or DEGRADED with the gate named.
 */
@Command(name = "doctor", mixinStandardHelpOptions = true,
    description = "Layered GPUDirect RDMA checklist with evidence and a verdict.")
final class DoctorCommand implements Callable<Integer> {
    enum Status { PASS, FAIL, BLOCKED, UNKNOWN }

    record Check(String layer, String name, Status status, String evidence) {
    }

    @Spec
    CommandSpec spec;

    @Option(names = "--provider", defaultValue = "host", description = "host (probe this machine) or soft (the "
        + "software NIC, simulated).")
    String provider;

    @Option(names = "--gpu", description = "With --provider soft: a simulated GPU (sim:h200, sim:v100, ...).")
    String gpuSpec;

    @Option(names = "--soft-dmabuf", paramLabel = "on|off", description = "With --provider soft: the software "
        + "provider's DMA-BUF registration capability (default on; also -D" + SoftNicContext.DMABUF_PROP + ").")
    String softDmaBuf;

    @Option(names = "--soft-peermem", paramLabel = "on|off", description = "With --provider soft: the software "
        + "provider's peermem capability, GPU memory by pointer (default on; also -D" + SoftNicContext.PEERMEM_PROP
        + ").")
    String softPeermem;

    @Option(names = "--json", description = "JSON: verdict, simulated, checks (name, status, evidence).")
    boolean json;

    @Option(names = "--strict", description = "Exit 1 unless GDR is proven end to end (GDR_READY).")
    boolean strict;

    @Option(names = "--sys", defaultValue = "/", hidden = true, description = "Root to probe (tests).")
    Path root;

    private final List<Check> checks = new ArrayList<>();

    private void add(final String layer, final String name, final Status s, final String evidence) {
        checks.add(new Check(layer, name, s, evidence));
    }

    @Override
    public Integer call() throws IOException {
        final boolean soft;
        switch (provider) {
            case "host" -> soft = false;
            case "soft" -> soft = true;
            default -> throw new ParameterException(spec.commandLine(), "--provider must be host or soft, not '"
                + provider + "'");
        }
        if (!soft && gpuSpec != null) {
            throw new ParameterException(spec.commandLine(), "--gpu is for --provider soft (a simulated GPU); the "
                + "host probe finds real GPUs itself");
        }
        if (!soft && (softDmaBuf != null || softPeermem != null)) {
            throw new ParameterException(spec.commandLine(), "--soft-dmabuf and --soft-peermem switch capabilities "
                + "of the software provider: use them with --provider soft");
        }
        final String verdict = soft ? soft() : host();
        final PrintWriter out = spec.commandLine().getOut();
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            root.put("verdict", verdict);
            root.put("simulated", soft);
            final List<Map<String, Object>> list = new ArrayList<>();
            for (final Check c : checks) {
                final Map<String, Object> m = new LinkedHashMap<>();
                m.put("layer", c.layer());
                m.put("name", c.name());
                m.put("status", c.status().name());
                m.put("evidence", c.evidence());
                list.add(m);
            }
            root.put("checks", list);
            out.println(new ObjectMapper().writeValueAsString(root));
        } else {
            out.println(soft ? "# gdrkit doctor: software NIC and " + gpuSpec + " (SIMULATED hardware)"
                : "# gdrkit doctor: probing this machine");
            String layer = "";
            for (final Check c : checks) {
                if (!c.layer().equals(layer)) {
                    layer = c.layer();
                    out.println("[" + layer + "]");
                }
                out.println(String.format("  %-8s %-28s %s", c.status(), c.name(), c.evidence()));
            }
            out.println("verdict: " + verdict + (soft ? " (simulated)" : ""));
        }
        return strict && !verdict.startsWith("GDR_READY") ? Main.EXIT_FAILURE : 0;
    }

    // ------------------------------------------------------------------ the real machine

    private String host() {
        final CudaProbe probe = CudaGpu.probe();
        int gpus = 0;
        GpuAttributes attrs = null;
        if (probe.found() && probe.deviceCount() > 0) {
            gpus = probe.deviceCount();
            add("GPU", "CUDA driver", Status.PASS, probe.toString());
            try (CudaGpu g = CudaGpu.open(0)) {
                attrs = g.attributes();
                add("GPU", "GPUDirect RDMA (116)", attrs.gpuDirectRdmaSupported() != 0 ? Status.PASS : Status.FAIL,
                    "GPU 0 " + attrs.name() + ": attribute 116 = " + attrs.gpuDirectRdmaSupported());
                add("GPU", "flush options (117)", Status.PASS, "attribute 117 = " + attrs.flushWritesOptions());
                add("GPU", "writes ordering (118)", Status.PASS, "attribute 118 = " + attrs.writesOrdering());
                add("GPU", "compute capability", Status.PASS, attrs.ccMajor() + "." + attrs.ccMinor()
                    + (attrs.ccMajor() < 9 ? " (< 9.0: received data needs a flush)" : " (>= 9.0: no flush needed)"));
                add("GPU", "BAR1", attrs.bar1Bytes() > 0 ? Status.PASS : Status.UNKNOWN, attrs.bar1Bytes() > 0
                    ? attrs.bar1Bytes() / (1 << 20) + " MiB total (" + attrs.bar1Evidence() + ")" : attrs.bar1Evidence());
            }
        } else {
            add("GPU", "CUDA driver", Status.FAIL, "no GPU: " + probe);
        }
        // verbs
        final List<String> ibDevs = list("sys/class/infiniband");
        final List<String> uverbs = list("dev/infiniband");
        final VerbsProbe.Result verbs = VerbsProbe.probe();
        add("verbs", "libibverbs (FFM)", !verbs.loaded() ? Status.FAIL : verbs.devices().isEmpty() ? Status.FAIL
            : Status.PASS, verbs.evidence());
        add("verbs", "RDMA devices", ibDevs.isEmpty() ? Status.FAIL : Status.PASS, ibDevs.isEmpty()
            ? "none: /sys/class/infiniband is " + (Files.isDirectory(root.resolve("sys/class/infiniband"))
            ? "empty" : "absent") : "/sys/class/infiniband: " + ibDevs);
        add("verbs", "uverbs device files", uverbs.stream().anyMatch(s -> s.startsWith("uverbs")) ? Status.PASS
            : Status.FAIL, "/dev/infiniband: " + (uverbs.isEmpty() ? "absent or empty" : uverbs));
        // registration paths
        final String peermem = peermem();
        final boolean peer = peermem.startsWith("present");
        add("registration", "peermem", peer ? Status.PASS : Status.FAIL, peermem);
        final boolean dmabufAttr = attrs != null && attrs.dmaBufSupported() != 0;
        final boolean driverOk = probe.driverVersion() >= GdrGate.DMABUF_MIN_DRIVER;
        add("registration", "DMA-BUF", attrs == null ? Status.BLOCKED : dmabufAttr && driverOk ? Status.PASS
            : Status.FAIL, attrs == null ? "no GPU to ask (attribute 124)" : "attribute 124 = "
            + attrs.dmaBufSupported() + ", driver " + probe.driverVersion() + (driverOk ? " >= 11070" : " < 11070")
            + "; provider support needs a verbs device (" + (ibDevs.isEmpty() ? "none" : ibDevs) + ")");
        add("registration", "GDRCopy /dev/gdrdrv", Files.exists(root.resolve("dev/gdrdrv")) ? Status.PASS
            : Status.FAIL, Files.exists(root.resolve("dev/gdrdrv")) ? "present" : "/dev/gdrdrv absent");
        final String gdrapi = library("libgdrapi.so.2");
        add("registration", "GDRCopy libgdrapi", gdrapi.startsWith("loaded") ? Status.PASS : Status.FAIL, gdrapi);
        // topology
        final SysfsScan scan = SysfsTopoReader.scan(root.resolve("sys"));
        add("topology", "GPU-NIC distance", scan.gpuCount() > 0 && scan.rdmaCount() > 0 ? Status.PASS
            : Status.BLOCKED, scan.gpuCount() + " NVIDIA GPU(s), " + scan.rdmaCount() + " RDMA NIC(s) among "
            + scan.inspected().size() + " PCI devices in " + root.resolve("sys/bus/pci/devices")
            + (scan.gpuCount() == 0 || scan.rdmaCount() == 0 ? ": no pair to measure" : ""));
        add("platform", "IOMMU", Status.UNKNOWN, iommu());
        add("platform", "ACS on PCIe bridges", Status.UNKNOWN, acs());
        final String memlock = memlock();
        add("platform", "memlock limit", memlock.contains("unlimited") ? Status.PASS : Status.UNKNOWN, memlock);
        add("platform", "container devices", Status.UNKNOWN, containerDevices());
        // verdict
        if (gpus == 0 || (ibDevs.isEmpty() && verbs.devices().isEmpty())) {
            add("end to end", "GDR", Status.BLOCKED, "no " + (gpus == 0 ? "GPU" : "") + (gpus == 0 && ibDevs.isEmpty()
                ? " and no " : "") + (ibDevs.isEmpty() ? "verbs device" : "") + ": nothing can move GPU memory by RDMA");
            return "HARDWARE_BLOCKED";
        }
        if (attrs.gpuDirectRdmaSupported() == 0) {
            return "DEGRADED (GPU gate: attribute 116 = 0)";
        }
        if (!peer && !(dmabufAttr && driverOk)) {
            return "DEGRADED (NET gate: no peermem and no usable DMA-BUF)";
        }
        add("end to end", "GDR", Status.UNKNOWN, "a native verbs provider (A9) is needed to prove it on hardware");
        return "DEGRADED (end to end not proven: no native verbs provider yet)";
    }

    private List<String> list(final String dir) {
        final Path p = root.resolve(dir);
        if (!Files.isDirectory(p)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(p)) {
            return s.map(x -> x.getFileName().toString()).sorted().toList();
        } catch (final IOException e) {
            return List.of();
        }
    }

    private static String library(final String name) {
        try {
            java.lang.foreign.SymbolLookup.libraryLookup(name, java.lang.foreign.Arena.global());
            return "loaded " + name;
        } catch (final RuntimeException e) {
            return name + " not loadable (" + e.getMessage() + ")";
        }
    }

    private String peermem() {
        final String[] paths = {"sys/kernel/mm/memory_peers/nv_mem/version", "sys/kernel/mm/memory_peers/nv_mem_nc/version",
            "sys/module/nvidia_peermem"};
        final List<String> found = new ArrayList<>();
        for (final String p : paths) {
            if (Files.exists(root.resolve(p))) {
                found.add("/" + p);
            }
        }
        return found.isEmpty() ? "absent: none of /" + String.join(", /", paths) : "present: " + found;
    }

    private String iommu() {
        final List<String> groups = list("sys/kernel/iommu_groups");
        String cmdline = "";
        try {
            cmdline = Files.readString(root.resolve("proc/cmdline")).trim();
        } catch (final IOException e) {
            cmdline = "(unreadable)";
        }
        return groups.size() + " IOMMU group(s) in /sys/kernel/iommu_groups; /proc/cmdline: " + cmdline;
    }

    private String acs() {
        final List<String> bridges = new ArrayList<>();
        for (final String dev : list("sys/bus/pci/devices")) {
            final Path d = root.resolve("sys/bus/pci/devices").resolve(dev);
            try {
                if (!Files.readString(d.resolve("class")).trim().startsWith("0x0604")) {
                    continue;
                }
                final byte[] cfg = Files.readAllBytes(d.resolve("config"));
                bridges.add(dev + ": " + acsControl(cfg));
            } catch (final IOException e) {
                bridges.add(dev + ": config unreadable");
            }
        }
        return bridges.isEmpty() ? "no PCIe bridges (class 0x0604) in /sys/bus/pci/devices" : String.join("; ", bridges);
    }

    /** Walks the PCIe extended capabilities for ACS (ID 0x000D) and decodes its control register. */
    static String acsControl(final byte[] cfg) {
        if (cfg.length < 0x104) {
            return "extended config space not readable (" + cfg.length + " bytes; needs root)";
        }
        final MemorySegment c = MemorySegment.ofArray(cfg);
        int off = 0x100;
        for (int guard = 0; off >= 0x100 && off + 8 <= cfg.length && guard < 64; guard++) {
            final int header = c.get(ValueLayout.JAVA_INT_UNALIGNED, off);
            if (header == 0 || header == -1) {
                break;
            }
            if ((header & 0xFFFF) == 0x000D) {
                final int ctrl = c.get(ValueLayout.JAVA_SHORT_UNALIGNED, off + 6) & 0xFFFF;
                return "ACS control 0x" + Integer.toHexString(ctrl) + ((ctrl & 0x0C) != 0
                    ? " (request/completion redirect ON: P2P goes through the root complex)" : " (no redirect)");
            }
            off = header >>> 20;
        }
        return "no ACS capability";
    }

    private String memlock() {
        try {
            for (final String l : Files.readAllLines(root.resolve("proc/self/limits"))) {
                if (l.startsWith("Max locked memory")) {
                    return "/proc/self/limits: " + l.replaceAll("\\s+", " ").trim();
                }
            }
            return "/proc/self/limits has no 'Max locked memory' line";
        } catch (final IOException e) {
            return "/proc/self/limits unreadable";
        }
    }

    private String containerDevices() {
        final List<String> nvidia = list("dev").stream().filter(s -> s.startsWith("nvidia")).toList();
        final boolean container = Files.exists(root.resolve(".dockerenv"))
            || Files.exists(root.resolve("run/.containerenv"));
        return (container ? "in a container; " : "") + "/dev/nvidia*: " + (nvidia.isEmpty() ? "none" : nvidia)
            + "; /dev/infiniband: " + (list("dev/infiniband").isEmpty() ? "none" : list("dev/infiniband"));
    }

    // ------------------------------------------------------------------ software provider, simulated GPU

    /** Connection buffer of the end-to-end check: 1 MiB, whole pages. */
    private static final int E2E_BYTES = 1 << 20;

    /** The software provider, its capabilities from -D properties, then from the --soft-* options. */
    private SoftNicDriver softProvider() {
        final SoftNicContext ctx = new SoftNicContext();
        if (softDmaBuf != null) {
            ctx.dmaBuf(onOff("--soft-dmabuf", softDmaBuf));
        }
        if (softPeermem != null) {
            ctx.peermem(onOff("--soft-peermem", softPeermem));
        }
        try {
            return SoftNicDriver.launch(ctx);
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "software provider: " + e.getMessage());
        }
    }

    private boolean onOff(final String option, final String value) {
        return switch (value) {
            case "on" -> true;
            case "off" -> false;
            default -> throw new ParameterException(spec.commandLine(), option + " must be on or off, not '" + value
                + "'");
        };
    }

    /**
     * Two software NICs (rank 0 sends through soft0, rank 1 receives through soft1) and one simulated GPU: each NIC
     * is asked what it can register (NetCaps.probe), the gates decide each direction, the connector registers and
     * connects, and 1 MiB moves GPU to GPU over the connection, checked byte by byte.
     */
    private String soft() {
        if (gpuSpec == null || !gpuSpec.startsWith("sim:")) {
            throw new ParameterException(spec.commandLine(), "--provider soft needs --gpu sim:<preset>");
        }
        final GpuDevice gpu;
        try {
            gpu = GpuDevices.open(gpuSpec);
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        try (gpu; SoftNicDriver driver = softProvider();
             VerbsContext ctx0 = driver.addDevice("soft0").open();
             VerbsContext ctx1 = driver.addDevice("soft1").open()) {
            final SoftNicContext nicCtx = driver.context();
            final GpuAttributes a = gpu.attributes();
            add("GPU", "device", Status.PASS, gpu.describe());
            add("GPU", "GPUDirect RDMA (116)", a.gpuDirectRdmaSupported() != 0 ? Status.PASS : Status.FAIL,
                "attribute 116 = " + a.gpuDirectRdmaSupported() + " (simulated)");
            add("verbs", "RDMA devices", Status.PASS, "soft0, soft1 (software NICs, simulated), ports ACTIVE; "
                + "provider capabilities set: DMA-BUF " + (nicCtx.dmaBuf() ? "on" : "off") + " ("
                + SoftNicContext.DMABUF_PROP + "), peermem " + (nicCtx.peermem() ? "on" : "off") + " ("
                + SoftNicContext.PEERMEM_PROP + ")");
            final NetCaps net0 = NetCaps.probe(0, ctx0, gpu);
            final NetCaps net1 = NetCaps.probe(1, ctx1, gpu);
            final GpuCaps caps = GpuCaps.of(gpu, 13000, false, true);
            final boolean dmabufUsable = net1.dmabufProvider() && caps.dmabufSupported();
            add("registration", "DMA-BUF", dmabufUsable ? Status.PASS : Status.FAIL, net1.dmabufEvidence()
                + "; GPU attribute 124 = " + a.dmaBufSupported());
            add("registration", "peermem", net1.peermem() ? Status.PASS : Status.FAIL, net1.peermemEvidence());
            final RegMechanismDecision branch = RegMechanismDecision.decide(
                GdrGate.regCapabilities(caps, net1, GdrSettings.DEFAULTS));
            add("registration", "mechanism", branch.mechanism() == RegMechanism.NONE ? Status.FAIL : Status.PASS,
                branch.evidence());
            add("topology", "GPU-NIC distance", Status.PASS, "simulated host: GPU and NIC under one PCIe switch (PIX)");
            final GdrDecision write = GdrGate.decide(caps, net1, PathType.PIX, false, false, GdrSettings.DEFAULTS);
            final GdrDecision read = GdrGate.decide(caps, net0, PathType.PIX, false, true, GdrSettings.DEFAULTS);
            add("gates", "receive (NIC writes GPU)", write.enabled() ? Status.PASS : Status.FAIL, write.logLine());
            add("gates", "send (NIC reads GPU)", read.enabled() ? Status.PASS : Status.FAIL, read.logLine());
            add("gates", "flush", Status.PASS, FlushPolicy.decide(caps, write, GdrSettings.DEFAULTS).evidence());
            try (NetNic nic0 = new NetNic(0, ctx0, net0); NetNic nic1 = new NetNic(1, ctx1, net1)) {
                return connectAndMove(gpu, caps, nic0, nic1);
            }
        }
    }

    /** The connector gate and the end-to-end transfer; returns the verdict. */
    private String connectAndMove(final GpuDevice gpu, final GpuCaps caps, final NetNic nic0, final NetNic nic1) {
        final NetEndpoint sender = new NetEndpoint(0, gpu, caps, nic0, PathType.PIX);
        final NetEndpoint receiver = new NetEndpoint(1, gpu, caps, nic1, PathType.PIX);
        try (NetLink link = NetConnector.connect(0, sender, receiver, E2E_BYTES, GdrSettings.DEFAULTS)) {
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
            final MemorySegment sent = gpu.allocHost(E2E_BYTES);
            final MemorySegment back = gpu.allocHost(E2E_BYTES);
            try {
                for (int i = 0; i < E2E_BYTES; i++) {
                    sent.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
                }
                gpu.copyHtoD(link.senderBuffer(), 0, sent, 0, E2E_BYTES);
                link.transfer(E2E_BYTES, Duration.ofNanos(Deadline.DEFAULT_TIMEOUT_NS));
                gpu.copyDtoH(back, 0, link.receiverBuffer(), 0, E2E_BYTES);
                final long mismatch = sent.mismatch(back);
                add("end to end", "data over the connection", mismatch == -1 ? Status.PASS : Status.FAIL,
                    "1 MiB GPU to GPU over channel 0: " + path(send, "read") + ", RDMA WRITE_WITH_IMM SUCCESS, "
                    + path(recv, "wrote") + (recv.flush() != null && recv.flush().flush() ? ", flushed (1-byte READ)"
                    : "") + ", " + (mismatch == -1 ? "byte-exact" : "mismatch at byte " + mismatch) + " (simulated)");
                final boolean gdr = send.gdr().enabled() && recv.gdr().enabled();
                add("end to end", "GDR", gdr && mismatch == -1 ? Status.PASS : Status.FAIL, gdr
                    ? "the NICs read and wrote GPU memory directly, both directions (simulated)"
                    : "host bounce on " + (recv.gdr().enabled() ? "the send side" : send.gdr().enabled()
                    ? "the receive side" : "both sides"));
                if (!recv.gdr().enabled()) {
                    return degraded(recv);
                }
                if (!send.gdr().enabled()) {
                    return degraded(send);
                }
                return mismatch == -1 ? "GDR_READY" : "DEGRADED (end to end failed: mismatch at byte " + mismatch + ")";
            } finally {
                gpu.freeHost(sent);
                gpu.freeHost(back);
            }
        }
    }

    private static String path(final ConnectorReport r, final String verb) {
        return r.gdr().enabled() ? "NIC " + verb + " GPU memory (" + r.gdr().mechanism().label() + ")"
            : "NIC " + verb + " pinned host memory (host bounce)";
    }

    private static String degraded(final ConnectorReport r) {
        return "DEGRADED (" + (r.send() ? "send" : "receive") + ", " + r.gdr().failedGate() + " gate: "
            + r.gdr().logLine() + ")";
    }
}
