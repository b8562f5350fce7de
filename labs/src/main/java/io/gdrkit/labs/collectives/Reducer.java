/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.collectives;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The reduction kernel on host memory: {@code out[i] = op(a[i], b[i])}, with {@code out} allowed to be {@code a} or
 * {@code b} ({@code dst = op(dst, src)}). The operation is chosen once per call (or per block), never per element.
 *
 * <p>Why blocks through small heap arrays: on JDK 25, C2 does not auto-vectorize a loop that stores to one native
 * segment while loading from another (it cannot prove that they do not overlap; a runtime aliasing check comes with
 * JDK 26), and float loads from a segment go through {@code intBitsToFloat}, which it does not vectorize. Loops over
 * Java arrays it vectorizes. So int8, int32, float16, bfloat16 and float32 run in blocks of {@value #BLOCK_BYTES}
 * bytes per operand (L1-sized): both operands are bulk-copied into per-thread arrays ({@link MemorySegment#copy}, a
 * vectorized stub), one loop per type and operation combines them there, and the result is bulk-copied out. A block
 * reads all of its inputs before it writes its output, so {@code out} may be {@code a} or {@code b}. The 8-byte
 * types keep one plain loop per operation over the segments: they move twice the bytes per element, and there the
 * blocks lost (float64 SUM at 512 KiB: 8.4 against 12.5 GB per CPU second). docs/PERFORMANCE.md ("The host
 * reduction kernel") has what was tried and measured.
 *
 * <p>Results are bit for bit those of the per-element loop: float SUM and PROD are one IEEE operation per element
 * whatever the order; {@link Math#min}/{@link Math#max} keep their signed-zero rules and return a NaN operand's
 * exact bits (where both operands are NaN, which payload wins was never fixed: the interpreter and C2 differ, the
 * earlier kernel included); half and bfloat16 go through float as NCCL's kernels do (float arithmetic gives the
 * same result as rounding the double result once: double rounding is exact for +, * of floats), rounded back to
 * nearest even.
 */
public final class Reducer {
    /** Bytes per operand per block: two inputs and the bf16 staging fit in a 48 KiB L1 data cache. */
    static final int BLOCK_BYTES = 8192;

    private static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    /** Per-thread block arrays (a rank thread reduces on its own; ranks share this class in one JVM). */
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private Reducer() {
    }

    /** {@code dst[i] = op(dst[i], src[i])} for {@code count} elements. */
    public static void reduce(final MemorySegment dst, final long dstOff, final MemorySegment src, final long srcOff,
                              final long count, final DataType type, final RedOp op) {
        reduce(dst, dstOff, dst, dstOff, src, srcOff, count, type, op);
    }

    /** {@code out[i] = op(a[i], b[i])} for {@code count} elements; {@code out} may be {@code a} or {@code b}. */
    public static void reduce(final MemorySegment out, final long outOff, final MemorySegment a, final long aOff,
                              final MemorySegment b, final long bOff, final long count, final DataType type,
                              final RedOp op) {
        if (count <= 0) {
            return;
        }
        final Scratch s = SCRATCH.get();
        switch (type) {
            case INT8 -> int8(s, out, outOff, a, aOff, b, bOff, count, op);
            case INT32 -> int32(s, out, outOff, a, aOff, b, bOff, count, op);
            case INT64 -> int64(out, outOff, a, aOff, b, bOff, count, op);
            case FLOAT32 -> float32(s, out, outOff, a, aOff, b, bOff, count, op);
            case FLOAT64 -> float64(out, outOff, a, aOff, b, bOff, count, op);
            case FLOAT16 -> float16(s, out, outOff, a, aOff, b, bOff, count, op);
            case BFLOAT16 -> bfloat16(s, out, outOff, a, aOff, b, bOff, count, op);
            default -> throw new IllegalStateException(type.name());
        }
    }

    /** One thread's block arrays: two operands per blocked element type, plus bfloat16's halves and views. */
    private static final class Scratch {
        final byte[] i8a = new byte[BLOCK_BYTES];
        final byte[] i8b = new byte[BLOCK_BYTES];
        final short[] i16a = new short[BLOCK_BYTES / 2];
        final short[] i16b = new short[BLOCK_BYTES / 2];
        final int[] i32a = new int[BLOCK_BYTES / 4];
        final int[] i32b = new int[BLOCK_BYTES / 4];
        final float[] f32a = new float[BLOCK_BYTES / 4];
        final float[] f32b = new float[BLOCK_BYTES / 4];
        final int[] i32c = new int[BLOCK_BYTES / 4];
        final int[] i32d = new int[BLOCK_BYTES / 4];
        /** Views for bfloat16's bulk copies between int and float arrays (the reinterpretation). */
        final MemorySegment f32aSeg = MemorySegment.ofArray(f32a);
        final MemorySegment f32bSeg = MemorySegment.ofArray(f32b);
        final MemorySegment i32cSeg = MemorySegment.ofArray(i32c);
        final MemorySegment i32dSeg = MemorySegment.ofArray(i32d);
    }

    private static void int8(final Scratch s, final MemorySegment o, final long oo, final MemorySegment a,
                             final long ao, final MemorySegment b, final long bo, final long n, final RedOp op) {
        final byte[] x = s.i8a;
        final byte[] y = s.i8b;
        for (long done = 0; done < n; ) {
            final int m = (int) Math.min(x.length, n - done);
            MemorySegment.copy(a, I8, ao + done, x, 0, m);
            MemorySegment.copy(b, I8, bo + done, y, 0, m);
            switch (op) {
                case SUM -> sum(x, y, m);
                case PROD -> prod(x, y, m);
                case MIN -> min(x, y, m);
                case MAX -> max(x, y, m);
                default -> throw new IllegalStateException(op.name());
            }
            MemorySegment.copy(x, 0, o, I8, oo + done, m);
            done += m;
        }
    }

    private static void int32(final Scratch s, final MemorySegment o, final long oo, final MemorySegment a,
                              final long ao, final MemorySegment b, final long bo, final long n, final RedOp op) {
        final int[] x = s.i32a;
        final int[] y = s.i32b;
        for (long done = 0; done < n; ) {
            final int m = (int) Math.min(x.length, n - done);
            MemorySegment.copy(a, I32, ao + done * 4, x, 0, m);
            MemorySegment.copy(b, I32, bo + done * 4, y, 0, m);
            switch (op) {
                case SUM -> sum(x, y, m);
                case PROD -> prod(x, y, m);
                case MIN -> min(x, y, m);
                case MAX -> max(x, y, m);
                default -> throw new IllegalStateException(op.name());
            }
            MemorySegment.copy(x, 0, o, I32, oo + done * 4, m);
            done += m;
        }
    }

    private static void int64(final MemorySegment o, final long oo, final MemorySegment a, final long ao,
                              final MemorySegment b, final long bo, final long n, final RedOp op) {
        switch (op) {
            case SUM -> {
                for (long i = 0; i < n; i++) {
                    o.set(I64, oo + i * 8, a.get(I64, ao + i * 8) + b.get(I64, bo + i * 8));
                }
            }
            case PROD -> {
                for (long i = 0; i < n; i++) {
                    o.set(I64, oo + i * 8, a.get(I64, ao + i * 8) * b.get(I64, bo + i * 8));
                }
            }
            case MIN -> {
                for (long i = 0; i < n; i++) {
                    o.set(I64, oo + i * 8, Math.min(a.get(I64, ao + i * 8), b.get(I64, bo + i * 8)));
                }
            }
            case MAX -> {
                for (long i = 0; i < n; i++) {
                    o.set(I64, oo + i * 8, Math.max(a.get(I64, ao + i * 8), b.get(I64, bo + i * 8)));
                }
            }
            default -> throw new IllegalStateException(op.name());
        }
    }

    private static void float32(final Scratch s, final MemorySegment o, final long oo, final MemorySegment a,
                                final long ao, final MemorySegment b, final long bo, final long n, final RedOp op) {
        final float[] x = s.f32a;
        final float[] y = s.f32b;
        for (long done = 0; done < n; ) {
            final int m = (int) Math.min(x.length, n - done);
            MemorySegment.copy(a, F32, ao + done * 4, x, 0, m);
            MemorySegment.copy(b, F32, bo + done * 4, y, 0, m);
            apply(x, y, m, op);
            MemorySegment.copy(x, 0, o, F32, oo + done * 4, m);
            done += m;
        }
    }

    private static void float64(final MemorySegment o, final long oo, final MemorySegment a, final long ao,
                                final MemorySegment b, final long bo, final long n, final RedOp op) {
        switch (op) {
            case SUM -> {
                for (long i = 0; i < n; i++) {
                    o.set(F64, oo + i * 8, a.get(F64, ao + i * 8) + b.get(F64, bo + i * 8));
                }
            }
            case PROD -> {
                for (long i = 0; i < n; i++) {
                    o.set(F64, oo + i * 8, a.get(F64, ao + i * 8) * b.get(F64, bo + i * 8));
                }
            }
            case MIN -> {
                for (long i = 0; i < n; i++) {
                    o.set(F64, oo + i * 8, Math.min(a.get(F64, ao + i * 8), b.get(F64, bo + i * 8)));
                }
            }
            case MAX -> {
                for (long i = 0; i < n; i++) {
                    o.set(F64, oo + i * 8, Math.max(a.get(F64, ao + i * 8), b.get(F64, bo + i * 8)));
                }
            }
            default -> throw new IllegalStateException(op.name());
        }
    }

    /** IEEE half: widened to float by the half-to-float conversion, one float operation, rounded back. */
    private static void float16(final Scratch s, final MemorySegment o, final long oo, final MemorySegment a,
                                final long ao, final MemorySegment b, final long bo, final long n, final RedOp op) {
        final short[] x = s.i16a;
        final short[] y = s.i16b;
        for (long done = 0; done < n; ) {
            final int m = (int) Math.min(x.length, n - done);
            MemorySegment.copy(a, I16, ao + done * 2, x, 0, m);
            MemorySegment.copy(b, I16, bo + done * 2, y, 0, m);
            switch (op) {
                case SUM -> halfSum(x, y, m);
                case PROD -> halfProd(x, y, m);
                case MIN -> halfMin(x, y, m);
                case MAX -> halfMax(x, y, m);
                default -> throw new IllegalStateException(op.name());
            }
            MemorySegment.copy(x, 0, o, I16, oo + done * 2, m);
            done += m;
        }
    }

    /**
     * bfloat16, two elements per int: C2 vectorizes none of the conversions between 16-bit and 32-bit lanes here
     * (widening a short array ran at 0.3-0.4 ns per element, scalar), so the block is read as ints and every step
     * stays in 32-bit lanes. In each int the low half's float is {@code w << 16} and the high half's is
     * {@code w & 0xffff0000}; a bulk copy into a float array is the reinterpretation ({@code intBitsToFloat} does not
     * vectorize either); one float loop per half; the float bits copy back, round to nearest even without a branch
     * (NaN becomes 0x7fc0, as {@link DataType#toBf16} does) and recombine. Both halves get the same treatment, so the
     * byte order does not matter. An odd last element goes alone.
     */
    private static void bfloat16(final Scratch s, final MemorySegment o, final long oo, final MemorySegment a,
                                 final long ao, final MemorySegment b, final long bo, final long n, final RedOp op) {
        final int[] wa = s.i32a;
        final int[] wb = s.i32b;
        final int[] lo = s.i32c;
        final int[] hi = s.i32d;
        final float[] fa = s.f32a;
        final float[] fb = s.f32b;
        final long pairs = n / 2;
        for (long done = 0; done < pairs; ) {
            final int m = (int) Math.min(wa.length, pairs - done);
            MemorySegment.copy(a, I32, ao + done * 4, wa, 0, m);
            MemorySegment.copy(b, I32, bo + done * 4, wb, 0, m);
            half(wa, wb, lo, fa, fb, s.f32aSeg, s.f32bSeg, s.i32cSeg, m, op, 16);
            half(wa, wb, hi, fa, fb, s.f32aSeg, s.f32bSeg, s.i32dSeg, m, op, 0);
            for (int i = 0; i < m; i++) {
                wa[i] = (lo[i] & 0xffff) | (hi[i] << 16);
            }
            MemorySegment.copy(wa, 0, o, I32, oo + done * 4, m);
            done += m;
        }
        if ((n & 1) != 0) {
            final long at = (n - 1) * 2;
            final float x = Float.intBitsToFloat(a.get(I16, ao + at) << 16);
            final float y = Float.intBitsToFloat(b.get(I16, bo + at) << 16);
            o.set(I16, oo + at, DataType.toBf16(switch (op) {
                case SUM -> x + y;
                case PROD -> x * y;
                case MIN -> Math.min(x, y);
                case MAX -> Math.max(x, y);
            }));
        }
    }

    /**
     * One half of each int of wa and wb ({@code shift} 16: the low half, moved up; 0: the high half, masked) as
     * floats, combined, rounded to bfloat16 in the low 16 bits of {@code out}.
     */
    private static void half(final int[] wa, final int[] wb, final int[] out, final float[] fa, final float[] fb,
                             final MemorySegment faSeg, final MemorySegment fbSeg, final MemorySegment outSeg,
                             final int m, final RedOp op, final int shift) {
        if (shift == 16) {
            for (int i = 0; i < m; i++) {
                out[i] = wa[i] << 16;
            }
            MemorySegment.copy(out, 0, faSeg, I32, 0, m);
            for (int i = 0; i < m; i++) {
                out[i] = wb[i] << 16;
            }
        } else {
            for (int i = 0; i < m; i++) {
                out[i] = wa[i] & 0xffff0000;
            }
            MemorySegment.copy(out, 0, faSeg, I32, 0, m);
            for (int i = 0; i < m; i++) {
                out[i] = wb[i] & 0xffff0000;
            }
        }
        MemorySegment.copy(out, 0, fbSeg, I32, 0, m);
        apply(fa, fb, m, op);
        MemorySegment.copy(fa, 0, outSeg, F32, 0, m);
        roundBf16(out, m);
    }

    private static void apply(final float[] x, final float[] y, final int m, final RedOp op) {
        switch (op) {
            case SUM -> sum(x, y, m);
            case PROD -> prod(x, y, m);
            case MIN -> min(x, y, m);
            case MAX -> max(x, y, m);
            default -> throw new IllegalStateException(op.name());
        }
    }

    /** {@link DataType#toBf16} on float bits, in place, branch-free so that it vectorizes: the result in the low half. */
    private static void roundBf16(final int[] bits, final int m) {
        for (int i = 0; i < m; i++) {
            final int f = bits[i];
            final int nan = (0x7f800000 - (f & 0x7fffffff)) >> 31; // -1 for a NaN, else 0
            final int rounded = (f + 0x7fff + ((f >>> 16) & 1)) >>> 16;
            bits[i] = (rounded & ~nan) | (0x7fc0 & nan);
        }
    }

    // One loop per element type and operation: C2 vectorizes each (x = op(x, y) over arrays).

    private static void sum(final byte[] x, final byte[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = (byte) (x[i] + y[i]);
        }
    }

    private static void prod(final byte[] x, final byte[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = (byte) (x[i] * y[i]);
        }
    }

    private static void min(final byte[] x, final byte[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = (byte) Math.min(x[i], y[i]);
        }
    }

    private static void max(final byte[] x, final byte[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = (byte) Math.max(x[i], y[i]);
        }
    }

    private static void sum(final int[] x, final int[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = x[i] + y[i];
        }
    }

    private static void prod(final int[] x, final int[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = x[i] * y[i];
        }
    }

    private static void min(final int[] x, final int[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = Math.min(x[i], y[i]);
        }
    }

    private static void max(final int[] x, final int[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = Math.max(x[i], y[i]);
        }
    }

    private static void sum(final float[] x, final float[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = x[i] + y[i];
        }
    }

    private static void prod(final float[] x, final float[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = x[i] * y[i];
        }
    }

    private static void min(final float[] x, final float[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = Math.min(x[i], y[i]);
        }
    }

    private static void max(final float[] x, final float[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = Math.max(x[i], y[i]);
        }
    }

    private static void halfSum(final short[] x, final short[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = Float.floatToFloat16(Float.float16ToFloat(x[i]) + Float.float16ToFloat(y[i]));
        }
    }

    private static void halfProd(final short[] x, final short[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = Float.floatToFloat16(Float.float16ToFloat(x[i]) * Float.float16ToFloat(y[i]));
        }
    }

    private static void halfMin(final short[] x, final short[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = Float.floatToFloat16(Math.min(Float.float16ToFloat(x[i]), Float.float16ToFloat(y[i])));
        }
    }

    private static void halfMax(final short[] x, final short[] y, final int m) {
        for (int i = 0; i < m; i++) {
            x[i] = Float.floatToFloat16(Math.max(Float.float16ToFloat(x[i]), Float.float16ToFloat(y[i])));
        }
    }
}
