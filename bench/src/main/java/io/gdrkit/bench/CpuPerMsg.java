/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

/*
 * Thread CPU time per message of the one invoker thread (a hot-path before/after that holds on a loaded machine:
 * descheduled time does not count), and of a 1 MiB MemorySegment.copy in the same JVM. Run from the bench jar:
 *   java --enable-native-access=ALL-UNNAMED -cp bench/target/gdrkit-bench.jar io.gdrkit.bench.CpuPerMsg LABEL
 */
import io.gdrkit.labs.perf.*;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.Arrays;

/** Thread CPU ns per message of the one invoker thread (descheduled time does not count): median of 5 after 3 warm-ups. */
public class CpuPerMsg {
    static double one(PerfKind k, int size, long n) {
        PerfConfig cfg = new PerfConfig(k).size(size).iters(n).warmup(0).conclude();
        try (Loopback lb = new Loopback(cfg, null, null)) {
            var mx = ManagementFactory.getThreadMXBean();
            long t0 = mx.getCurrentThreadCpuTime();
            if (k.bandwidth) new BwRun(lb, cfg).run(); else new LatRun(lb, cfg).run();
            return (mx.getCurrentThreadCpuTime() - t0) / (double) n;
        }
    }
    public static void main(String[] a) {
        Object[][] cases = {{PerfKind.WRITE_BW, 64, 200_000L}, {PerfKind.WRITE_BW, 1 << 20, 2_000L}, {PerfKind.WRITE_LAT, 8, 50_000L}};
        for (Object[] c : cases) {
            double[] v = new double[5];
            for (int i = 0; i < 3; i++) one((PerfKind) c[0], (Integer) c[1], (Long) c[2]);
            for (int i = 0; i < 5; i++) v[i] = one((PerfKind) c[0], (Integer) c[1], (Long) c[2]);
            Arrays.sort(v);
            System.out.printf("{\"label\":\"%s\",\"test\":\"%s\",\"bytes\":%d,\"cpu_ns_per_msg_median\":%.1f,\"min\":%.1f,\"max\":%.1f}%n",
                a[0], ((PerfKind) c[0]).id(), c[1], v[2], v[0], v[4]);
        }
        // the same JVM's MemorySegment.copy of 1 MiB (native to native), thread CPU per copy: the limit the 1 MiB
        // WRITE is compared with (ratio = memcpy ns / write ns, as a bandwidth ratio)
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(1 << 20, 4096), dst = arena.allocate(1 << 20, 4096);
            src.fill((byte) 7);
            var mx = ManagementFactory.getThreadMXBean();
            double[] v = new double[5];
            for (int r = -3; r < 5; r++) {
                long t0 = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < 2000; i++) MemorySegment.copy(src, 0, dst, 0, 1 << 20);
                if (r >= 0) v[r] = (mx.getCurrentThreadCpuTime() - t0) / 2000.0;
            }
            Arrays.sort(v);
            System.out.printf("{\"label\":\"%s\",\"test\":\"memcpy\",\"bytes\":%d,\"cpu_ns_per_msg_median\":%.1f,\"min\":%.1f,\"max\":%.1f}%n",
                a[0], 1 << 20, v[2], v[0], v[4]);
        }
    }
}
