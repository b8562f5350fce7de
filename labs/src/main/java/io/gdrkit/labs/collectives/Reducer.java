/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.collectives;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The reduction kernel on host memory: {@code dst[i] = op(dst[i], src[i])}. Loops per type with primitive
 * arithmetic (no boxing, no per-element dispatch); half and bfloat16 go through float as NCCL's kernels do.
 */
public final class Reducer {
    private Reducer() {
    }

    public static void reduce(final MemorySegment dst, final long dstOff, final MemorySegment src, final long srcOff,
                              final long count, final DataType type, final RedOp op) {
        switch (type) {
            case INT8 -> {
                for (long i = 0; i < count; i++) {
                    final byte a = dst.get(ValueLayout.JAVA_BYTE, dstOff + i);
                    final byte b = src.get(ValueLayout.JAVA_BYTE, srcOff + i);
                    dst.set(ValueLayout.JAVA_BYTE, dstOff + i, (byte) switch (op) {
                        case SUM -> a + b;
                        case PROD -> a * b;
                        case MIN -> Math.min(a, b);
                        case MAX -> Math.max(a, b);
                    });
                }
            }
            case INT32 -> {
                for (long i = 0; i < count; i++) {
                    final int a = dst.get(ValueLayout.JAVA_INT_UNALIGNED, dstOff + i * 4);
                    final int b = src.get(ValueLayout.JAVA_INT_UNALIGNED, srcOff + i * 4);
                    dst.set(ValueLayout.JAVA_INT_UNALIGNED, dstOff + i * 4, switch (op) {
                        case SUM -> a + b;
                        case PROD -> a * b;
                        case MIN -> Math.min(a, b);
                        case MAX -> Math.max(a, b);
                    });
                }
            }
            case INT64 -> {
                for (long i = 0; i < count; i++) {
                    final long a = dst.get(ValueLayout.JAVA_LONG_UNALIGNED, dstOff + i * 8);
                    final long b = src.get(ValueLayout.JAVA_LONG_UNALIGNED, srcOff + i * 8);
                    dst.set(ValueLayout.JAVA_LONG_UNALIGNED, dstOff + i * 8, switch (op) {
                        case SUM -> a + b;
                        case PROD -> a * b;
                        case MIN -> Math.min(a, b);
                        case MAX -> Math.max(a, b);
                    });
                }
            }
            case FLOAT32 -> {
                for (long i = 0; i < count; i++) {
                    final float a = dst.get(ValueLayout.JAVA_FLOAT_UNALIGNED, dstOff + i * 4);
                    final float b = src.get(ValueLayout.JAVA_FLOAT_UNALIGNED, srcOff + i * 4);
                    dst.set(ValueLayout.JAVA_FLOAT_UNALIGNED, dstOff + i * 4, f(op, a, b));
                }
            }
            case FLOAT64 -> {
                for (long i = 0; i < count; i++) {
                    final double a = dst.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, dstOff + i * 8);
                    final double b = src.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, srcOff + i * 8);
                    dst.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, dstOff + i * 8, op.apply(a, b));
                }
            }
            case FLOAT16 -> {
                for (long i = 0; i < count; i++) {
                    final float a = Float.float16ToFloat(dst.get(ValueLayout.JAVA_SHORT_UNALIGNED, dstOff + i * 2));
                    final float b = Float.float16ToFloat(src.get(ValueLayout.JAVA_SHORT_UNALIGNED, srcOff + i * 2));
                    dst.set(ValueLayout.JAVA_SHORT_UNALIGNED, dstOff + i * 2, Float.floatToFloat16(f(op, a, b)));
                }
            }
            case BFLOAT16 -> {
                for (long i = 0; i < count; i++) {
                    final float a = Float.intBitsToFloat((dst.get(ValueLayout.JAVA_SHORT_UNALIGNED, dstOff + i * 2)
                        & 0xffff) << 16);
                    final float b = Float.intBitsToFloat((src.get(ValueLayout.JAVA_SHORT_UNALIGNED, srcOff + i * 2)
                        & 0xffff) << 16);
                    dst.set(ValueLayout.JAVA_SHORT_UNALIGNED, dstOff + i * 2, DataType.toBf16(f(op, a, b)));
                }
            }
            default -> throw new IllegalStateException(type.name());
        }
    }

    /** One float operation through RedOp's double one: rounding the exact double result once gives the float result. */
    private static float f(final RedOp op, final float a, final float b) {
        return (float) op.apply(a, b);
    }
}
