/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

import io.gdrkit.comm.DataType;
import io.gdrkit.comm.ParallelReducer;
import io.gdrkit.comm.RedOp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
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
 * One host reduction on a communicator's reduce threads ({@link ParallelReducer}, float sum, out = a + b), called
 * back to back ({@code gapMicros} 0: the workers spin between calls) or after a pause ({@code gapMicros} 1000: they
 * have parked). {@code coldAloneBytes} 0 always splits (a parked worker is unparked and waited for); up to the size,
 * a reduction that finds a worker parked runs on the caller alone (and wakes the workers when it came within their
 * spin time of the last one; whether it wakes them changes nothing here: the timed call runs alone either way).
 * {@code threads} 1 is the caller alone, the reference. The pause is in the invocation's setup, outside the
 * measured time. Run:
 * {@code java -jar bench/target/gdrkit-bench.jar ParallelReducerColdBench -f 1 -wi 2 -i 3 -w 1 -r 1}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class ParallelReducerColdBench {
    @Param({"65536", "262144", "1048576"})
    public int bytes;

    @Param({"0", "1000"})
    public int gapMicros;

    @Param({"4"})
    public int threads;

    @Param({"0", "4194304"})
    public int coldAloneBytes;

    private Arena arena;
    private MemorySegment a;
    private MemorySegment b;
    private MemorySegment out;
    private ParallelReducer reducer;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        a = arena.allocate(bytes, 4096);
        b = arena.allocate(bytes, 4096);
        out = arena.allocate(bytes, 4096);
        for (long i = 0; i < bytes / 4; i++) {
            a.setAtIndex(ValueLayout.JAVA_FLOAT, i, 1f + (i % 7) / 8f);
            b.setAtIndex(ValueLayout.JAVA_FLOAT, i, 1f + (i % 5) / 8f);
        }
        reducer = new ParallelReducer(threads, 16384, coldAloneBytes, TimeUnit.SECONDS.toNanos(60), "bench-red");
    }

    @Setup(Level.Invocation)
    public void pause() {
        if (gapMicros > 0) {
            LockSupport.parkNanos(gapMicros * 1000L);
        }
    }

    @Benchmark
    public MemorySegment reduce() {
        reducer.reduce(out, 0, a, 0, b, 0, bytes / 4, DataType.FLOAT32, RedOp.SUM);
        return out;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        reducer.close();
        arena.close();
    }
}
