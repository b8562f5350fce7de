/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The reduction kernel on host memory: {@code out[i] = op(a[i], b[i])}, with {@code out} allowed to be {@code a}
 * ({@code dst = op(dst, src)}). One tight loop per type and operation: the operation is chosen once per call, not
 * per element, which makes them several times faster; half and bfloat16 go through float as NCCL's kernels do. Float
 * arithmetic here gives the same results as rounding the double result once (IEEE: double rounding is exact for
 * sums and products of floats), so the results are those of a per-element computation in double, bit for bit. One
 * exception, the JDK's: a float16 NaN's payload. Its conversions to and from float quiet a signaling NaN in some
 * compiled code and keep it in other code, so which NaN comes out depends on what the JIT has compiled (any NaN is
 * a correct result there).
 */
public final class Reducer {
    private static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    private Reducer() {
    }

    /**
     * {@code dst[i] = op(dst[i], src[i])} for {@code count} elements.
     *
     * @param dst    the destination, reduced in place
     * @param dstOff the destination's byte offset
     * @param src    the source
     * @param srcOff the source's byte offset
     * @param count  the number of elements
     * @param type   the elements' type
     * @param op     the reduction operator
     */
    public static void reduce(final MemorySegment dst, final long dstOff, final MemorySegment src, final long srcOff,
                              final long count, final DataType type, final RedOp op) {
        reduce(dst, dstOff, dst, dstOff, src, srcOff, count, type, op);
    }

    /**
     * Every native address as one segment. With native operands the kernels run on this one segment at absolute
     * addresses, so they meet one segment class and one (global) session whoever calls them: the ring reduces from
     * native staging buffers and the shared-memory direct round from mapped files, and C2 would otherwise compile the
     * loops for whichever kind it saw first and run slower for the other. The checks the segments would have made
     * are made once per call instead (see {@link #checked}).
     */
    private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    /**
     * Below this many elements, {@link #few}: code of its own, so that the bulk loops' profile is of bulk calls.
     * C2 compiles a loop for the trip counts its profile shows; bulk loops first compiled while small collectives
     * call them with 2 elements stay at a third of their speed for the ring's 128 Ki-element chunks (nothing makes
     * them recompile once every operand is the one segment).
     */
    static final int FEW = 32;

    /**
     * {@code out[i] = op(a[i], b[i])} for {@code count} elements; {@code out} may be {@code a} or {@code b}.
     *
     * @param out    the output segment
     * @param outOff the output's byte offset in {@code out}
     * @param a      the first input segment
     * @param aOff   the first input's byte offset in {@code a}
     * @param b      the second input segment
     * @param bOff   the second input's byte offset in {@code b}
     * @param count  the number of elements
     * @param type   the elements' type
     * @param op     the reduction operator
     * @throws IndexOutOfBoundsException if a range lies outside its segment
     * @throws IllegalArgumentException if {@code out} is read-only
     * @throws IllegalStateException if a segment's arena is closed, or {@link WrongThreadException} if it is
     *     confined to another thread (as the segments' own accesses would)
     */
    public static void reduce(final MemorySegment out, final long outOff, final MemorySegment a, final long aOff,
                              final MemorySegment b, final long bOff, final long count, final DataType type,
                              final RedOp op) {
        if (count <= 0) {
            return;
        }
        final long bytes = Math.multiplyExact(count, (long) type.size());
        final long outAt = checked(out, outOff, bytes, true);
        final long aAt = checked(a, aOff, bytes, false);
        final long bAt = checked(b, bOff, bytes, false);
        if (count < FEW) {
            few(out, outOff, a, aOff, b, bOff, count, type, op);
        } else if (out.isNative() && a.isNative() && b.isNative()) {
            kernel(ALL, outAt, ALL, aAt, ALL, bAt, count, type, op);
        } else {
            kernel(out, outOff, a, aOff, b, bOff, count, type, op);
        }
    }

    /**
     * The address of {@code seg}'s {@code [off, off + bytes)} (absolute when it is native), after the checks its own
     * accesses would make, so that a bad call writes nothing:
     * bounds, read-only for the output, and one real access, which fails as they would on a closed arena or from a
     * thread the segment is not confined to. The arena must stay open until the call returns, as every caller's
     * does (the communicator's buffers live as long as it; the reduce threads are waited for).
     */
    private static long checked(final MemorySegment seg, final long off, final long bytes, final boolean write) {
        java.util.Objects.checkFromIndexSize(off, bytes, seg.byteSize());
        if (write && seg.isReadOnly()) {
            throw new IllegalArgumentException("the reduction's output segment is read-only");
        }
        seg.get(I8, off);
        return seg.address() + off;
    }

