/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Control;

/**
 * The latency floor for anything that crosses cores: two threads bounce a counter in one cache line of a native
 * segment (release store, acquire load). The average time of one {@code ping} op is the round trip.
 * Each op spins until the other side answered, giving up when JMH stops the iteration.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Group)
public class CacheLinePingPongBench {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private Arena arena;
    private MemorySegment line;

    @Setup
    public void setup() {
        arena = Arena.ofShared();
        line = arena.allocate(128, 128);
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    /** Odd values are pings, even values pongs; one op = one round trip. */
    @Benchmark
    @Group("rtt")
    @GroupThreads(1)
    public void ping(final Control control) {
        final long v = (long) LONG.getAcquire(line, 0L);
        final long mine = (v & 1) == 0 ? v + 1 : v;
        LONG.setRelease(line, 0L, mine);
        while ((long) LONG.getAcquire(line, 0L) == mine && !control.stopMeasurement) {
            Thread.onSpinWait();
        }
    }

    @Benchmark
    @Group("rtt")
    @GroupThreads(1)
    public void pong(final Control control) {
        long v;
        while (((v = (long) LONG.getAcquire(line, 0L)) & 1) == 0 && !control.stopMeasurement) {
            Thread.onSpinWait();
        }
        if ((v & 1) == 1) {
            LONG.setRelease(line, 0L, v + 1);
        }
    }
}
