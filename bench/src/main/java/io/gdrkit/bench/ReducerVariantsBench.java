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
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
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
 * The loop shapes tried for {@link Reducer} (docs/PERFORMANCE.md, "The host reduction kernel"), float32 and int32
 * SUM, kept so that the choice can be checked again on a later JDK (JDK 26 adds C2's runtime aliasing check, which
 * may let the plain segment loops vectorize): {@code longLoop} the kernel before (long induction, unaligned
 * layouts), {@code intLoop} int-counted loops over strips of at most 2^20 elements with aligned layouts when the
 * addresses allow and a separate loop for out == a (each loop with its layout a constant: a layout passed as a
 * parameter leaves the access unfolded, 30x slower), {@code blocks} whatever {@link Reducer#reduce} is (the blocked kernel on branch red, where these figures were taken; the scalar one on main),
 * {@code copy} the memory-speed reference. Counters as in {@link ReducerBench}. Run:
 * {@code java -jar bench/target/gdrkit-bench.jar ReducerVariantsBench -f 3 -wi 3 -i 5 -w 1 -r 1}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 3, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class ReducerVariantsBench {
    private static final ValueLayout.OfInt I32U = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfInt I32A = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfFloat F32U = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfFloat F32A = ValueLayout.JAVA_FLOAT;
    private static final int STRIP = 1 << 20;

    @Param({"FLOAT32", "INT32"})
    public String type;

    @Param({"false", "true"})
    public boolean inPlace;

    @Param({"8388608"})
    public int bytes;

    private Arena arena;
    private MemorySegment a;
    private MemorySegment b;
    private MemorySegment out;
    private boolean f32;
    private long count;

    @Setup
    public void setup() {
        f32 = "FLOAT32".equals(type);
        count = bytes / 4;
        arena = Arena.ofShared();
        a = arena.allocate(bytes, 4096);
        b = arena.allocate(bytes, 4096);
        for (long i = 0; i < count; i++) {
            a.setAtIndex(F32A, i, 1 + (i % 1000) / 1000f);
            b.setAtIndex(F32A, i, 1 + (i % 999) / 999f);
        }
        out = inPlace ? a : arena.allocate(bytes, 4096);
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public void copy(final ReducerBench.Counters c) {
        final long t = c.cpu();
        MemorySegment.copy(b, 0, out, 0, bytes);
        c.cpuNs += c.cpu() - t;
        c.bytes += bytes;
    }

    @Benchmark
    public void blocks(final ReducerBench.Counters c) {
        final long t = c.cpu();
        Reducer.reduce(out, 0, a, 0, b, 0, count, f32 ? DataType.FLOAT32 : DataType.INT32, RedOp.SUM);
        c.cpuNs += c.cpu() - t;
        c.bytes += bytes;
    }

    @Benchmark
    public void longLoop(final ReducerBench.Counters c) {
        final long t = c.cpu();
        if (f32) {
            for (long i = 0; i < count; i++) {
                out.set(F32U, i * 4, a.get(F32U, i * 4) + b.get(F32U, i * 4));
            }
        } else {
            for (long i = 0; i < count; i++) {
                out.set(I32U, i * 4, a.get(I32U, i * 4) + b.get(I32U, i * 4));
            }
        }
        c.cpuNs += c.cpu() - t;
        c.bytes += bytes;
    }

    @Benchmark
    public void intLoop(final ReducerBench.Counters c) {
        final long t = c.cpu();
        final boolean aligned = ((out.address() | a.address() | b.address()) & 3) == 0;
        for (long s = 0; s < count; s += STRIP) {
            final int m = (int) Math.min(STRIP, count - s);
            final long at = s * 4;
            if (f32) {
                if (out == a) {
                    if (aligned) {
                        inPlaceFA(a, at, b, at, m);
                    } else {
                        inPlaceFU(a, at, b, at, m);
                    }
                } else if (aligned) {
                    threeFA(out, at, a, at, b, at, m);
                } else {
                    threeFU(out, at, a, at, b, at, m);
                }
            } else if (out == a) {
                if (aligned) {
                    inPlaceIA(a, at, b, at, m);
                } else {
                    inPlaceIU(a, at, b, at, m);
                }
            } else if (aligned) {
                threeIA(out, at, a, at, b, at, m);
            } else {
                threeIU(out, at, a, at, b, at, m);
            }
        }
        c.cpuNs += c.cpu() - t;
        c.bytes += bytes;
    }

    private static void inPlaceFA(final MemorySegment d, final long dOff, final MemorySegment s, final long sOff,
                                   final int m) {
        for (int i = 0; i < m; i++) {
            d.set(F32A, dOff + i * 4L, d.get(F32A, dOff + i * 4L) + s.get(F32A, sOff + i * 4L));
        }
    }

    private static void threeFA(final MemorySegment o, final long oOff, final MemorySegment x, final long xOff,
                                 final MemorySegment y, final long yOff, final int m) {
        for (int i = 0; i < m; i++) {
            o.set(F32A, oOff + i * 4L, x.get(F32A, xOff + i * 4L) + y.get(F32A, yOff + i * 4L));
        }
    }

    private static void inPlaceFU(final MemorySegment d, final long dOff, final MemorySegment s, final long sOff,
                                   final int m) {
        for (int i = 0; i < m; i++) {
            d.set(F32U, dOff + i * 4L, d.get(F32U, dOff + i * 4L) + s.get(F32U, sOff + i * 4L));
        }
    }

    private static void threeFU(final MemorySegment o, final long oOff, final MemorySegment x, final long xOff,
                                 final MemorySegment y, final long yOff, final int m) {
        for (int i = 0; i < m; i++) {
            o.set(F32U, oOff + i * 4L, x.get(F32U, xOff + i * 4L) + y.get(F32U, yOff + i * 4L));
        }
    }

    private static void inPlaceIA(final MemorySegment d, final long dOff, final MemorySegment s, final long sOff,
                                   final int m) {
        for (int i = 0; i < m; i++) {
            d.set(I32A, dOff + i * 4L, d.get(I32A, dOff + i * 4L) + s.get(I32A, sOff + i * 4L));
        }
    }

    private static void threeIA(final MemorySegment o, final long oOff, final MemorySegment x, final long xOff,
                                 final MemorySegment y, final long yOff, final int m) {
        for (int i = 0; i < m; i++) {
            o.set(I32A, oOff + i * 4L, x.get(I32A, xOff + i * 4L) + y.get(I32A, yOff + i * 4L));
        }
    }

    private static void inPlaceIU(final MemorySegment d, final long dOff, final MemorySegment s, final long sOff,
                                   final int m) {
        for (int i = 0; i < m; i++) {
            d.set(I32U, dOff + i * 4L, d.get(I32U, dOff + i * 4L) + s.get(I32U, sOff + i * 4L));
        }
    }

    private static void threeIU(final MemorySegment o, final long oOff, final MemorySegment x, final long xOff,
                                 final MemorySegment y, final long yOff, final int m) {
        for (int i = 0; i < m; i++) {
            o.set(I32U, oOff + i * 4L, x.get(I32U, xOff + i * 4L) + y.get(I32U, yOff + i * 4L));
        }
    }
}
