/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

/*
 * write_bw into host memory against write_bw into the simulated H200 (both buffers on the GPU, as perf --mem gpu),
 * measured as CPU time: every thread of the JVM that existed when the run started (the invoker that drives both
 * NICs, the simulated GPU's drainer and stream threads), so descheduled time on a loaded machine does not count.
 * Interleaved host, gpu, host, gpu ... in one JVM; one JSON line per trial. Run from the bench jar:
 *   java --enable-native-access=ALL-UNNAMED -cp bench/target/gdrkit-bench.jar io.gdrkit.bench.SimGpuCpu LABEL [TRIALS [BYTES...]]
 * (sizes 65536 1048576 4194304 unless given)
 */
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.labs.perf.*;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class SimGpuCpu {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    static long allCpu(long[] ids) {
        long sum = 0;
        for (long id : ids) {
            long t = MX.getThreadCpuTime(id);
            if (t > 0) sum += t;
        }
        return sum;
    }

    /** {cpu ns of all threads, wall ns} for n messages of size bytes. */
    static long[] one(boolean gpuMem, int size, long n) {
        PerfConfig cfg = new PerfConfig(PerfKind.WRITE_BW).size(size).iters(n).warmup(0).conclude();
        try (GpuDevice gpu = gpuMem ? GpuDevices.open("sim:h200") : null;
             Loopback lb = new Loopback(cfg, null, gpu)) {
            new BwRun(lb, new PerfConfig(PerfKind.WRITE_BW).size(size).iters(Math.max(n / 4, 10)).warmup(0).conclude())
                .run(); // warm this loopback: JIT, first touch of the buffers
            long[] ids = MX.getAllThreadIds();
            long c0 = allCpu(ids), w0 = System.nanoTime();
            new BwRun(lb, cfg).run();
            return new long[] {allCpu(ids) - c0, System.nanoTime() - w0};
        }
    }

    public static void main(String[] a) {
        String label = a[0];
        int trials = a.length > 1 ? Integer.parseInt(a[1]) : 3;
        int[] sizes = a.length > 2 ? java.util.Arrays.stream(a, 2, a.length).mapToInt(Integer::parseInt).toArray()
            : new int[] {65536, 1 << 20, 4 << 20};
        long[] iters = java.util.Arrays.stream(sizes).mapToLong(s -> Math.max(20, (256L << 20) / s)).toArray();
        for (int s = 0; s < sizes.length; s++) {
            one(false, sizes[s], iters[s]); // JVM warm-up for this size
            one(true, sizes[s], iters[s]);
            for (int t = 1; t <= trials; t++) {
                long[] h = one(false, sizes[s], iters[s]);
                long[] g = one(true, sizes[s], iters[s]);
                double bytes = (double) sizes[s] * iters[s];
                double hc = bytes / h[0] * 1e9 / (1 << 30), gc = bytes / g[0] * 1e9 / (1 << 30);
                double hw = bytes / h[1] * 1e9 / (1 << 30), gw = bytes / g[1] * 1e9 / (1 << 30);
                System.out.printf("{\"label\":\"%s\",\"trial\":%d,\"bytes\":%d,\"iters\":%d,\"host_cpu_gib_s\":%.3f,"
                        + "\"simgpu_cpu_gib_s\":%.3f,\"ratio_cpu\":%.3f,\"host_wall_gib_s\":%.3f,\"simgpu_wall_gib_s\":%.3f,"
                        + "\"ratio_wall\":%.3f,\"simulated\":true}%n", label, t, sizes[s], iters[s], hc, gc, gc / hc, hw, gw,
                    gw / hw);
            }
        }
    }
}
