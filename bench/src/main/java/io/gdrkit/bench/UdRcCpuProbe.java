/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * UdVsRcSendBench's loop timed by the thread's CPU time instead of the wall clock: messages per CPU-second of the one
 * thread that drives both software NICs (simulated hardware). On a loaded host (more runnable threads than cores)
 * JMH's wall-clock scores swing by 10x or more between iterations, while CPU time still counts only this thread's
 * own work; on a quiet host the two agree. RC and UD alternate first in each round; each round builds fresh NICs,
 * warms up for half the iterations, then measures.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp bench/target/gdrkit-bench.jar io.gdrkit.bench.UdRcCpuProbe \
 *     [rounds=3] [invocations=20000] [sizes=1024,4096]
 * </pre>
 * Each invocation is {@value UdVsRcSendBench#BATCH} messages. Prints every round and min/median/max of the UD/RC
 * ratio per size.
 */
public class UdRcCpuProbe {
    public static void main(final String[] args) {
        final int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        final int invocations = args.length > 1 ? Integer.parseInt(args[1]) : 20000;
        final String[] sizes = (args.length > 2 ? args[2] : "1024,4096").split(",");
        final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        final List<List<Double>> ratios = new ArrayList<>();
        for (final String ignored : sizes) {
            ratios.add(new ArrayList<>());
        }
        System.out.println("UD/RC SEND, messages per CPU-second of the driving thread (software NIC, simulated)");
        for (int r = 1; r <= rounds; r++) {
            for (int k = 0; k < sizes.length; k++) {
                final double[] rate = new double[2]; // RC, UD
                for (int t = 0; t < 2; t++) {
                    final int type = (t + r) % 2; // alternate which goes first
                    final UdVsRcSendBench b = new UdVsRcSendBench();
                    b.type = type == 0 ? "RC" : "UD";
                    b.size = Integer.parseInt(sizes[k]);
                    b.setup();
                    try {
                        for (int i = 0; i < invocations / 2; i++) {
                            b.send();
                        }
                        final long c0 = mx.getCurrentThreadCpuTime();
                        for (int i = 0; i < invocations; i++) {
                            b.send();
                        }
                        final long c1 = mx.getCurrentThreadCpuTime();
                        rate[type] = (double) invocations * UdVsRcSendBench.BATCH / ((c1 - c0) / 1e9);
                    } finally {
                        b.tearDown();
                    }
                }
                ratios.get(k).add(rate[1] / rate[0]);
                System.out.printf("round %d size %5s  RC %9.0f  UD %9.0f msg/cpu-s  UD/RC %.2f%n", r, sizes[k],
                    rate[0], rate[1], rate[1] / rate[0]);
            }
        }
        for (int k = 0; k < sizes.length; k++) {
            final double[] v = ratios.get(k).stream().mapToDouble(Double::doubleValue).sorted().toArray();
            final double median = v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
            System.out.printf("size %5s  UD/RC min %.2f median %.2f max %.2f  (%s)%n", sizes[k], v[0], median,
                v[v.length - 1], Arrays.toString(Arrays.stream(v).map(x -> Math.round(x * 100) / 100.0).toArray()));
        }
    }
}
