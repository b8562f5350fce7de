/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.labs.gpupath.GpuPathLab;
import io.gdrkit.labs.perf.BwResult;
import io.gdrkit.labs.perf.BwRun;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.labs.perf.PerfConfig;
import io.gdrkit.labs.perf.PerfKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The models' live measurements, on this machine: write_bw over 1..N QPs with the perf engine (in-JVM fabric,
 * software NICs), and gpu-path's GDR / bounce / pinned rows on a GPU (simulated or real) at several sizes. Returns
 * measurements; nothing is printed.
 */
public final class ModelLab {
    /** Bytes a live gpu-path size moves per path (iterations = this / size, 4 .. 2000). */
    public static final long PATH_BYTES = 256L << 20;

    private ModelLab() {
    }

    /**
     * write_bw at {@code size} with each QP count, {@code runs} times each (fresh NICs each), a warm-up of
     * {@code iters} before each; the median per QP count.
     */
    public static List<Measurement> qpScaling(final int size, final int[] qps, final long iters, final int runs) {
        if (runs < 1 || iters < 1 || qps.length == 0) {
            throw new IllegalArgumentException("runs, iterations and QP counts must be at least 1");
        }
        final Map<Double, List<Double>> by = new TreeMap<>();
        for (int r = 0; r < runs; r++) {
            for (final int q : qps) {
                final PerfConfig cfg = new PerfConfig(PerfKind.WRITE_BW).size(size).iters(iters).warmup(iters)
                    .numQps(q).bufferBytes(Math.max(PerfConfig.DEFAULT_BUFFER, size)).conclude();
                try (Loopback lb = new Loopback(cfg, null, null)) {
                    final BwResult res = new BwRun(lb, cfg).run();
                    by.computeIfAbsent((double) q, k -> new ArrayList<>()).add(res.bwAvgMibS());
                }
            }
        }
        return ModelInputs.medians(by, "measured live: write_bw, in-JVM fabric (software NICs, simulated), " + size
            + " B, " + iters + " messages, median of " + runs);
    }

    /** gpu-path (GDR, bounce, pinned) on {@code gpu} at each size; iterations from {@link #PATH_BYTES}. */
    public static Map<String, List<Measurement>> paths(final GpuDevice gpu, final int[] sizes, final int runs) {
        final Map<String, Map<Double, List<Double>>> by = new TreeMap<>();
        for (int r = 0; r < runs; r++) {
            for (final int s : sizes) {
                final int iters = (int) Math.max(4, Math.min(2000, PATH_BYTES / s));
                final GpuPathLab.Result res = GpuPathLab.run(gpu, null, s, iters, true, true);
                for (final GpuPathLab.PathRun p : res.runs()) {
                    if (!p.byteExact()) {
                        throw new IllegalStateException("gpu-path " + p.path() + " at " + s + " B delivered wrong bytes "
                            + "(first at " + p.mismatch() + "): not a measurement of the path");
                    }
                    by.computeIfAbsent(p.path(), k -> new TreeMap<>())
                        .computeIfAbsent((double) s, k -> new ArrayList<>()).add(p.mibPerSecond());
                }
            }
        }
        final Map<String, List<Measurement>> out = new TreeMap<>();
        by.forEach((p, m) -> out.put(p, ModelInputs.medians(m, "measured live: gpu-path on " + gpu.describe()
            + ", median of " + runs)));
        return out;
    }
}
