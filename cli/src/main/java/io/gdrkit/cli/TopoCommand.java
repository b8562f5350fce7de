/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gdr.gate.GdrSettings;
import io.gdrkit.gdr.topo.GdrLevel;
import io.gdrkit.gdr.topo.NcclTopoXmlReader;
import io.gdrkit.gdr.topo.NvidiaSmiTopoReader;
import io.gdrkit.gdr.topo.PathComputer;
import io.gdrkit.gdr.topo.PathOptions;
import io.gdrkit.gdr.topo.PathType;
import io.gdrkit.gdr.topo.SysfsScan;
import io.gdrkit.gdr.topo.SysfsTopoReader;
import io.gdrkit.gdr.topo.TopoGdr;
import io.gdrkit.gdr.topo.TopoNode;
import io.gdrkit.gdr.topo.TopoPath;
import io.gdrkit.gdr.topo.TopoPaths;
import io.gdrkit.gdr.topo.TopoSystem;
import io.gdrkit.gdr.topo.TopologyParseException;
import io.gdrkit.gdr.topo.TopologyReadException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code topo}: the host's topology (from sysfs, an NCCL topology XML file or {@code nvidia-smi topo -m} text), the
 * NCCL path type of every GPU-NIC and GPU-GPU pair, and NCCL's GDR read and write decision for each GPU-NIC pair
 * with its reasons. GPUs and NICs are named as the source names them (the file's {@code dev}, bus id and NIC name).
 * What the source does not say stays {@code unknown}: GDR support of bare PCI devices, compute capability, and
 * always the registration mechanism (no topology source says DMA-BUF or peermem).
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
        + "environment, else NCCL's default (P2C with NCCL_NET_GDR_C2C=1, its default).")
    String gdrLevel;

    /**
     * gpus, nics, gpu_nic entries (gpu, gpu_dev, gpu_busid, nic, nic_dev, nic_busid, path, gdr_read, gdr_write as
     * true/false/"unknown", mechanism, reason), gpu_gpu entries and notes.
     */
    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    @Override
    public Integer call() throws IOException {
        final boolean json = jsonOption.json;
        if (topoFile != null && nvidiaSmi != null) {
            throw new ParameterException(spec.commandLine(), "give --topo-file or --nvidia-smi, not both");
        }
        final PrintWriter out = spec.commandLine().getOut();
        final TopoSystem system;
        final List<String> notes = new ArrayList<>();
        try {
            if (topoFile != null) {
                system = NcclTopoXmlReader.read(topoFile);
            } else if (nvidiaSmi != null) {
                system = NvidiaSmiTopoReader.read(nvidiaSmi);
                notes.add("nvidia-smi text carries no GDR support and no compute capability: those stay unknown");
            } else {
                final SysfsScan scan = SysfsTopoReader.scan();
                system = scan.system();
                notes.add("sysfs carries no GDR support attributes; see `gdrkit doctor` for the device probes");
                if (!json) {
                    out.println(scan.report());
                }
            }
        } catch (final TopologyReadException e) {
            spec.commandLine().getErr().println("gdrkit topo: " + e.getMessage());
            spec.commandLine().getErr().flush();
            return 2;
        } catch (final TopologyParseException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        } catch (final IOException | RuntimeException e) {
            // name the input and the cause: "/x.xml" alone, or "Input length = 3", says neither
            final Path input = topoFile != null ? topoFile : nvidiaSmi;
            if (input == null) {
                throw e;
            }
            throw new ParameterException(spec.commandLine(), (topoFile != null ? "--topo-file " : "--nvidia-smi ")
                + input + ": " + Errors.describe(e));
        }
        if (gdrLevel != null && gdrLevel.chars().allMatch(Character::isDigit) && !gdrLevel.isEmpty()
            && (gdrLevel.length() > 2 || Integer.parseInt(gdrLevel) > 5)) {
            throw new ParameterException(spec.commandLine(), "--gdr-level " + gdrLevel + " is out of range: a path "
                + "type name (LOC, NVL, PIX, PXB, PXN, PHB, SYS) or an old number 0..5");
        }
        notes.addAll(0, system.notes());
        final GdrLevel level;
        final int gdrRead;
        try {
            final GdrSettings env = GdrSettings.fromEnvironment(System.getenv());
            level = gdrLevel == null ? env.gdrLevel() : GdrLevel.parse(gdrLevel, "--gdr-level");
            gdrRead = env.gdrRead();
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        final TopoPaths paths = PathComputer.compute(system, PathOptions.DEFAULTS.withGdrLevel(level)
            .withGdrRead(gdrRead));
        final List<TopoNode> gpus = system.gpus();
        final List<Map<String, Object>> gpuNic = new ArrayList<>();
        final List<Map<String, Object>> gpuGpu = new ArrayList<>();
        for (final TopoNode g : gpus) {
            for (final TopoNode o : gpus) {
                if (o != g) {
                    final Map<String, Object> m = new LinkedHashMap<>();
                    m.put("gpu", g.label());
                    m.put("peer", o.label());
                    m.put("path", paths.type(g, o).name());
                    gpuGpu.add(m);
                }
            }
            for (final TopoNode n : system.nics()) {
                final TopoPath path = paths.path(g, n);
                final TopoGdr.Decision w = TopoGdr.decide(paths, g, n, false, level, gdrRead);
                final TopoGdr.Decision r = TopoGdr.decide(paths, g, n, true, level, gdrRead);
                final Map<String, Object> m = new LinkedHashMap<>();
                m.put("gpu", g.label());
                m.put("gpu_dev", g.dev());
                m.put("gpu_busid", g.busId());
                m.put("nic", n.id());
                m.put("nic_dev", n.dev());
                m.put("nic_busid", n.busId());
                m.put("path", path.type().name());
                m.put("distance", w.distance().name());
                m.put("relay", path.intermediate() == null ? null : path.intermediate().label());
                m.put("gdr_write", w.enabled().json());
                m.put("gdr_read", r.enabled().json());
                m.put("mechanism", w.enabled() == TopoGdr.Tri.NO && r.enabled() == TopoGdr.Tri.NO ? "none"
                    : "unknown");
                m.put("reason", w.enabled() != r.enabled() ? w.reason() + " | send: " + r.reason() : w.reason());
                gpuNic.add(m);
            }
        }
        final PathType effective = gpus.isEmpty() || system.nics().isEmpty() ? level.path()
            : paths.gdrDistance(gpus.getFirst(), system.nics().getFirst(), level).level().path();
        final String levelText = effective + " (" + level.origin()
            + (level.origin().equals("default") ? ": NCCL 2.30's default with NCCL_NET_GDR_C2C=1" : "") + ")";
        if (json) {
            out.println(new ObjectMapper().writeValueAsString(jsonRoot(system, paths, levelText, gdrRead, notes,
                gpuNic, gpuGpu)));
            return 0;
        }
        out.println("# topology: " + system.source() + "; " + gpus.size() + " GPU(s), " + system.nics().size()
            + " NIC(s); GDR level " + levelText + "; NCCL_NET_GDR_READ=" + (gdrRead < 0 ? "default" : gdrRead));
        for (final String note : notes) {
            out.println("# note: " + note);
        }
        if (gpus.isEmpty()) {
            out.println("no GPU in this topology: nothing to decide");
            return 0;
        }
        out.println(paths.matrix());
        for (final TopoNode n : system.nics()) {
            final TopoNode local = paths.localGpu(n);
            out.println(n.label() + " " + n.id() + ": NCCL's local GPU " + (local == null
                ? "none (no GPU picks this NIC, as for a storage NIC: no PXN through it)" : local.label()));
        }
        out.println();
        out.println("GPU x NIC: path, GDR write (receive), GDR read (send), mechanism, reason");
        for (final Map<String, Object> m : gpuNic) {
            out.println(String.format("%-6s %-13s NIC%-3s %-14s %-4s write=%-7s read=%-7s mechanism=%-7s %s",
                m.get("gpu"), m.get("gpu_busid"), m.get("nic_dev"), m.get("nic"), m.get("path"),
                m.get("gdr_write"), m.get("gdr_read"), m.get("mechanism"), m.get("reason")));
        }
        return 0;
    }

    private static Map<String, Object> jsonRoot(final TopoSystem system, final TopoPaths paths, final String level,
                                                final int gdrRead, final List<String> notes,
                                                final List<Map<String, Object>> gpuNic,
                                                final List<Map<String, Object>> gpuGpu) {
        final Map<String, Object> root = new LinkedHashMap<>();
        root.put("source", system.source());
        root.put("gdr_level", level);
        root.put("gdr_read_setting", gdrRead < 0 ? "default" : Integer.toString(gdrRead));
        final List<Map<String, Object>> gpus = new ArrayList<>();
        for (final TopoNode g : system.gpus()) {
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("label", g.label());
            m.put("dev", g.dev());
            m.put("busid", g.busId());
            m.put("sm", g.attributes().containsKey("sm") ? g.intAttribute("sm", 0) : "unknown");
            m.put("gdr", TopoGdr.gpuSupport(g).value().json());
            m.put("gdr_source", TopoGdr.gpuSupport(g).evidence());
            gpus.add(m);
        }
        final List<Map<String, Object>> nics = new ArrayList<>();
        for (final TopoNode n : system.nics()) {
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("label", n.label());
            m.put("name", n.id());
            m.put("dev", n.dev());
            m.put("busid", n.busId());
            m.put("gdr", TopoGdr.nicSupport(n).value().json());
            m.put("gdr_source", TopoGdr.nicSupport(n).evidence());
            final TopoNode local = paths.localGpu(n);
            m.put("local_gpu", local == null ? null : local.label());
            nics.add(m);
        }
        root.put("gpus", gpus);
        root.put("nics", nics);
        root.put("gpu_nic", gpuNic);
        root.put("gpu_gpu", gpuGpu);
        root.put("notes", notes);
        return root;
    }
}