    /** Element by element, the type and operation chosen per element: the same arithmetic as the bulk loops. */
    private static void few(final MemorySegment o, final long oo, final MemorySegment a, final long ao,
                            final MemorySegment b, final long bo, final long n, final DataType type, final RedOp op) {
        for (long i = 0; i < n; i++) {
            switch (type) {
                case INT8 -> o.set(I8, oo + i, (byte) ints(a.get(I8, ao + i), b.get(I8, bo + i), op));
                case INT32 -> o.set(I32, oo + i * 4, ints(a.get(I32, ao + i * 4), b.get(I32, bo + i * 4), op));
                case INT64 -> o.set(I64, oo + i * 8, longs(a.get(I64, ao + i * 8), b.get(I64, bo + i * 8), op));
                case FLOAT32 -> o.set(F32, oo + i * 4, floats(a.get(F32, ao + i * 4), b.get(F32, bo + i * 4), op));
                case FLOAT64 -> o.set(F64, oo + i * 8, doubles(a.get(F64, ao + i * 8), b.get(F64, bo + i * 8), op));
                case FLOAT16 -> o.set(I16, oo + i * 2,
                    Float.floatToFloat16(floats(f16(a, ao + i * 2), f16(b, bo + i * 2), op)));
                case BFLOAT16 -> o.set(I16, oo + i * 2,
                    DataType.toBf16(floats(bf16(a, ao + i * 2), bf16(b, bo + i * 2), op)));
                default -> throw new IllegalStateException(type.name());
            }
        }
    }

    private static int ints(final int x, final int y, final RedOp op) {
        return switch (op) {
            case SUM -> x + y;
            case PROD -> x * y;
            case MIN -> Math.min(x, y);
            case MAX -> Math.max(x, y);
        };
    }

    private static long longs(final long x, final long y, final RedOp op) {
        return switch (op) {
            case SUM -> x + y;
            case PROD -> x * y;
            case MIN -> Math.min(x, y);
            case MAX -> Math.max(x, y);
        };
    }

    private static float floats(final float x, final float y, final RedOp op) {
        return switch (op) {
            case SUM -> x + y;
            case PROD -> x * y;
            case MIN -> Math.min(x, y);
            case MAX -> Math.max(x, y);
        };
    }

    private static double doubles(final double x, final double y, final RedOp op) {
        return switch (op) {
            case SUM -> x + y;
            case PROD -> x * y;
            case MIN -> Math.min(x, y);
            case MAX -> Math.max(x, y);
        };
    }

    private static void kernel(final MemorySegment out, final long outOff, final MemorySegment a, final long aOff,
                               final MemorySegment b, final long bOff, final long count, final DataType type,
                               final RedOp op) {
        switch (type) {
            case INT8 -> int8(out, outOff, a, aOff, b, bOff, count, op);
            case INT32 -> int32(out, outOff, a, aOff, b, bOff, count, op);
            case INT64 -> int64(out, outOff, a, aOff, b, bOff, count, op);
            case FLOAT32 -> float32(out, outOff, a, aOff, b, bOff, count, op);
            case FLOAT64 -> float64(out, outOff, a, aOff, b, bOff, count, op);
            case FLOAT16, BFLOAT16 -> half(out, outOff, a, aOff, b, bOff, count, op, type == DataType.BFLOAT16);
            default -> throw new IllegalStateException(type.name());
        }
    }

    private static void int8(final MemorySegment o, final long oo, final MemorySegment a, final long ao,
                             final MemorySegment b, final long bo, final long n, final RedOp op) {
        switch (op) {
            case SUM -> {
                for (long i = 0; i < n; i++) {
                    o.set(I8, oo + i, (byte) (a.get(I8, ao + i) + b.get(I8, bo + i)));
                }
            }
            case PROD -> {
                for (long i = 0; i < n; i++) {
                    o.set(I8, oo + i, (byte) (a.get(I8, ao + i) * b.get(I8, bo + i)));
                }
            }
            case MIN -> {
                for (long i = 0; i < n; i++) {
                    o.set(I8, oo + i, (byte) Math.min(a.get(I8, ao + i), b.get(I8, bo + i)));
                }
            }
            case MAX -> {
                for (long i = 0; i < n; i++) {
                    o.set(I8, oo + i, (byte) Math.max(a.get(I8, ao + i), b.get(I8, bo + i)));
                }
            }
            default -> throw new IllegalStateException(op.name());
        }
    }

