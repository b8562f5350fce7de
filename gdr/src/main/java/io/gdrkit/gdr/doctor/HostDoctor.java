/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import io.gdrkit.gdr.gate.GdrGate;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gdr.topo.SysfsScan;
import io.gdrkit.gdr.topo.SysfsTopoReader;
import io.gdrkit.gpu.GpuAttributes;
import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.gpu.cuda.CudaProbe;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The doctor on this machine: the CUDA driver and GPU attributes through FFM, libibverbs' device list (given by the
 * caller), the host's files through {@link HostProbes}, and the NCCL settings. It does not yet run the end-to-end
 * check ({@link ProviderDoctor}) over the native provider's devices, so it cannot prove GDR end to end, and says so; without a GPU or a verbs device it ends HARDWARE_BLOCKED whatever the
 * settings say.
 */
public final class HostDoctor {
    private HostDoctor() {
    }

    /**
     * @param root  "/" or a fake tree (tests)
     * @param verbs what libibverbs answered
     * @param s     the NCCL settings in effect
     */
    public static DoctorReport run(final Path root, final NativeVerbs verbs, final NcclSettings s) {
        final HostProbes probes = new HostProbes(root);
        final List<Check> checks = new ArrayList<>();
        final CudaProbe probe = CudaGpu.probe();
        int gpus = 0;
        GpuAttributes attrs = null;
        if (probe.found() && probe.deviceCount() > 0) {
            gpus = probe.deviceCount();
            checks.add(new Check("GPU", "CUDA driver", Status.PASS, probe.toString()));
            try (CudaGpu g = CudaGpu.open(0)) {
                attrs = g.attributes();
                final int driver = g.driverVersion();
                checks.add(new Check("GPU", "driver version", driver >= GdrGate.DMABUF_MIN_DRIVER ? Status.PASS
                    : Status.FAIL, "cuDriverGetVersion = " + driver + " (" + driver / 1000 + "." + driver % 1000 / 10
                    + (driver >= GdrGate.DMABUF_MIN_DRIVER ? ", >= 11.7: DMA-BUF possible)" : ", < 11.7: no DMA-BUF)")));
                checks.add(new Check("GPU", "GPUDirect RDMA (116)", attrs.gpuDirectRdmaSupported() != 0 ? Status.PASS
                    : Status.FAIL, "GPU 0 " + attrs.name() + ": attribute 116 = " + attrs.gpuDirectRdmaSupported()));
                checks.add(new Check("GPU", "flush options (117)", Status.PASS, "attribute 117 = "
                    + attrs.flushWritesOptions()));
                checks.add(new Check("GPU", "writes ordering (118)", Status.PASS, "attribute 118 = "
                    + attrs.writesOrdering()));
                checks.add(new Check("GPU", "compute capability", Status.PASS, attrs.ccMajor() + "." + attrs.ccMinor()
                    + (attrs.ccMajor() < 9 ? " (< 9.0: received data needs a flush)" : " (>= 9.0: no flush needed)")));
                checks.add(new Check("GPU", "BAR1", attrs.bar1Bytes() > 0 ? Status.PASS : Status.UNKNOWN,
                    attrs.bar1Bytes() > 0 ? attrs.bar1Bytes() / (1 << 20) + " MiB total (" + attrs.bar1Evidence()
                    + ")" : attrs.bar1Evidence()));
            }
        } else {
            checks.add(new Check("GPU", "CUDA driver", Status.FAIL, "no GPU: " + probe));
        }
        checks.add(new Check("verbs", "libibverbs (FFM)", !verbs.loaded() || verbs.devices().isEmpty() ? Status.FAIL
            : Status.PASS, verbs.evidence()));
        final Check rdma = probes.rdmaDevices();
        final boolean ib = rdma.status() == Status.PASS;
        checks.add(rdma);
        checks.add(probes.uverbs());
        final Check peermem = probes.peermem();
        final boolean peer = peermem.status() == Status.PASS;
        checks.add(peermem);
        final boolean dmabufAttr = attrs != null && attrs.dmaBufSupported() != 0;
        final boolean driverOk = probe.driverVersion() >= GdrGate.DMABUF_MIN_DRIVER;
        final boolean dmabufHw = dmabufAttr && driverOk;
        checks.add(new Check("registration", "DMA-BUF", attrs == null ? Status.BLOCKED : dmabufHw
            && s.dmabufEnable().value() ? Status.PASS : Status.FAIL, attrs == null ? "no GPU to ask (attribute 124)"
            : "attribute 124 = " + attrs.dmaBufSupported() + ", driver " + probe.driverVersion() + (driverOk
            ? " >= 11070" : " < 11070") + "; provider support needs a verbs device (" + (ib ? probes.list(
            "sys/class/infiniband") : "none") + ")" + (dmabufHw && !s.dmabufEnable().value() ? "; disabled by "
            + NcclSettings.describe(s.dmabufEnable()) : "")));
        final Check gdrdrv = probes.gdrdrv();
        final Check gdrapi = HostProbes.gdrapi();
        checks.add(gdrdrv);
        checks.add(gdrapi);
        final SysfsScan scan = SysfsTopoReader.scan(root.resolve("sys"));
        checks.add(new Check("topology", "GPU-NIC distance", scan.gpuCount() > 0 && scan.rdmaCount() > 0
            ? Status.PASS : Status.BLOCKED, scan.gpuCount() + " NVIDIA GPU(s), " + scan.rdmaCount()
            + " RDMA NIC(s) among " + scan.inspected().size() + " PCI devices in " + root.resolve("sys/bus/pci/devices")
            + (scan.gpuCount() == 0 || scan.rdmaCount() == 0 ? ": no pair to measure" : "")));
        checks.add(probes.iommu());
        checks.add(probes.acs());
        checks.add(probes.memlock());
        checks.add(probes.containerDevices());
        final Verdict verdict;
        if (gpus == 0 || (!ib && verbs.devices().isEmpty())) {
            checks.add(new Check("end to end", "GDR", Status.BLOCKED, "no " + (gpus == 0 ? "GPU" : "") + (gpus == 0
                && !ib ? " and no " : "") + (!ib ? "verbs device" : "") + ": nothing can move GPU memory by RDMA"
                + (nonDefault(s) ? "; no setting changes that (" + nonDefaultList(s) + ")" : "")));
            verdict = Verdict.blocked("no " + (gpus == 0 ? "GPU" : "verbs device"));
        } else if (attrs.gpuDirectRdmaSupported() == 0) {
            verdict = Verdict.degraded("GPU gate: attribute 116 = 0", "");
        } else if (s.socketOnly()) {
            verdict = Verdict.degraded("NET gate: NET/Socket has no GPUDirect RDMA", (peer || dmabufHw)
                ? (s.ibDisable().value() ? NcclSettings.describe(s.ibDisable()) : NcclSettings.describe(s.net())) : "");
        } else if (!peer && !(dmabufHw && s.dmabufEnable().value())) {
            verdict = Verdict.degraded("NET gate: no peermem and no usable DMA-BUF", dmabufHw
                ? NcclSettings.describe(s.dmabufEnable()) : "");
        } else {
            checks.add(new Check("end to end", "GDR", Status.UNKNOWN, "not run: the host doctor does not yet "
                + "connect and move GPU memory through the native verbs provider (ProviderDoctor does, given two "
                + "contexts)"));
            verdict = Verdict.degraded("end to end not proven: the host doctor does not yet run the transfer over "
                + "the native provider", "");
        }
        final boolean gdrcopy = gdrdrv.status() == Status.PASS && gdrapi.status() == Status.PASS;
        final Facts f = new Facts(gpus, null, attrs == null ? null : attrs.gpuDirectRdmaSupported() != 0,
            attrs == null ? null : dmabufHw, peer, null, null, null, gdrcopy, ib || !verbs.devices().isEmpty());
        return new DoctorReport(false, "this machine", checks, SettingsTable.rows(s, f), verdict);
    }

    private static boolean nonDefault(final NcclSettings s) {
        return !nonDefaultList(s).isEmpty();
    }

    private static String nonDefaultList(final NcclSettings s) {
        final List<String> l = new ArrayList<>();
        s.all().stream().filter(x -> x.source() != io.gdrkit.core.config.Source.DEFAULT)
            .forEach(x -> l.add(x.name() + "=" + NcclSettings.display(x)));
        return String.join(", ", l);
    }
}
