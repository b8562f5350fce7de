/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gdr.topo.GdrLevel;
import io.gdrkit.gdr.topo.NcclTopoXmlReader;
import io.gdrkit.gdr.topo.NvidiaSmiTopoReader;
import io.gdrkit.gdr.topo.PathComputer;
import io.gdrkit.gdr.topo.PathOptions;
import io.gdrkit.gdr.topo.PathType;
import io.gdrkit.gdr.topo.SysfsScan;
import io.gdrkit.gdr.topo.SysfsTopoReader;
import io.gdrkit.gdr.topo.TopoGdr;
import io.gdrkit.gdr.topo.TopoGdrPairs;
import io.gdrkit.gdr.topo.TopoNode;
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
        final PathOptions options;
        try {
            // one rule for topo, doctor, coll and the gates: NcclSettings resolves the level (GdrLevel.effective)
            // the environment, -Dgdrkit.* properties and --set NAME=VALUE (SettingsReader.ofProcess)
            final NcclSettings env = new NcclSettings.Context().conclude();
            final PathOptions base = env.pathOptions();
            options = gdrLevel == null ? base : base.withGdrLevel(GdrLevel.parse(gdrLevel, "--gdr-level",
                GdrLevel.fallback(env.gdrC2c().value())));
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        if (!options.ibHca().selectsAll()) {
            final List<String> leftOut = system.nics().stream().filter(n -> !options.ibHca().accepts(n))
                .map(TopoNode::id).toList();
            notes.add(options.ibHca().describe() + ": " + (leftOut.isEmpty() ? "every NIC of the source is used"
                : "left out " + String.join(", ", leftOut) + " (no GDR, no local GPU, no PXN through them)"));
        }
        final GdrLevel level = options.gdrLevel();
        final int gdrRead = options.gdrRead();
        final TopoPaths paths = PathComputer.compute(system, options);
        final TopoGdrPairs decisions = new TopoGdrPairs(paths, level, gdrRead);
        final List<TopoNode> gpus = system.gpus();
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
        }
        final PathType effective = gpus.isEmpty() || system.nics().isEmpty() ? level.path()
            : paths.gdrDistance(gpus.getFirst(), system.nics().getFirst(), level).level().path();
        final String levelText = effective + " (" + level.origin()
            + (level.origin().equals("default") ? ": NCCL 2.30's default with NCCL_NET_GDR_C2C=1" : "") + ")";
        if (json) {
            // streamed: the GPU x NIC entries (64 x 10,000 on a large host) are written as they are decided
            final Map<String, Object> root = jsonRoot(system, paths, levelText, gdrRead);
            final ObjectMapper mapper = new ObjectMapper()
                .disable(com.fasterxml.jackson.databind.SerializationFeature.FLUSH_AFTER_WRITE_VALUE);
            final com.fasterxml.jackson.core.JsonGenerator gen = mapper.getFactory().createGenerator(out);
            gen.disable(com.fasterxml.jackson.core.JsonGenerator.Feature.AUTO_CLOSE_TARGET);
            gen.writeStartObject();
            for (final Map.Entry<String, Object> e : root.entrySet()) {
                gen.writeFieldName(e.getKey());
                mapper.writeValue(gen, e.getValue());
            }
            gen.writeArrayFieldStart("gpu_nic");
            final List<Map<String, Object>> nicNames = new ArrayList<>();
            for (final TopoNode n : system.nics()) {
                nicNames.add(names(n, "nic"));
            }
            for (final TopoNode g : gpus) {
                final Map<String, Object> gpuNames = names(g, "gpu");
                for (int i = 0; i < system.nics().size(); i++) {
                    final TopoNode n = system.nics().get(i);
                    gen.writeStartObject();
                    writeFields(gen, gpuNames);
                    writeFields(gen, nicNames.get(i));
                    writeDecisions(gen, paths, decisions, g, n);
                    gen.writeEndObject();
                }
            }
            gen.writeEndArray();
            gen.writeFieldName("gpu_gpu");
            mapper.writeValue(gen, gpuGpu);
            gen.writeFieldName("notes");
            mapper.writeValue(gen, notes);
            gen.writeEndObject();
            gen.flush();
            out.println();
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
        for (final TopoNode g : gpus) {
            for (final TopoNode n : system.nics()) {
                final Map<String, Object> m = gpuNicEntry(paths, decisions, g, n);
                out.println(String.format("%-6s %-13s NIC%-3s %-14s %-4s write=%-7s read=%-7s mechanism=%-7s %s",
                m.get("gpu"), m.get("gpu_busid"), m.get("nic_dev"), m.get("nic"), m.get("path"),
                m.get("gdr_write"), m.get("gdr_read"), m.get("mechanism"), m.get("reason")));
            }
        }
        return 0;
    }

    /** One GPU x NIC entry: path, both GDR decisions and the reason. */
    private static Map<String, Object> gpuNicEntry(final TopoPaths paths, final TopoGdrPairs decisions,
                                                   final TopoNode g, final TopoNode n) {
        final Map<String, Object> m = names(g, "gpu");
        m.putAll(names(n, "nic"));
        m.putAll(decisions(paths, decisions, g, n));
        return m;
    }

    /** An entry's names of a GPU (gpu, gpu_dev, gpu_busid) or a NIC (nic, nic_dev, nic_busid). */
    private static Map<String, Object> names(final TopoNode node, final String prefix) {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put(prefix, prefix.equals("gpu") ? node.label() : node.id());
        m.put(prefix + "_dev", node.dev());
        m.put(prefix + "_busid", node.busId());
        return m;
    }

    /** An entry's fields after the names: path, distance, relay, both GDR decisions, mechanism and reason. */
    private static Map<String, Object> decisions(final TopoPaths paths, final TopoGdrPairs decisions,
                                                 final TopoNode g, final TopoNode n) {
        final TopoNode relay = paths.relay(g, n);
        final TopoGdr.Decision w = decisions.decide(g, n, false);
        final TopoGdr.Decision r = decisions.decide(g, n, true);
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", paths.type(g, n).name());
        m.put("distance", w.distance().name());
        m.put("relay", relay == null ? null : relay.label());
        m.put("gdr_write", w.enabled().json());
        m.put("gdr_read", r.enabled().json());
        m.put("mechanism", w.enabled() == TopoGdr.Tri.NO && r.enabled() == TopoGdr.Tri.NO ? "none" : "unknown");
        m.put("reason", w.enabled() != r.enabled() ? w.reason() + " | send: " + r.reason() : w.reason());
        return m;
    }

    /** {@link #decisions}'s fields written straight to the generator: no map per pair. */
    private static void writeDecisions(final com.fasterxml.jackson.core.JsonGenerator gen, final TopoPaths paths,
                                       final TopoGdrPairs decisions, final TopoNode g, final TopoNode n)
        throws IOException {
        final TopoNode relay = paths.relay(g, n);
        final TopoGdr.Decision w = decisions.decide(g, n, false);
        final TopoGdr.Decision r = decisions.decide(g, n, true);
        gen.writeStringField("path", paths.type(g, n).name());
        gen.writeStringField("distance", w.distance().name());
        if (relay == null) {
            gen.writeNullField("relay");
        } else {
            gen.writeStringField("relay", relay.label());
        }
        writeTri(gen, "gdr_write", w.enabled());
        writeTri(gen, "gdr_read", r.enabled());
        gen.writeStringField("mechanism", w.enabled() == TopoGdr.Tri.NO && r.enabled() == TopoGdr.Tri.NO ? "none"
            : "unknown");
        gen.writeStringField("reason", w.enabled() != r.enabled() ? w.reason() + " | send: " + r.reason()
            : w.reason());
    }

    private static void writeTri(final com.fasterxml.jackson.core.JsonGenerator gen, final String name,
                                 final TopoGdr.Tri value) throws IOException {
        if (value == TopoGdr.Tri.UNKNOWN) {
            gen.writeStringField(name, "unknown");
        } else {
            gen.writeBooleanField(name, value == TopoGdr.Tri.YES);
        }
    }

    /** Writes the fields as the mapper writes a map's, without the mapper's per-entry lookups. */
    private static void writeFields(final com.fasterxml.jackson.core.JsonGenerator gen, final Map<String, Object> m)
        throws IOException {
        for (final Map.Entry<String, Object> e : m.entrySet()) {
            final Object v = e.getValue();
            switch (v) {
                case null -> gen.writeNullField(e.getKey());
                case String text -> gen.writeStringField(e.getKey(), text);
                case Integer i -> gen.writeNumberField(e.getKey(), i);
                case Boolean b -> gen.writeBooleanField(e.getKey(), b);
                default -> gen.writeObjectField(e.getKey(), v);
            }
        }
    }

    /** The root's fields before gpu_nic (source, level, gpus, nics); gpu_nic, gpu_gpu and notes are streamed. */
    private static Map<String, Object> jsonRoot(final TopoSystem system, final TopoPaths paths, final String level,
                                                final int gdrRead) {
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
            m.put("ib_hca_selected", paths.options().ibHca().accepts(n));
            final TopoNode local = paths.localGpu(n);
            m.put("local_gpu", local == null ? null : local.label());
            nics.add(m);
        }
        root.put("gpus", gpus);
        root.put("nics", nics);
        return root;
    }
}