    private static void int32(final MemorySegment o, final long oo, final MemorySegment a, final long ao,
                              final MemorySegment b, final long bo, final long n, final RedOp op) {
        switch (op) {
            case SUM -> {
                for (long i = 0; i < n; i++) {
                    o.set(I32, oo + i * 4, a.get(I32, ao + i * 4) + b.get(I32, bo + i * 4));
                }
            }
            case PROD -> {
                for (long i = 0; i < n; i++) {
                    o.set(I32, oo + i * 4, a.get(I32, ao + i * 4) * b.get(I32, bo + i * 4));
                }
            }
            case MIN -> {
                for (long i = 0; i < n; i++) {
                    o.set(I32, oo + i * 4, Math.min(a.get(I32, ao + i * 4), b.get(I32, bo + i * 4)));
                }
            }
            case MAX -> {
                for (long i = 0; i < n; i++) {
                    o.set(I32, oo + i * 4, Math.max(a.get(I32, ao + i * 4), b.get(I32, bo + i * 4)));
                }
            }
            default -> throw new IllegalStateException(op.name());
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

    private static void float32(final MemorySegment o, final long oo, final MemorySegment a, final long ao,
                                final MemorySegment b, final long bo, final long n, final RedOp op) {
        switch (op) {
            case SUM -> {
                for (long i = 0; i < n; i++) {
                    o.set(F32, oo + i * 4, a.get(F32, ao + i * 4) + b.get(F32, bo + i * 4));
                }
            }
            case PROD -> {
                for (long i = 0; i < n; i++) {
                    o.set(F32, oo + i * 4, a.get(F32, ao + i * 4) * b.get(F32, bo + i * 4));
                }
            }
            case MIN -> {
                for (long i = 0; i < n; i++) {
                    o.set(F32, oo + i * 4, Math.min(a.get(F32, ao + i * 4), b.get(F32, bo + i * 4)));
                }
            }
            case MAX -> {
                for (long i = 0; i < n; i++) {
                    o.set(F32, oo + i * 4, Math.max(a.get(F32, ao + i * 4), b.get(F32, bo + i * 4)));
                }
            }
            default -> throw new IllegalStateException(op.name());
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

    /**
     * half and bfloat16: widened to float, one float operation, rounded back (bfloat16 to nearest even); the type and
     * the operation are chosen once per call, as for the other types.
     */
    private static void half(final MemorySegment o, final long oo, final MemorySegment a, final long ao,
                             final MemorySegment b, final long bo, final long n, final RedOp op, final boolean bf16) {
        if (bf16) {
            bfloat16(o, oo, a, ao, b, bo, n, op);
        } else {
            float16(o, oo, a, ao, b, bo, n, op);
        }
    }

    private static void float16(final MemorySegment o, final long oo, final MemorySegment a, final long ao,
                                final MemorySegment b, final long bo, final long n, final RedOp op) {
        switch (op) {
            case SUM -> {
                for (long i = 0; i < n; i++) {
                    o.set(I16, oo + i * 2, Float.floatToFloat16(f16(a, ao + i * 2) + f16(b, bo + i * 2)));
                }
            }
            case PROD -> {
                for (long i = 0; i < n; i++) {
                    o.set(I16, oo + i * 2, Float.floatToFloat16(f16(a, ao + i * 2) * f16(b, bo + i * 2)));
                }
            }
            case MIN -> {
                for (long i = 0; i < n; i++) {
                    o.set(I16, oo + i * 2, Float.floatToFloat16(Math.min(f16(a, ao + i * 2), f16(b, bo + i * 2))));
                }
            }
            case MAX -> {
                for (long i = 0; i < n; i++) {
                    o.set(I16, oo + i * 2, Float.floatToFloat16(Math.max(f16(a, ao + i * 2), f16(b, bo + i * 2))));
                }
            }
            default -> throw new IllegalStateException(op.name());
        }
    }

    private static void bfloat16(final MemorySegment o, final long oo, final MemorySegment a, final long ao,
                                 final MemorySegment b, final long bo, final long n, final RedOp op) {
        switch (op) {
            case SUM -> {
                for (long i = 0; i < n; i++) {
                    o.set(I16, oo + i * 2, DataType.toBf16(bf16(a, ao + i * 2) + bf16(b, bo + i * 2)));
                }
            }
            case PROD -> {
                for (long i = 0; i < n; i++) {
                    o.set(I16, oo + i * 2, DataType.toBf16(bf16(a, ao + i * 2) * bf16(b, bo + i * 2)));
                }
            }
            case MIN -> {
                for (long i = 0; i < n; i++) {
                    o.set(I16, oo + i * 2, DataType.toBf16(Math.min(bf16(a, ao + i * 2), bf16(b, bo + i * 2))));
                }
            }
            case MAX -> {
                for (long i = 0; i < n; i++) {
                    o.set(I16, oo + i * 2, DataType.toBf16(Math.max(bf16(a, ao + i * 2), bf16(b, bo + i * 2))));
                }
            }
            default -> throw new IllegalStateException(op.name());
        }
    }

    private static float f16(final MemorySegment s, final long at) {
        return Float.float16ToFloat(s.get(I16, at));
    }

    private static float bf16(final MemorySegment s, final long at) {
        return Float.intBitsToFloat((s.get(I16, at) & 0xffff) << 16);
    }
}
