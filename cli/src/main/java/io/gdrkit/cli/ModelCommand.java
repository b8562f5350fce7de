/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.labs.model.CostFit;
import io.gdrkit.labs.model.CrossoverModel;
import io.gdrkit.labs.model.HeldBack;
import io.gdrkit.labs.model.Measurement;
import io.gdrkit.labs.model.ModelInputs;
import io.gdrkit.labs.model.ModelLab;
import io.gdrkit.labs.model.SaturationModel;
import io.gdrkit.labs.model.TopologyCostModel;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code gdrkit model qps|crossover|topology}: performance models fitted to gdrkit's own measurements (live, or
 * from recorded JSON lines / gpu-path tables), each with its inputs, its coefficients and the error at a held-back
 * measurement. The fitting is in {@code io.gdrkit.labs.model}; this prints.
 */
@Command(name = "model", mixinStandardHelpOptions = true,
    description = "Performance models fitted to measurements, each checked against a held-back measurement.",
    subcommands = {ModelCommand.Qps.class, ModelCommand.Crossover.class, ModelCommand.Topology.class})
public final class ModelCommand implements Runnable {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /**
     * What --input's file gives: a file that cannot be read or holds no usable measurements is a bad --input value
     * (a usage error, exit 2), said in one line.
     */
    static <T> T fromInput(final CommandSpec spec, final Path input, final java.util.function.Supplier<T> read) {
        try {
            return read.get();
        } catch (final RuntimeException e) {
            final String why = Errors.describeWithInput(e);
            throw new ParameterException(spec.commandLine(), "--input " + (why.startsWith(input.toString()) ? why
                : input + ": " + why));
        }
    }

