/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import java.util.function.LongConsumer;

/**
 * The unreported warm-up before a measured run: {@link PerfConfig#warmup()} iterations, repeated in rounds until
 * {@link PerfConfig#warmupMs()} have passed. With perftest's iteration counts alone the JIT is still compiling
 * the loop and the NIC while gdrkit measures (64 B write_bw at 2.1 M msg/s instead of 5); a time-based warm-up
 * reaches compiled code whatever the size.
 */
public final class Warmup {
    /** Iterations of one round when only a time is given. */
    public static final long MIN_ROUND = 1000;

    private Warmup() {
    }

    /** Runs {@code round} (given an iteration count) as often as the configuration's warm-up asks; returns rounds. */
    public static int run(final PerfConfig cfg, final LongConsumer round) {
        final long ms = cfg.warmupMs();
        if (cfg.warmup() <= 0 && ms <= 0) {
            return 0;
        }
        final long n = ms > 0 ? Math.max(MIN_ROUND, cfg.warmup()) : cfg.warmup();
        final long until = System.nanoTime() + ms * 1_000_000L;
        int rounds = 0;
        do {
            round.accept(n);
            rounds++;
        } while (System.nanoTime() - until < 0);
        return rounds;
    }
}
