/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The memcpy ceiling for the software NIC's data path: {@link MemorySegment#copy} between two native segments.
 * The {@code bytes} aux counter reports throughput in bytes/s (ops/s times the size).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class MemorySegmentCopyBench {
    @Param({"64", "4096", "65536", "1048576", "4194304"})
    public int size;

    private Arena arena;
    private MemorySegment src;
    private MemorySegment dst;

    /** Bytes copied, reported by JMH as a rate (bytes/s). */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Bytes {
        public long bytes;

        @Setup(Level.Iteration)
        public void reset() {
            bytes = 0;
        }
    }

    @Setup
    public void setup() {
        arena = Arena.ofShared();
        src = arena.allocate(size, 4096);
        dst = arena.allocate(size, 4096);
        src.fill((byte) 7);
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public void copy(final Bytes counter) {
        MemorySegment.copy(src, 0, dst, 0, size);
        counter.bytes += size;
    }
}
