/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.labs.gpupath.GpuPathLab;
import io.gdrkit.labs.perf.Loopback;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code gpu-path}: parses, runs {@link GpuPathLab} (GDR versus host bounce, byte-checked and timed) and prints its
 * records as a table.
 */
@Command(name = "gpu-path", mixinStandardHelpOptions = true,
    description = "GPUDirect (NIC writes GPU memory) versus host bounce (pinned staging + GPU copy), byte-checked "
        + "and timed, on a simulated GPU (sim:h200, sim:v100, ...) or a real one (cuda:N).")
final class GpuPathCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @picocli.CommandLine.Mixin
    Mixins.Gpu gpuOption;

    @Option(names = "--path", defaultValue = "both", description = "gdr, bounce or both.")
    String path;

    @Option(names = "--source-gpu", paramLabel = "SPEC", converter = GpuSpec.Converter.class, description = "Also "
        + "send from this GPU's memory (the NIC reads it): sim:<preset> or cuda:N, e.g. cuda:1 with --gpu cuda:0 for "
        + "a GPU-to-GPU source; compared with the host source.")
    GpuSpec sourceGpu;

    @Option(names = {"-s", "--size"}, defaultValue = "4M", converter = Sizes.IntConverter.class,
        description = "Bytes per WRITE, with K, M or G (default ${DEFAULT-VALUE}).")
    int size;

    @Option(names = {"-n", "--iters"}, defaultValue = "200", description = "WRITEs per path.")
    int iters;

    /** One JSON object per path; `gdrkit model crossover --input` reads these lines. */
    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    @Override
    public Integer call() {
        final PrintWriter out = spec.commandLine().getOut();
        final boolean json = jsonOption.json;
        if (size < 1 || size > (256 << 20)) {
            throw new ParameterException(spec.commandLine(), "-s must be 1 .. 268435456");
        }
        if (iters < 1) {
            throw new ParameterException(spec.commandLine(), "-n must be >= 1");
        }
        Counts.atMost(spec.commandLine(), "-n/--iters", iters, Counts.MAX_ITERS);
        if (!path.equals("gdr") && !path.equals("bounce") && !path.equals("both")) {
            throw new ParameterException(spec.commandLine(), "--path must be gdr, bounce or both, not '" + path + "'");
        }
        for (final GpuSpec g : new GpuSpec[] {gpuOption.spec, sourceGpu}) {
            if (g != null && g.kind() == GpuSpec.Kind.CUDA_RANK) {
                throw new ParameterException(spec.commandLine(), "cuda:rank is for coll's ranks; gpu-path takes "
                    + "cuda:N");
            }
        }
        gpuOption.spec.requirePresent("--gpu");
        if (sourceGpu != null) {
            sourceGpu.requirePresent("--source-gpu");
        }
        final GpuPathLab.Result r;
        try (GpuDevice gpu = open(gpuOption.spec.toString());
             GpuDevice src = sourceGpu == null ? null : open(sourceGpu.toString())) {
            r = GpuPathLab.run(gpu, src, size, iters, !path.equals("bounce"), !path.equals("gdr"));
        }
        if (json) {
            printJson(out, r);
        } else {
            print(out, r);
        }
        if (!r.allByteExact()) {
            spec.commandLine().getErr().println("gpu-path: a path delivered wrong bytes (see the check column)");
            return Main.EXIT_FAILURE;
        }
        return 0;
    }

    /** The table gpu-path has always printed. */
    static void print(final PrintWriter out, final GpuPathLab.Result r) {
        out.println(Loopback.SIMULATED_HEADER + "; GPU: " + r.gpu());
        if (!r.simulated()) {
            out.println("# no verbs device reaches this GPU: the software NIC's engine moves the bytes with the "
                + "GPU's copy engine (cuMemcpy through FFM)");
        }
        out.println("#path   bytes      iters  MiB/s      check");
        for (final GpuPathLab.PathRun run : r.runs()) {
            if (run.path().equals("gpu->gpu")) {
                out.println("# source: " + r.source());
            }
            out.println(row(run));
            if (run.nicWrites() != null) {
                out.println("# " + run.path() + ": the NIC wrote " + run.nicWrites().directBytes() + " B direct (the copy "
                    + "engine reading the pinned source) and " + run.nicWrites().stagedBytes() + " B staged (a CPU copy "
                    + "into pinned staging first)" + (run.nicWrites().pinsRefused() > 0 ? "; pins refused: "
                    + run.nicWrites().pinNote() : ""));
            }
        }
    }

    /** One JSON line per path. */
    static void printJson(final PrintWriter out, final GpuPathLab.Result r) {
        final com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        for (final GpuPathLab.PathRun run : r.runs()) {
            final com.fasterxml.jackson.databind.node.ObjectNode o = json.createObjectNode();
            o.put("path", run.path());
            o.put("bytes", run.bytes());
            o.put("iters", run.iters());
            o.put("mib_s", Math.round(run.mibPerSecond() * 1000) / 1000.0);
            o.put("check", run.path().equals("pinned") ? "limit" : run.byteExact() ? "byte-exact" : "mismatch");
            o.put("gpu", r.gpu());
            o.put("gpu_simulated", r.simulated());
            o.put("simulated", true); // the NIC is software in every row
            if (run.nicWrites() != null) {
                o.put("direct_bytes", run.nicWrites().directBytes());
                o.put("staged_bytes", run.nicWrites().stagedBytes());
            }
            out.println(o);
        }
    }

    static String row(final GpuPathLab.PathRun run) {
        return String.format(Locale.ROOT, "%-7s %-10d %-6d %-10.1f %s", run.path(), run.bytes(), run.iters(),
            run.mibPerSecond(), check(run));
    }

    static String check(final GpuPathLab.PathRun run) {
        return run.byteExact() ? "byte-exact" : "MISMATCH at byte " + run.mismatch();
    }

    private GpuDevice open(final String s) {
        try {
            return GpuDevices.open(s);
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(this.spec.commandLine(), e.getMessage());
        }
    }
}
