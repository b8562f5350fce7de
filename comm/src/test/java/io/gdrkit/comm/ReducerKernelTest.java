/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The blocked, vectorized kernels of {@link Reducer} against a plain per-element loop (the kernel as it was: one
 * Java operation per element in the type's own arithmetic), byte for byte, for every type and operation: counts
 * around the block size and odd ones, byte offsets that are no multiple of any vector width (nor of the element
 * size), out distinct from a and b (framed by guard bytes), out == a and out == b, heap segments, and inputs full of
 * special values (NaNs with payloads and either sign, -0.0, +-inf, subnormals, the extremes of each integer type,
 * so that sums and products overflow), seeded. The one latitude: where both inputs of a float element are NaN, the
 * result need only be a NaN. Java does not say which payload it carries, and the earlier kernel did not keep one
 * either: interpreted, {@code Math.max(NaN 0x7fc00000, NaN 0xffc00123)} is the first operand, compiled by C2
 * (scalar or vector) it is the second (checked on JDK 25.0.3). A NaN beside a number keeps its exact bits.
 */
class ReducerKernelTest {
    private static final long SEED = 0x5eed_12L;

    /**
     * Elements per 8 KiB for type t: counts around it are the edges of the blocked kernel that was tried (branch red,
     * not merged: docs/PERFORMANCE.md, "The host reduction kernel"); kept as edges for any kernel that cuts work.
     */
    private static int block(final DataType t) {
        return 8192 / t.size();
    }

    private static long[] counts(final DataType t) {
        final int k = block(t);
        return new long[] {1, 2, 3, 7, 17, 31, 63, 65, 255, k - 1, k, k + 1, 2L * k + 37, 3L * k - 5};
    }

    private static float bf(final short s) {
        return Float.intBitsToFloat((s & 0xffff) << 16);
    }

    /** The per-element reference, one float (or double) operation per element; ReducerTest checks against it too. */
    static void reference(final MemorySegment out, final long oo, final MemorySegment a, final long ao,
                                  final MemorySegment b, final long bo, final long n, final DataType t,
                                  final RedOp op) {
        for (long i = 0; i < n; i++) {
            switch (t) {
                case INT8 -> {
                    final byte x = a.get(ValueLayout.JAVA_BYTE, ao + i);
                    final byte y = b.get(ValueLayout.JAVA_BYTE, bo + i);
                    out.set(ValueLayout.JAVA_BYTE, oo + i, (byte) switch (op) {
                        case SUM -> x + y;
                        case PROD -> x * y;
                        case MIN -> Math.min(x, y);
                        case MAX -> Math.max(x, y);
                    });
                }
                case INT32 -> {
                    final int x = a.get(ValueLayout.JAVA_INT_UNALIGNED, ao + i * 4);
                    final int y = b.get(ValueLayout.JAVA_INT_UNALIGNED, bo + i * 4);
                    out.set(ValueLayout.JAVA_INT_UNALIGNED, oo + i * 4, switch (op) {
                        case SUM -> x + y;
                        case PROD -> x * y;
                        case MIN -> Math.min(x, y);
                        case MAX -> Math.max(x, y);
                    });
                }
                case INT64 -> {
                    final long x = a.get(ValueLayout.JAVA_LONG_UNALIGNED, ao + i * 8);
                    final long y = b.get(ValueLayout.JAVA_LONG_UNALIGNED, bo + i * 8);
                    out.set(ValueLayout.JAVA_LONG_UNALIGNED, oo + i * 8, switch (op) {
                        case SUM -> x + y;
                        case PROD -> x * y;
                        case MIN -> Math.min(x, y);
                        case MAX -> Math.max(x, y);
                    });
                }
                case FLOAT32 -> out.set(ValueLayout.JAVA_FLOAT_UNALIGNED, oo + i * 4, f(op,
                    a.get(ValueLayout.JAVA_FLOAT_UNALIGNED, ao + i * 4),
                    b.get(ValueLayout.JAVA_FLOAT_UNALIGNED, bo + i * 4)));
                case FLOAT64 -> {
                    final double x = a.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, ao + i * 8);
                    final double y = b.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, bo + i * 8);
                    out.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, oo + i * 8, switch (op) {
                        case SUM -> x + y;
                        case PROD -> x * y;
                        case MIN -> Math.min(x, y);
                        case MAX -> Math.max(x, y);
                    });
                }
                case FLOAT16 -> out.set(ValueLayout.JAVA_SHORT_UNALIGNED, oo + i * 2, Float.floatToFloat16(f(op,
                    Float.float16ToFloat(a.get(ValueLayout.JAVA_SHORT_UNALIGNED, ao + i * 2)),
                    Float.float16ToFloat(b.get(ValueLayout.JAVA_SHORT_UNALIGNED, bo + i * 2)))));
                case BFLOAT16 -> out.set(ValueLayout.JAVA_SHORT_UNALIGNED, oo + i * 2, DataType.toBf16(f(op,
                    bf(a.get(ValueLayout.JAVA_SHORT_UNALIGNED, ao + i * 2)),
                    bf(b.get(ValueLayout.JAVA_SHORT_UNALIGNED, bo + i * 2)))));
            }
        }
    }

    private static float f(final RedOp op, final float x, final float y) {
        return switch (op) {
            case SUM -> x + y;
            case PROD -> x * y;
            case MIN -> Math.min(x, y);
            case MAX -> Math.max(x, y);
        };
    }

    /** Special bit patterns of each type (NaNs of both signs with payloads, zeros, infinities, subnormals, extremes). */
    private static long[] specials(final DataType t) {
        return switch (t) {
            case INT8 -> new long[] {0, 1, -1, 127, -128, 64, -64, 2, 16};
            case INT32 -> new long[] {0, 1, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 0x10000, 46341, -46341};
            case INT64 -> new long[] {0, 1, -1, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 32, 3037000500L, -3037000500L};
            case FLOAT32 -> new long[] {0x7fc00000, 0x7f800001, 0xffc00123L, 0xff800001L, 0x7fffffff, 0, 0x80000000L,
                0x7f800000, 0xff800000L, 0x00000001, 0x807fffffL, 0x00400000, 0x00800000, 0x7f7fffff, 0xff7fffffL,
                0x3f800000, 0xbf800000L};
            case FLOAT64 -> new long[] {0x7ff8000000000000L, 0x7ff0000000000001L, 0xfff8000000000123L,
                0xfff0000000000001L, 0, 0x8000000000000000L, 0x7ff0000000000000L, 0xfff0000000000000L, 1,
                0x800fffffffffffffL, 0x0010000000000000L, 0x7fefffffffffffffL, 0xffefffffffffffffL,
                0x3ff0000000000000L, 0xbff0000000000000L};
            case FLOAT16 -> new long[] {0x7e00, 0x7c01, 0xfe23, 0xfc01, 0, 0x8000, 0x7c00, 0xfc00, 0x0001, 0x83ff,
                0x0400, 0x7bff, 0xfbff, 0x3c00, 0xbc00};
            case BFLOAT16 -> new long[] {0x7fc0, 0x7f81, 0xffc3, 0xff81, 0, 0x8000, 0x7f80, 0xff80, 0x0001, 0x807f,
                0x0080, 0x7f7f, 0xff7f, 0x3f80, 0xbf80, 0x3f81, 0x4001};
        };
    }

    /** Random elements: a third special values, a third random bits, a third ordinary numbers. */
    static MemorySegment fill(final MemorySegment m, final DataType t, final SplittableRandom r) {
        final long[] sp = specials(t);
        final int es = t.size();
        for (long i = 0; i + es <= m.byteSize(); i += es) {
            final int pick = r.nextInt(3);
            final long bits = pick == 0 ? sp[r.nextInt(sp.length)] : pick == 1 ? r.nextLong() : ordinary(t, r);
            switch (es) {
                case 1 -> m.set(ValueLayout.JAVA_BYTE, i, (byte) bits);
                case 2 -> m.set(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) bits);
                case 4 -> m.set(ValueLayout.JAVA_INT_UNALIGNED, i, (int) bits);
                default -> m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, bits);
            }
        }
        return m;
    }

    private static long ordinary(final DataType t, final SplittableRandom r) {
        final double v = (r.nextDouble() - 0.5) * 200;
        return switch (t) {
            case INT8, INT32, INT64 -> (long) v;
            case FLOAT16 -> Float.floatToFloat16((float) v);
            case BFLOAT16 -> Float.floatToRawIntBits((float) v) >>> 16;
            case FLOAT32 -> Float.floatToRawIntBits((float) v);
            case FLOAT64 -> Double.doubleToRawLongBits(v);
        };
    }

    private static boolean isNaN(final DataType t, final MemorySegment m, final long off) {
        return switch (t) {
            case FLOAT32 -> Float.isNaN(m.get(ValueLayout.JAVA_FLOAT_UNALIGNED, off));
            case FLOAT64 -> Double.isNaN(m.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, off));
            case FLOAT16 -> Float.isNaN(Float.float16ToFloat(m.get(ValueLayout.JAVA_SHORT_UNALIGNED, off)));
            case BFLOAT16 -> Float.isNaN(bf(m.get(ValueLayout.JAVA_SHORT_UNALIGNED, off)));
            default -> false;
        };
    }

    /**
     * Byte for byte over the whole segment (guards included), but for a float element of two NaNs any NaN, and for a
     * float16 element whose result is a NaN any NaN.
     */
    static void assertBytes(final MemorySegment want, final MemorySegment got, final long oo,
                                    final MemorySegment a, final long ao, final MemorySegment b, final long bo,
                                    final long n, final DataType t, final RedOp op, final String what) {
        final int es = t.size();
        for (long at = 0; at < want.byteSize(); at++) {
            final byte w = want.get(ValueLayout.JAVA_BYTE, at);
            final byte g = got.get(ValueLayout.JAVA_BYTE, at);
            if (w == g) {
                continue;
            }
            final boolean inside = at >= oo && at < oo + n * es;
            if (inside) {
                final long e = (at - oo) / es;
                if (isNaN(t, a, ao + e * es) && isNaN(t, b, bo + e * es) && isNaN(t, got, oo + e * es)) {
                    continue;
                }
                // float16 <-> float conversions quiet a signaling NaN when C2 uses x86's F16C instructions and keep
                // it in the interpreter's Java code, so a float16 NaN's payload depends on what is compiled when
                if (t == DataType.FLOAT16 && isNaN(t, want, oo + e * es) && isNaN(t, got, oo + e * es)) {
                    continue;
                }
            }
            fail(what + ": byte " + at + (inside ? " (element " + (at - oo) / es + ")" : " (a guard byte)")
                + " is " + g + ", want " + w);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(DataType.class)
    void everyTypeAndOperationMatchesThePerElementLoopByteForByte(final DataType t) {
        final int es = t.size();
        final SplittableRandom r = new SplittableRandom(SEED + t.ordinal());
        int cases = 0;
        try (Arena arena = Arena.ofConfined()) {
            for (final RedOp op : RedOp.values()) {
                for (final long n : counts(t)) {
                    final long bytes = n * es;
                    // byte offsets that are no multiple of 64, of a vector width or (but for int8) of the element size
                    final long ao = 1 + r.nextInt(63);
                    final long bo = 1 + r.nextInt(63);
                    final long oo = 1 + r.nextInt(63);
                    final long size = bytes + 128;
                    final MemorySegment a = fill(arena.allocate(size, 64), t, r);
                    final MemorySegment b = fill(arena.allocate(size, 64), t, r);
                    final String what = t + " " + op + " count " + n + " offsets out " + oo + " a " + ao + " b " + bo;

                    // out distinct, framed by guard bytes
                    final MemorySegment want = arena.allocate(size, 64).fill((byte) 0x5a);
                    final MemorySegment got = arena.allocate(size, 64).fill((byte) 0x5a);
                    final MemorySegment aBefore = copy(arena, a);
                    final MemorySegment bBefore = copy(arena, b);
                    reference(want, oo, a, ao, b, bo, n, t, op);
                    Reducer.reduce(got, oo, a, ao, b, bo, n, t, op);
                    assertBytes(want, got, oo, a, ao, b, bo, n, t, op, what + ", out distinct");
                    assertEquals(-1, a.mismatch(aBefore), what + ": the kernel wrote into input a");
                    assertEquals(-1, b.mismatch(bBefore), what + ": the kernel wrote into input b");

                    // out == a (dst = op(dst, src)) and out == b, through both entry points
                    for (int mode = 0; mode < 3; mode++) {
                        final MemorySegment wantIn = copy(arena, mode == 2 ? b : a);
                        final MemorySegment gotIn = copy(arena, mode == 2 ? b : a);
                        final long io = mode == 2 ? bo : ao;
                        if (mode == 2) {
                            reference(wantIn, io, a, ao, wantIn, io, n, t, op);
                            Reducer.reduce(gotIn, io, a, ao, gotIn, io, n, t, op);
                            assertBytes(wantIn, gotIn, io, a, ao, b, bo, n, t, op, what + ", out == b");
                        } else {
                            reference(wantIn, io, wantIn, io, b, bo, n, t, op);
                            if (mode == 0) {
                                Reducer.reduce(gotIn, io, gotIn, io, b, bo, n, t, op);
                            } else {
                                Reducer.reduce(gotIn, io, b, bo, n, t, op);
                            }
                            assertBytes(wantIn, gotIn, io, a, ao, b, bo, n, t, op, what + ", out == a (" + mode + ")");
                        }
                    }
                    cases++;
                }
            }
        }
        assertEquals(RedOp.values().length * counts(t).length, cases);
    }

    private static MemorySegment copy(final Arena arena, final MemorySegment m) {
        final MemorySegment c = arena.allocate(m.byteSize(), 64);
        MemorySegment.copy(m, 0, c, 0, m.byteSize());
        return c;
    }

    @Test
    void heapSegmentsAndAZeroCountWork() {
        final SplittableRandom r = new SplittableRandom(SEED);
        for (final DataType t : DataType.values()) {
            final int n = 1000;
            final int es = t.size();
            final MemorySegment a = fill(MemorySegment.ofArray(new byte[n * es + 9]), t, r);
            final MemorySegment b = fill(MemorySegment.ofArray(new long[(n * es + 9) / 8 + 1]), t, r);
            final MemorySegment want = MemorySegment.ofArray(new byte[n * es + 9]).fill((byte) 7);
            final MemorySegment got = MemorySegment.ofArray(new byte[n * es + 9]).fill((byte) 7);
            reference(want, 3, a, 5, b, 1, n, t, RedOp.MAX);
            Reducer.reduce(got, 3, a, 5, b, 1, n, t, RedOp.MAX);
            assertBytes(want, got, 3, a, 5, b, 1, n, t, RedOp.MAX, t + " heap segments");
            final MemorySegment untouched = MemorySegment.ofArray(new byte[16]).fill((byte) 7);
            Reducer.reduce(untouched, 0, a, 0, b, 0, 0, t, RedOp.SUM);
            for (int i = 0; i < 16; i++) {
                assertEquals(7, untouched.get(ValueLayout.JAVA_BYTE, i), t + ": count 0 wrote byte " + i);
            }
        }
    }

    /** Ranks in one JVM reduce at once: each thread has its own block arrays. */
    @Test
    void threadsReducingAtOnceDoNotShareBlocks() throws Exception {
        final ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            final List<Future<?>> fs = new ArrayList<>();
            for (int th = 0; th < 3; th++) {
                final long seed = SEED + 100 + th;
                fs.add(pool.submit(() -> {
                    final SplittableRandom r = new SplittableRandom(seed);
                    try (Arena arena = Arena.ofConfined()) {
                        for (int k = 0; k < 40; k++) {
                            final DataType t = DataType.values()[r.nextInt(DataType.values().length)];
                            final RedOp op = RedOp.values()[r.nextInt(RedOp.values().length)];
                            final long n = 1 + r.nextInt(3 * block(t));
                            final long size = n * t.size() + 8;
                            final MemorySegment a = fill(arena.allocate(size), t, r);
                            final MemorySegment b = fill(arena.allocate(size), t, r);
                            final MemorySegment want = arena.allocate(size);
                            final MemorySegment got = arena.allocate(size);
                            reference(want, 0, a, 0, b, 0, n, t, op);
                            Reducer.reduce(got, 0, a, 0, b, 0, n, t, op);
                            assertBytes(want, got, 0, a, 0, b, 0, n, t, op, "thread " + seed + " " + t + " " + op);
                        }
                    }
                    return null;
                }));
            }
            for (final Future<?> f : fs) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
