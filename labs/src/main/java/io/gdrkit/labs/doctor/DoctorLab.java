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
            throw new IllegalArgumentException("the simulated host needs --gpu sim:<preset>, not " + gpuSpec);
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
