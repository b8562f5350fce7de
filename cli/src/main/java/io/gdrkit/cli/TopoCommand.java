/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gdr.gate.GdrDecision;
import io.gdrkit.gdr.gate.GdrGate;
import io.gdrkit.gdr.gate.GdrSettings;
import io.gdrkit.gdr.gate.GpuCaps;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.topo.GdrDistanceCheck;
import io.gdrkit.gdr.topo.GdrLevel;
import io.gdrkit.gdr.topo.NcclTopoXmlReader;
import io.gdrkit.gdr.topo.NvidiaSmiTopoReader;
import io.gdrkit.gdr.topo.PathComputer;
import io.gdrkit.gdr.topo.PathType;
import io.gdrkit.gdr.topo.SysfsScan;
import io.gdrkit.gdr.topo.SysfsTopoReader;
import io.gdrkit.gdr.topo.TopoNode;
import io.gdrkit.gdr.topo.TopoPaths;
import io.gdrkit.gdr.topo.TopoSystem;
import io.gdrkit.gdr.topo.TopologyParseException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code topo}: the host's topology (from sysfs, an NCCL topology XML file or {@code nvidia-smi topo -m} text), the
 * NCCL path type of every GPU-NIC and GPU-GPU pair, and the GDR read and write decision for each GPU-NIC pair with
 * its reasons. GPU and NIC support come from the file's {@code gdr}/{@code sm} attributes where it has them; sysfs
 * and nvidia-smi text do not carry them, and the output says so.
 */
@Command(name = "topo", mixinStandardHelpOptions = true,
    description = "Topology, NCCL path types and GDR decisions per GPU-NIC pair, with reasons.")
final class TopoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--topo-file", description = "An NCCL topology XML file (NCCL_TOPO_FILE format).")
    Path topoFile;

    @Option(names = "--nvidia-smi", description = "The text of `nvidia-smi topo -m`.")
    Path nvidiaSmi;

    @Option(names = "--gdr-level", description = "NCCL_NET_GDR_LEVEL (a name or an old number); default from the "
        + "environment, else PXB.")
    String gdrLevel;

    @Option(names = "--json", description = "JSON: gpu_nic entries (gpu, nic, path, gdr_read, gdr_write, reason) and "
        + "gpu_gpu entries.")
    boolean json;

    @Override
    public Integer call() throws IOException {
        if (topoFile != null && nvidiaSmi != null) {
            throw new ParameterException(spec.commandLine(), "give --topo-file or --nvidia-smi, not both");
        }
        final PrintWriter out = spec.commandLine().getOut();
        final TopoSystem system;
        String note = null;
        try {
            if (topoFile != null) {
                system = NcclTopoXmlReader.read(topoFile);
            } else if (nvidiaSmi != null) {
                system = NvidiaSmiTopoReader.read(nvidiaSmi);
                note = "nvidia-smi text carries no GPU/NIC GDR support: the decisions below assume both supported";
            } else {
                final SysfsScan scan = SysfsTopoReader.scan();
                system = scan.system();
                note = "sysfs carries no GDR support attributes; see `gdrkit doctor` for the device probes";
                if (!json) {
                    out.println(scan.report());
                }
            }
        } catch (final TopologyParseException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        final GdrSettings settings;
        try {
            final GdrSettings env = GdrSettings.fromEnvironment(System.getenv());
            settings = gdrLevel == null ? env : new GdrSettings(GdrLevel.parse(gdrLevel, "--gdr-level"),
                env.gdrRead(), env.dmabufEnable(), env.forceFlush(), env.localRegister());
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        final TopoPaths paths = PathComputer.compute(system);
        final List<Map<String, Object>> gpuNic = new ArrayList<>();
        final List<Map<String, Object>> gpuGpu = new ArrayList<>();
        final List<TopoNode> gpus = system.gpus();
        for (final TopoNode g : gpus) {
            boolean nvlinkPeer = false;
            for (final TopoNode o : gpus) {
                if (o != g) {
                    final PathType t = paths.type(g, o);
                    nvlinkPeer |= t.compareTo(PathType.NVB) <= 0;
                    final Map<String, Object> m = new LinkedHashMap<>();
                    m.put("gpu", g.label());
                    m.put("peer", o.label());
                    m.put("path", t.name());
                    gpuGpu.add(m);
                }
            }
            final GpuCaps caps = new GpuCaps(g.typeIndex(), !"0".equals(g.attributes().get("gdr")),
                g.intAttribute("sm", 0), false, 0, nvlinkPeer, gpus.size() == 1, "topology " + system.source()
                + " (gdr=" + g.attributes().getOrDefault("gdr", "unset") + ", sm=" + g.attributes().getOrDefault("sm",
                "unset") + ")");
            for (final TopoNode n : system.nics()) {
                final GdrDistanceCheck dist = paths.gdrDistance(g, n, settings.gdrLevel());
                final NetCaps net = new NetCaps(n.typeIndex(), n.id(), !"0".equals(n.attributes().get("gdr")),
                    "topology attribute gdr=" + n.attributes().getOrDefault("gdr", "unset"), false,
                    "not probed from a topology description");
                final GdrDecision w = GdrGate.decide(caps, net, dist.distance(), dist.path().type() == PathType.PXN,
                    false, settings);
                final GdrDecision r = GdrGate.decide(caps, net, dist.distance(), dist.path().type() == PathType.PXN,
                    true, settings);
                final Map<String, Object> m = new LinkedHashMap<>();
                m.put("gpu", g.label());
                m.put("nic", n.id());
                m.put("path", paths.type(g, n).name());
                m.put("gdr_read", r.enabled());
                m.put("gdr_write", w.enabled());
                m.put("reason", (w.enabled() && r.enabled()) ? w.logLine() : (w.enabled() ? r.logLine() : w.logLine()));
                gpuNic.add(m);
            }
        }
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            root.put("source", system.source());
            root.put("gdr_level", settings.gdrLevel().toString());
            root.put("gpu_nic", gpuNic);
            root.put("gpu_gpu", gpuGpu);
            if (note != null) {
                root.put("note", note);
            }
            out.println(new ObjectMapper().writeValueAsString(root));
            return 0;
        }
        out.println("# topology: " + system.source() + "; " + gpus.size() + " GPU(s), " + system.nics().size()
            + " NIC(s); GDR level " + settings.gdrLevel());
        if (note != null) {
            out.println("# " + note);
        }
        if (gpus.isEmpty()) {
            out.println("no GPU in this topology: nothing to decide");
            return 0;
        }
        out.println(paths.matrix());
        out.println("GPU x NIC: path, GDR write (receive), GDR read (send), reason");
        for (final Map<String, Object> m : gpuNic) {
            out.println(String.format("%-6s %-12s %-4s write=%-5s read=%-5s %s", m.get("gpu"), m.get("nic"),
                m.get("path"), m.get("gdr_write"), m.get("gdr_read"), m.get("reason")));
        }
        return 0;
    }
}
