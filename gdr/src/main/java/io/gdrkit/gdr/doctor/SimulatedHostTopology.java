/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import io.gdrkit.gdr.topo.TopoNode;
import io.gdrkit.gdr.topo.TopoSystem;
import io.gdrkit.gdr.topo.TopologyBuilder;
import io.gdrkit.gpu.GpuDevice;
import java.util.List;
import java.util.Map;

/**
 * The PCIe tree of the simulated host, built as a {@link TopoSystem} so that the path engine, not a fixed string,
 * decides its GPU-NIC distances: CPU 0, root complex pci0000:00, one PCIe switch, and below it the simulated GPU and
 * the software NICs, the layout of a DGX-style tray. Bus ids are made up for the simulation and labelled so.
 */
public final class SimulatedHostTopology {
    /** The switch every simulated device sits under. */
    public static final String SWITCH = "0000:10:00.0";

    private SimulatedHostTopology() {
    }

    /** @param nics the software NICs' names, in order; each gets bus 0000:(0x12 + i):00.0 */
    public static TopoSystem build(final GpuDevice gpu, final List<String> nics) {
        final TopologyBuilder b = new TopologyBuilder().source("the simulated host's topology (CPU 0 > pci0000:00 > "
            + "switch " + SWITCH + " > GPU and " + String.join(", ", nics) + "; made-up bus ids, simulated)");
        final TopoNode cpu = b.cpu(0);
        final TopoNode root = b.hostBridge("pci0000:00", cpu);
        final TopoNode sw = b.pciSwitch(SWITCH, root);
        final var a = gpu.attributes();
        b.gpu("0000:11:00.0", sw, TopologyBuilder.PCI_BW, Map.of("sm", Integer.toString(a.ccMajor() * 10
            + a.ccMinor()), "gdr", Integer.toString(a.gpuDirectRdmaSupported())));
        for (int i = 0; i < nics.size(); i++) {
            b.nic(nics.get(i), String.format("0000:%02x:00.0", 0x12 + i), sw);
        }
        return b.build();
    }
}
