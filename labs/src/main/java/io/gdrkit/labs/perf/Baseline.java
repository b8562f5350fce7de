/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The physical limits the software NIC is compared with, measured in this JVM in the same run:
 * {@link MemorySegment#copy} bandwidth between two native segments, and the round trip of a value bounced
 * between two threads through one cache line.
 */
public final class Baseline {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long TIMEOUT_NS = 30_000_000_000L;

    private Baseline() {
    }

    /** MemorySegment.copy native to native of {@code bytes}, for about {@code millis}: MiB/s. */
    public static double memcpyMibPerSec(final long bytes, final long millis) {
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment src = arena.allocate(bytes, 4096);
            final MemorySegment dst = arena.allocate(bytes, 4096);
            src.fill((byte) 1);
            dst.fill((byte) 2);
            // Warm-up: JIT and page faults out of the measurement.
            copyFor(src, dst, millis / 4);
            final long start = System.nanoTime();
            final long copies = copyFor(src, dst, millis);
            final long elapsed = System.nanoTime() - start;
            return copies * (double) bytes / (1 << 20) / (elapsed / 1e9);
        }
    }

    private static long copyFor(final MemorySegment src, final MemorySegment dst, final long millis) {
        final long end = System.nanoTime() + millis * 1_000_000L;
        long n = 0;
        do {
            for (int i = 0; i < 16; i++) {
                MemorySegment.copy(src, 0, dst, 0, src.byteSize());
            }
            n += 16;
        } while (System.nanoTime() < end);
        return n;
    }

    /**
     * Two threads bounce a counter in one cache line of a native segment (release store, acquire load):
     * returns the round trip in ns of each of {@code repeats} batches of {@code rounds}, sorted.
     */
    public static double[] pingPongRttNs(final int rounds, final int repeats) {
        final double[] rtts = new double[repeats];
        try (Arena arena = Arena.ofShared()) {
            final MemorySegment line = arena.allocate(128, 128);
            for (int r = 0; r < repeats; r++) {
                rtts[r] = pingPong(line, rounds);
            }
        }
        Arrays.sort(rtts);
        return rtts;
    }

    /** Spins between clock reads (and yields) while waiting for the other side: a power of two minus one. */
    private static final int SPINS_PER_CHECK = 1023;

    private static double pingPong(final MemorySegment line, final int rounds) {
        LONG.setRelease(line, 0L, 0L);
        final AtomicReference<String> failure = new AtomicReference<>();
        final Thread pong = Thread.ofPlatform().name("gdrkit-pong").daemon(true).start(() -> {
            for (long v = 1; v < 2L * rounds; v += 2) {
                int spins = 0;
                long deadline = 0;
                while ((long) LONG.getAcquire(line, 0L) != v) {
                    if ((++spins & SPINS_PER_CHECK) == 0) {
                        final long now = System.nanoTime();
                        if (deadline == 0) {
                            deadline = now + TIMEOUT_NS;
                        } else if (now > deadline) {
                            failure.set("pong thread timed out waiting for ping " + v);
                            return;
                        }
                        Thread.yield();
                    }
                    Thread.onSpinWait();
                }
                LONG.setRelease(line, 0L, v + 1);
            }
        });
        final long start = System.nanoTime();
        for (long v = 0; v < 2L * rounds; v += 2) {
            LONG.setRelease(line, 0L, v + 1);
            int spins = 0;
            long deadline = 0;
            while ((long) LONG.getAcquire(line, 0L) != v + 2) {
                // the clock is read only after many spins, so an answered round costs no nanoTime; the timeout runs
                // from the last answer (no progress for TIMEOUT_NS), not from the start: on an oversubscribed host
                // each round may wait a scheduler slice, and the yield lets the other side run
                if ((++spins & SPINS_PER_CHECK) == 0) {
                    final long now = System.nanoTime();
                    if (deadline == 0) {
                        deadline = now + TIMEOUT_NS;
                    } else if (now > deadline || failure.get() != null) {
                        throw new Deadline.TimeoutError("cache-line ping-pong timed out waiting for pong " + (v + 2)
                            + (failure.get() != null ? " (" + failure.get() + ")" : ""));
                    }
                    Thread.yield();
                }
                Thread.onSpinWait();
            }
        }
        final long elapsed = System.nanoTime() - start;
        try {
            pong.join(TIMEOUT_NS / 1_000_000);
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return (double) elapsed / rounds;
    }
}
