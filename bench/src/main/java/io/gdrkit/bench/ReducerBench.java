/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

import io.gdrkit.comm.DataType;
import io.gdrkit.comm.RedOp;
import io.gdrkit.comm.Reducer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.SplittableRandom;
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
 * The host reduction kernel ({@link Reducer#reduce}) against {@link MemorySegment#copy} of the same number of output
 * bytes, the memory-speed reference, on native segments. {@code inPlace}: out is a ({@code dst = op(dst, src)}, as
 * the ring's reduce-scatter calls it); otherwise three distinct segments. The score is calls/s of wall time; the aux
 * counters give output bytes and CPU ns (a reduction reads twice what it writes; a copy reads once). Inputs are seeded random values in [1, 2) (no
 * subnormals, which would measure the FPU's microcode assists rather than the loop). Run:
 * {@code java -jar bench/target/gdrkit-bench.jar ReducerBench -f 3 -wi 3 -i 5 -w 1 -r 1}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 3, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class ReducerBench {
    /** type:op. */
    @Param({"FLOAT32:SUM", "FLOAT64:SUM", "INT32:SUM", "FLOAT32:MAX", "BFLOAT16:SUM"})
    public String kernel;

    @Param({"false", "true"})
    public boolean inPlace;

    /** Output bytes per call (8 MiB: a 16 MiB 2-rank allreduce reduces half its buffer). */
    @Param({"8388608"})
    public int bytes;

    private Arena arena;
    private MemorySegment a;
    private MemorySegment b;
    private MemorySegment out;
    private DataType type;
    private RedOp op;
    private long count;

    /**
     * Output bytes and this thread's CPU time per iteration (totals): bytes / cpuNs is GB per CPU second, which time
     * spent descheduled does not dilute (this host's 2 cores are shared; the wall-clock score is JMH's own).
     */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Counters {
        private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
        public long bytes;
        public long cpuNs;

        @Setup(Level.Iteration)
        public void reset() {
            bytes = 0;
            cpuNs = 0;
        }

        long cpu() {
            return MX.getCurrentThreadCpuTime();
        }
    }

    @Setup
    public void setup() {
        final String[] k = kernel.split(":");
        type = DataType.valueOf(k[0]);
        op = RedOp.valueOf(k[1]);
        count = bytes / type.size();
        arena = Arena.ofShared();
        a = fill(arena.allocate(bytes, 4096), 1);
        b = fill(arena.allocate(bytes, 4096), 2);
        out = inPlace ? a : fill(arena.allocate(bytes, 4096), 3);
    }

    private MemorySegment fill(final MemorySegment m, final long seed) {
        final SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < count; i++) {
            final double v = 1 + r.nextDouble();
            switch (type) {
                case INT8 -> m.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
                case INT32 -> m.setAtIndex(ValueLayout.JAVA_INT, i, r.nextInt());
                case INT64 -> m.setAtIndex(ValueLayout.JAVA_LONG, i, r.nextLong());
                case FLOAT16 -> m.setAtIndex(ValueLayout.JAVA_SHORT, i, Float.floatToFloat16((float) v));
                case BFLOAT16 -> m.setAtIndex(ValueLayout.JAVA_SHORT, i,
                    (short) (Float.floatToRawIntBits((float) v) >>> 16));
                case FLOAT32 -> m.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) v);
                case FLOAT64 -> m.setAtIndex(ValueLayout.JAVA_DOUBLE, i, v);
            }
        }
        return m;
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public void reduce(final Counters c) {
        final long t = c.cpu();
        Reducer.reduce(out, 0, a, 0, b, 0, count, type, op);
        c.cpuNs += c.cpu() - t;
        c.bytes += bytes;
    }

    /** The same output bytes through MemorySegment.copy (from b, so in place it writes a as reduce does). */
    @Benchmark
    public void copy(final Counters c) {
        final long t = c.cpu();
        MemorySegment.copy(b, 0, out, 0, bytes);
        c.cpuNs += c.cpu() - t;
        c.bytes += bytes;
    }
}