    /** Bandwidth against the number of QPs. */
    @Command(name = "qps", mixinStandardHelpOptions = true,
        description = "Multi-QP saturation: fits 1/bw(q) = a + b/q + c*q to write_bw measured at several QP counts "
            + "(live on the in-JVM fabric, or from perf --json lines) and predicts a held-back QP count.")
    static final class Qps implements java.util.concurrent.Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--input", paramLabel = "FILE", description = "perf --json lines (qps, bw_avg_mib_s) instead "
            + "of measuring, e.g. docs/results/qp-scaling.jsonl.")
        Path input;

        /** With --input: only lines of this fabric. */
        @picocli.CommandLine.Mixin
        Mixins.Fabric fabricOption;

        @Option(names = "--test", defaultValue = "write_bw", description = "With --input: the test (default "
            + "write_bw).")
        String test;

        @Option(names = {"-s", "--size"}, converter = Sizes.IntConverter.class, description = "Message size, bytes "
            + "with K, M or G: live, default 64K; with --input, a filter.")
        Integer size;

        @Option(names = "--qps", split = ",", defaultValue = "1,2,4,8", description = "Live: QP counts (default "
            + "1,2,4,8).")
        int[] qps;

        @Option(names = {"-n", "--iters"}, defaultValue = "5000", description = "Live: messages per run.")
        long iters;

        @Option(names = "--runs", defaultValue = "3", description = "Live: runs per QP count (median taken).")
        int runs;

        @Option(names = "--hold-back", description = "QP count held back (default: the largest).")
        Double holdBack;

        @picocli.CommandLine.Mixin
        Mixins.Json jsonOption;

        @picocli.CommandLine.Mixin
        Mixins.SetValues set;

        @Override
        public Integer call() {
            final boolean json = jsonOption.json;
            final List<Measurement> in;
            if (fabricOption.fabric != null && input == null) {
                throw new ParameterException(spec.commandLine(), "--fabric filters --input's lines: give --input FILE");
            }
            if (input != null) {
                in = fromInput(spec, input, () -> ModelInputs.qpScaling(input, test, fabricOption.fabric == null
                    ? null : fabricOption.fabric.label(), size));
            } else {
                if (runs < 1 || runs > 100 || iters < 1 || Arrays.stream(qps).anyMatch(q -> q < 1 || q > 1024)) {
                    throw new ParameterException(spec.commandLine(), "--runs 1..100, -n >= 1, --qps each 1..1024");
                }
                Counts.atMost(spec.commandLine(), "-n/--iters", iters, Counts.MAX_ITERS);
                final int s = size == null ? 65536 : size;
                if (s < 1 || s > (64 << 20)) {
                    throw new ParameterException(spec.commandLine(), "-s must be 1 .. 67108864");
                }
                in = ModelLab.qpScaling(s, qps, iters, runs);
            }
            final SaturationModel m = input != null ? fromInput(spec, input, () -> SaturationModel.fit(in, holdBack))
                : SaturationModel.fit(in, holdBack);
            final PrintWriter out = spec.commandLine().getOut();
            if (json) {
                final ObjectNode o = JSON.createObjectNode();
                o.put("model", "qps");
                o.put("simulated", true);
                o.put("formula", "1/bw(q) = a + b/q + c*q  (bw in MiB/s, time per MiB in s)");
                o.set("inputs", inputs(in));
                o.set("fit", fit(m.fit()));
                // the model's best only where it fits and agrees with the measurements; null otherwise
                final boolean recommend = m.fits() && m.bestAgrees();
                o.put("fits", m.fits());
                o.put("best_agrees", m.bestAgrees());
                o.put("best_qps", recommend ? finite(m.bestQps()) : null);
                o.put("best_mib_s", recommend ? finite(m.bestMibS()) : null);
                o.put("half_qps", m.fits() ? finite(m.halfQps()) : null);
                o.put("measured_best_qps", m.measuredBest().x());
                o.put("measured_best_mib_s", r3(m.measuredBest().mibS()));
                o.set("held_back", held(m.heldBack()));
                o.put("verdict", qpsVerdict(m));
                out.println(o);
                return 0;
            }
            out.println("# model qps: 1/bw(q) = a + b/q + c*q, fitted to write_bw (software NICs, simulated)");
            printInputs(out, "QPs", in);
            printFit(out, m.fit());
            printHeld(out, "QPs", m.heldBack());
            if (m.fits() && m.bestAgrees()) {
                if (m.c() > 0) {
                    out.printf(Locale.ROOT, "best: %.2f QPs, %.1f MiB/s (where more QPs start to cost more than "
                        + "they hide)%n", m.bestQps(), m.bestMibS());
                } else {
                    out.printf(Locale.ROOT, "saturates at %s MiB/s (1/a); %s%n", num(m.bestMibS()), m.b() > 0
                        ? "half of it at " + num(m.halfQps()) + " QPs (b/a)"
                        : "flat: QPs neither help nor cost (b = c = 0)");
                }
            }
            out.println(qpsVerdict(m));
            return 0;
        }
    }

    /**
     * The line that says what to use: the model's best where it fits and agrees with the measurements, otherwise
     * the measured best, with the reason the model is not followed.
     */
    static String qpsVerdict(final SaturationModel m) {
        final Measurement best = m.measuredBest();
        final String measured = String.format(Locale.ROOT, "measured best: %s %s, %.1f MiB/s", num(best.x()),
            best.x() == 1 ? "QP" : "QPs", best.mibS());
        if (!m.fits()) {
            return String.format(Locale.ROOT, "does not fit: held-back error %+.1f %% exceeds %.0f %%, so the model "
                + "recommends nothing; %s", pct(m.heldBack().relativeError()), 100 * HeldBack.FIT_LIMIT, measured);
        }
        if (!m.bestAgrees()) {
            return measured + " (the model's best, " + (Double.isInfinite(m.bestQps()) ? "more QPs always"
                : String.format(Locale.ROOT, "%.2f QPs", m.bestQps())) + ", disagrees with the measurements: "
                + "use the measured count)";
        }
        return measured;
    }

    /** Options shared by crossover and topology: where the per-path measurements come from. */
    abstract static class PathInputs {
        @Spec
        CommandSpec spec;

        @Option(names = "--input", paramLabel = "FILE", description = "gpu-path --json lines or gpu-path's text "
            + "output (gdr, bounce, pinned rows), e.g. docs/results/h200-gpu-paths/gpu-path.txt, instead of "
            + "measuring.")
        Path input;

        /** Live: the GPU gpu-path measures. */
        @picocli.CommandLine.Mixin
        Mixins.Gpu gpuOption;

        @Option(names = "--sizes", split = ",", defaultValue = "64K,256K,1M,4M", converter = Sizes.IntConverter.class,
            description = "Live: sizes, bytes with K, M or G (default ${DEFAULT-VALUE}).")
        int[] sizes;

        @Option(names = "--runs", defaultValue = "1", description = "Live: runs per size (median taken).")
        int runs;

        @Option(names = "--hold-back", description = "Size held back in both paths (default: the largest).")
        Double holdBack;

        @picocli.CommandLine.Mixin
        Mixins.Json jsonOption;

        @picocli.CommandLine.Mixin
        Mixins.SetValues set;

        boolean json;

        CrossoverModel crossover() {
            json = jsonOption.json;
            if (input != null) {
                return fromInput(spec, input, () -> CrossoverModel.fit(input.toString(), ModelInputs.paths(input),
                    holdBack));
            }
            if (runs < 1 || runs > 100 || Arrays.stream(sizes).anyMatch(s -> s < 1 || s > (256 << 20))) {
                throw new ParameterException(spec.commandLine(), "--runs 1..100, --sizes each 1..268435456");
            }
            if (gpuOption.spec.kind() == GpuSpec.Kind.CUDA_RANK) {
                throw new ParameterException(spec.commandLine(), "--gpu takes sim:<preset> or cuda:N here");
            }
            gpuOption.spec.requirePresent("--gpu");
            final GpuDevice gpu = GpuDevices.open(gpuOption.spec.toString());
            try (gpu) {
                final Map<String, List<Measurement>> p = ModelLab.paths(gpu, sizes, runs);
                return CrossoverModel.fit("measured live: gpu-path on " + gpu.describe(), p, holdBack);
            }
        }
    }

    /** GDR against host staging by size. */
    @Command(name = "crossover", mixinStandardHelpOptions = true,
        description = "GDR against host staging by message size: fits t(s) = alpha + s/beta per path to gpu-path's "
            + "gdr and bounce rows (live on a GPU, default sim:h200, or from a file), prints the crossover size and "
            + "the hybrid threshold, and predicts a held-back size.")
    static final class Crossover extends PathInputs implements java.util.concurrent.Callable<Integer> {
        @Override
        public Integer call() {
            final CrossoverModel m = crossover();
            final PrintWriter out = spec.commandLine().getOut();
            if (json) {
                out.println(crossoverJson(m));
                return 0;
            }
            out.println("# model crossover: t(s) = alpha + s/beta per path; NIC: software (simulated); source: "
                + m.source());
            for (final CrossoverModel.Path p : List.of(m.gdr(), m.bounce())) {
                out.println("## " + p.name());
                printInputs(out, "bytes", p.inputs());
                printFit(out, p.fit());
                out.printf(Locale.ROOT, "alpha %.2f us per message, beta %.3f GiB/s%n", p.alphaSeconds() * 1e6,
                    p.betaBytesPerSecond() / (1 << 30));
                printHeld(out, "bytes", p.heldBack());
            }
            if (!m.pinned().isEmpty()) {
                out.println("## pinned host-to-device copy (the link's limit, not modelled)");
                printInputs(out, "bytes", m.pinned());
            }
            if (!m.fits()) {
                out.println("does not fit: " + m.misfit() + ", so the model recommends no crossover and no hybrid "
                    + "threshold");
                return 0;
            }
            final double s = m.crossoverBytes();
            out.println("crossover: " + (Double.isNaN(s) ? "none at a positive size" : String.format(Locale.ROOT,
                "%.0f B", s)));
            out.println("hybrid threshold: " + m.hybridRule());
            return 0;
        }
    }

    /** Same switch against across sockets. */
    @Command(name = "topology", mixinStandardHelpOptions = true,
        description = "The cost of topology on the simulated host: the GPU and NIC under one PCIe switch against the "
            + "NIC under the other socket (path type, narrowest link from the simulated host's link parameters, "
            + "NCCL's GDR distance decision), priced with the crossover model's fit.")
    static final class Topology extends PathInputs implements java.util.concurrent.Callable<Integer> {
        @Option(names = "--price", split = ",", defaultValue = "64K,1M,16M", converter = Sizes.Converter.class,
            description = "Sizes to price, bytes with K, M or G (default ${DEFAULT-VALUE}).")
        long[] price;

        @Option(names = "--sm", defaultValue = "90", description = "The GPU's sm attribute (default 90, H200).")
        int sm;

        @Override
        public Integer call() {
            if (Arrays.stream(price).anyMatch(s -> s < 1)) {
                throw new ParameterException(spec.commandLine(), "--price sizes must be at least 1 byte");
            }
            final CrossoverModel c = crossover();
            final TopologyCostModel m = TopologyCostModel.of(c, sm, Arrays.stream(price).boxed().toList());
            final PrintWriter out = spec.commandLine().getOut();
            if (json) {
                final ObjectNode o = JSON.createObjectNode();
                o.put("model", "topology");
                o.put("simulated", true);
                final ArrayNode a = o.putArray("placements");
                for (final TopologyCostModel.Placement p : m.placements()) {
                    final ObjectNode po = a.addObject();
                    po.put("placement", p.name());
                    po.put("path_type", p.path().type().name());
                    po.put("hops", p.path().hops().size());
                    po.put("narrowest_link_gb_s", p.path().bandwidth());
                    po.put("gdr", p.gdr().logLine());
                    po.put("data_path", p.dataPath());
                    po.put("link_binds", p.linkBinds());
                    final ArrayNode pr = po.putArray("predicted");
                    for (int i = 0; c.fits() && i < m.sizes().size(); i++) {
                        pr.addObject().put("bytes", m.sizes().get(i)).put("mib_s", r3(p.mibS().get(i)));
                    }
                }
                o.put("held_back_error_topology", "unknown: no cross-socket measurement exists");
                o.set("crossover", crossoverJson(c));
                out.println(o);
                return 0;
            }
            out.println("# model topology: the simulated host's link parameters (NCCL's PCI_BW "
                + io.gdrkit.gdr.topo.TopologyBuilder.PCI_BW + " GB/s, SYS_BW " + io.gdrkit.gdr.topo.TopologyBuilder.SYS_BW
                + " GB/s; not measured), priced with the crossover fit from " + c.source());
            for (final TopologyCostModel.Placement p : m.placements()) {
                out.printf(Locale.ROOT, "%-15s %s, %d hops, narrowest link %.1f GB/s; %s -> %s; the link %s%n",
                    p.name(), p.path().type(), p.path().hops().size(), p.path().bandwidth(), p.gdr().logLine(),
                    p.dataPath(), p.linkBinds() ? "binds (slower than the fitted path)" : "does not bind (the fitted "
                        + p.dataPath() + " path is slower than it)");
            }
            if (!c.fits()) {
                out.println("does not fit: the crossover fit's " + c.misfit() + ", so the model prices no "
                    + "placement; the topology part: unknown (no cross-socket measurement exists)");
                return 0;
            }
            out.println("#bytes       same switch MiB/s   across sockets MiB/s   cost (same / across)");
            for (int i = 0; i < m.sizes().size(); i++) {
                final double a = m.placements().get(0).mibS().get(i);
                final double b = m.placements().get(1).mibS().get(i);
                out.printf(Locale.ROOT, "%-12d %-19.1f %-22.1f %.2fx%n", m.sizes().get(i), a, b, a / b);
            }
            out.printf(Locale.ROOT, "held back: gdr %+.1f %%, bounce %+.1f %% (the crossover fit); the topology "
                + "part: unknown (no cross-socket measurement exists)%n", pct(c.gdr().heldBack().relativeError()),
                pct(c.bounce().heldBack().relativeError()));
            return 0;
        }
    }

    static ObjectNode crossoverJson(final CrossoverModel m) {
        final ObjectNode o = JSON.createObjectNode();
        o.put("model", "crossover");
        o.put("simulated", true);
        o.put("source", m.source());
        o.put("formula", "t(s) = alpha + s/beta per message, per path");
        for (final CrossoverModel.Path p : List.of(m.gdr(), m.bounce())) {
            final ObjectNode po = o.putObject(p.name());
            po.set("inputs", inputs(p.inputs()));
            po.set("fit", fit(p.fit()));
            po.put("alpha_us", r3(p.alphaSeconds() * 1e6));
            po.put("beta_gib_s", finite(p.betaBytesPerSecond() / (1 << 30)));
            po.set("held_back", held(p.heldBack()));
        }
        if (!m.pinned().isEmpty()) {
            o.set("pinned_inputs", inputs(m.pinned()));
        }
        o.put("fits", m.fits());
        final double s = m.crossoverBytes();
        if (Double.isNaN(s) || !m.fits()) {
            o.putNull("crossover_bytes");
        } else {
            o.put("crossover_bytes", Math.round(s));
        }
        if (m.fits()) {
            o.put("hybrid", m.hybridRule());
        } else {
            o.putNull("hybrid");
            o.put("verdict", "does not fit: " + m.misfit());
        }
        return o;
    }

    private static ArrayNode inputs(final List<Measurement> in) {
        final ArrayNode a = JSON.createArrayNode();
        for (final Measurement m : in) {
            a.addObject().put("x", m.x()).put("mib_s", r3(m.mibS())).put("runs", m.runs()).put("source", m.source());
        }
        return a;
    }

    private static ObjectNode fit(final CostFit f) {
        final ObjectNode o = JSON.createObjectNode();
        final ArrayNode t = o.putArray("terms");
        for (int i = 0; i < f.names().size(); i++) {
            t.addObject().put("term", f.names().get(i)).put("value", f.coefficients()[i])
                .put("dropped", f.dropped()[i]);
        }
        o.put("rms_relative_residual", r3(f.rmsRelative() * 100) / 100);
        return o;
    }

    private static ObjectNode held(final HeldBack h) {
        final ObjectNode o = JSON.createObjectNode();
        o.put("x", h.x());
        o.put("measured_mib_s", r3(h.measured()));
        o.put("predicted_mib_s", r3(h.predicted()));
        o.put("relative_error", Math.round(h.relativeError() * 10000) / 10000.0);
        return o;
    }

    private static void printInputs(final PrintWriter out, final String x, final List<Measurement> in) {
        out.printf(Locale.ROOT, "#%-11s %-12s runs  source%n", x, "MiB/s");
        for (final Measurement m : in) {
            out.printf(Locale.ROOT, "%-12s %-12.1f %-5d %s%n", num(m.x()), m.mibS(), m.runs(), m.source());
        }
    }

    private static void printFit(final PrintWriter out, final CostFit f) {
        for (int i = 0; i < f.names().size(); i++) {
            out.printf(Locale.ROOT, "  %-45s %s%n", f.names().get(i), f.dropped()[i] ? "dropped (the data do not show "
                + "this cost: a negative fit, or too few points)" : String.format(Locale.ROOT, "%.6g", f.coefficients()[i]));
        }
        out.printf(Locale.ROOT, "fit residual (rms, relative): %.2f %%%n", 100 * f.rmsRelative());
    }

    private static void printHeld(final PrintWriter out, final String x, final HeldBack h) {
        out.printf(Locale.ROOT, "held back: %s %s measured %.1f MiB/s, predicted %.1f MiB/s, error %+.1f %%%n", x,
            num(h.x()), h.measured(), h.predicted(), pct(h.relativeError()));
    }

    /** Per cent, with rounding noise below 0.05 % shown as 0.0 (no "-0.0"). */
    private static double pct(final double rel) {
        return Math.abs(rel) < 5e-4 ? 0.0 : 100 * rel;
    }

    private static String num(final double v) {
        if (Double.isInfinite(v)) {
            return "unbounded";
        }
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : String.format(Locale.ROOT, "%.2f", v);
    }

    private static double r3(final double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    /** JSON has no infinity: null stands for unbounded. */
    private static Double finite(final double v) {
        return Double.isFinite(v) ? r3(v) : null;
    }
}
