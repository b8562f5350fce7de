/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.labs.reg.RegTimingLab;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code regtiming}: registration costs by page count, from {@link RegTimingLab}. */
@Command(name = "regtiming", mixinStandardHelpOptions = true,
    description = {"Registration timing by page count (1, 4, 16 ... up to --max-pages): cold register, cache hit, "
        + "contained hit and deregister through the NET MR cache and the communicator cache (in front of the "
        + "software NIC, simulated), the software NIC's own ibv_reg_mr, and with --gpu cuda:N the CUDA driver's "
        + "cuMemHostRegister, cuMemAlloc and DMA-BUF export. min / median / p99 / max per row."})
final class RegTimingCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--max-pages", defaultValue = "262144", description = "Largest page count, 1 .. 2^18 "
        + "(default 2^18 = 1 GiB of 4 KiB pages).")
    long maxPages;

    @Option(names = "--reps", defaultValue = "20", description = "Samples per operation and size, 3 .. 100000 "
        + "(default 20; at most 5 above 2^14 pages).")
    int reps;

    /** cuda:N for the CUDA rows; sim:* is accepted and adds no rows, since a simulated GPU has no driver costs. */
    @picocli.CommandLine.Mixin
    Mixins.Gpu gpuOption;

    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    @Override
    public Integer call() throws IOException {
        final boolean json = jsonOption.json;
        if (gpuOption.spec != null && gpuOption.spec.kind() == GpuSpec.Kind.CUDA_RANK) {
            throw new ParameterException(spec.commandLine(), "--gpu takes sim:<preset> or cuda:N here, not cuda:rank");
        }
        final String gpu = gpuOption.spec == null ? null : gpuOption.spec.toString();
        final RegTimingLab.Config config;
        try {
            config = new RegTimingLab.Config(maxPages, reps, 4096, gpu);
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        if (gpuOption.spec != null) {
            gpuOption.spec.requirePresent("--gpu");
        }
        final RegTimingLab.Result result = RegTimingLab.run(config);
        final PrintWriter out = spec.commandLine().getOut();
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            root.put("max_pages", config.maxPages());
            root.put("reps", config.reps());
            root.put("page_size", config.pageSize());
            root.put("gpu", config.gpu());
            root.put("simulated", result.rows().stream().anyMatch(RegTimingLab.Row::simulated));
            final List<Map<String, Object>> rows = new ArrayList<>();
            for (final RegTimingLab.Row r : result.rows()) {
                final Map<String, Object> m = new LinkedHashMap<>();
                m.put("layer", r.layer());
                m.put("operation", r.operation());
                m.put("pages", r.pages());
                m.put("bytes", r.bytes());
                m.put("samples", r.samples());
                m.put("min_ns", r.minNs());
                m.put("median_ns", r.medianNs());
                // null with fewer samples than a 99th percentile needs: it would only repeat the max
                m.put("p99_ns", r.p99Ns() >= 0 ? r.p99Ns() : null);
                m.put("max_ns", r.maxNs());
                m.put("simulated", r.simulated());
                rows.add(m);
            }
            root.put("rows", rows);
            root.put("pinning", result.pinning());
            root.put("notes", result.notes());
            out.println(new ObjectMapper().writeValueAsString(root));
            out.flush();
            return 0;
        }
        out.println(Loopback.SIMULATED_HEADER + " (the NIC rows); CUDA rows are a real GPU when present");
        for (final String p : result.pinning()) {
            out.println("# pinning: " + p);
        }
        for (final String n : result.notes()) {
            out.println("# " + n);
        }
        out.println(String.format(Locale.ROOT, "%-13s %-48s %7s %12s %4s %11s %11s %11s %11s", "layer", "operation",
            "pages", "bytes", "n", "min us", "median us", "p99 us", "max us"));
        for (final RegTimingLab.Row r : result.rows()) {
            out.println(String.format(Locale.ROOT, "%-13s %-48s %7d %12d %4d %11.2f %11.2f %11s %11.2f",
                r.layer(), r.operation(), r.pages(), r.bytes(), r.samples(), r.minNs() / 1e3, r.medianNs() / 1e3,
                r.p99Ns() >= 0 ? String.format(Locale.ROOT, "%.2f", r.p99Ns() / 1e3) : "-", r.maxNs() / 1e3));
        }
        if (result.rows().stream().anyMatch(r -> r.p99Ns() < 0)) {
            out.println("# p99 '-': fewer than " + RegTimingLab.P99_SAMPLES + " samples, where it would only repeat "
                + "the max");
        }
        out.flush();
        return 0;
    }
}
