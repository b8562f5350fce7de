/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.doctor;

import io.gdrkit.gdr.doctor.DoctorReport;
import io.gdrkit.gdr.doctor.HostDoctor;
import io.gdrkit.gdr.doctor.NativeVerbs;
import io.gdrkit.gdr.doctor.ProviderDoctor;
import io.gdrkit.gdr.doctor.SimulatedHostTopology;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.VerbsContext;
import java.nio.file.Path;
import java.util.List;

/**
 * The doctor as a lab: this machine ({@link HostDoctor}), or the simulated host, that is two software NICs and a
 * simulated GPU under one PCIe switch, probed by {@link ProviderDoctor} through verbs and GPU calls. Returns the
 * report; printing is the CLI's.
 */
public final class DoctorLab {
    private DoctorLab() {
    }

    /**
     * What the native provider finds on this machine, for the host doctor's verbs layer: the libibverbs device list
     * and, for each device, port 1's state and link layer, GID 0, and NCCL's DMA-BUF probe (ibv_reg_dmabuf_mr with
     * fd = -1: EBADF means supported, EOPNOTSUPP means not). Never throws: a failure is part of the evidence.
     */
    public static NativeVerbs nativeVerbs() {
        final io.gdrkit.ibverbs.NativeProvider.Probe p = io.gdrkit.ibverbs.NativeProvider.probe();
        final List<String> devices = new java.util.ArrayList<>();
        for (final io.gdrkit.verbs.Device d : p.devices()) {
            devices.add(describe(d));
        }
        return new NativeVerbs(p.libraryLoaded(), devices, "native provider: " + p.evidence());
    }

    private static String describe(final io.gdrkit.verbs.Device d) {
        final StringBuilder sb = new StringBuilder(d.name());
        try (VerbsContext ctx = d.open()) {
            final io.gdrkit.verbs.PortAttr port = ctx.queryPort(1);
            sb.append(" port 1 ").append(port.state() == io.gdrkit.verbs.PortAttr.PORT_ACTIVE ? "ACTIVE"
                : "state " + port.state()).append(' ').append(port.linkLayer()).append(" lid ").append(port.lid());
            try (io.gdrkit.verbs.ProtectionDomain pd = ctx.allocPd()) {
                try {
                    pd.registerDmaBufMr(0, 4096, 0, -1, io.gdrkit.verbs.AccessFlags.LOCAL_WRITE).deregister();
                    sb.append("; dmabuf probe: fd -1 accepted (unexpected)");
                } catch (final io.gdrkit.verbs.VerbsException e) {
                    sb.append("; dmabuf probe (fd -1): ").append(io.gdrkit.core.Errno.name(e.errno()))
                        .append(e.errno() == io.gdrkit.core.Errno.EBADF ? " = supported" : " = not supported");
                }
            }
        } catch (final RuntimeException e) {
            sb.append(" (could not open: ").append(e.getMessage()).append(')');
        }
        return sb.toString();
    }

    /** This machine. */
    public static DoctorReport host(final Path root, final NativeVerbs verbs, final NcclSettings settings) {
        return HostDoctor.run(root, verbs, settings);
    }

    /**
     * The simulated host.
     *
     * @param gpuSpec  {@code sim:<preset>}
     * @param dmaBuf   the software provider's DMA-BUF capability, or null for its default (property or on)
     * @param peermem  the software provider's peermem capability, or null for its default
     * @throws IllegalArgumentException naming a bad GPU spec or provider property
     */
    public static DoctorReport simulated(final String gpuSpec, final Boolean dmaBuf, final Boolean peermem,
                                         final NcclSettings settings) {
        if (gpuSpec == null || !gpuSpec.startsWith("sim:")) {
            throw new IllegalArgumentException("the simulated host needs a simulated GPU (sim:<preset>), not " + gpuSpec);
        }
        final SoftNicContext ctx = new SoftNicContext();
        if (dmaBuf != null) {
            ctx.dmaBuf(dmaBuf);
        }
        if (peermem != null) {
            ctx.peermem(peermem);
        }
        final SoftNicDriver launched;
        try {
            launched = SoftNicDriver.launch(ctx);
        } catch (final IllegalArgumentException e) {
            throw new IllegalArgumentException("software provider: " + e.getMessage(), e);
        }
        try (SoftNicDriver driver = launched; GpuDevice gpu = GpuDevices.open(gpuSpec);
             VerbsContext ctx0 = driver.addDevice("soft0").open();
             VerbsContext ctx1 = driver.addDevice("soft1").open()) {
            final SoftNicContext c = driver.context();
            final String note = "provider capabilities set: DMA-BUF " + (c.dmaBuf() ? "on" : "off") + " ("
                + SoftNicContext.DMABUF_PROP + "), peermem " + (c.peermem() ? "on" : "off") + " ("
                + SoftNicContext.PEERMEM_PROP + ")";
            return ProviderDoctor.run(new ProviderDoctor.Input(gpu, ctx0, ctx1, note,
                SimulatedHostTopology.build(gpu, List.of("soft0", "soft1")), settings));
        }
    }
}
