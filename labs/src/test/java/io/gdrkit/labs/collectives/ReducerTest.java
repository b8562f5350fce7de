/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.collectives;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The per-type, per-operation loops give, bit for bit, what the earlier per-element loop gave (each element through
 * RedOp's double arithmetic, rounded once to the type), for random bit patterns (NaNs, infinities, subnormals,
 * signed zeros included), at unaligned offsets, two-operand (dst = op(dst, src)) and three-operand
 * (out = op(a, b)), with the bytes around the output untouched.
 */
class ReducerTest {
    private static final int COUNT = 1031;

    /** The earlier kernel, element by element: the reference. */
    private static void reference(final MemorySegment out, final long oo, final MemorySegment a, final long ao,
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
                case FLOAT32 -> out.set(ValueLayout.JAVA_FLOAT_UNALIGNED, oo + i * 4, (float) op.apply(
                    a.get(ValueLayout.JAVA_FLOAT_UNALIGNED, ao + i * 4), b.get(ValueLayout.JAVA_FLOAT_UNALIGNED,
                        bo + i * 4)));
                case FLOAT64 -> out.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, oo + i * 8, op.apply(
                    a.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, ao + i * 8), b.get(ValueLayout.JAVA_DOUBLE_UNALIGNED,
                        bo + i * 8)));
                case FLOAT16 -> out.set(ValueLayout.JAVA_SHORT_UNALIGNED, oo + i * 2, Float.floatToFloat16((float)
                    op.apply(Float.float16ToFloat(a.get(ValueLayout.JAVA_SHORT_UNALIGNED, ao + i * 2)),
                        Float.float16ToFloat(b.get(ValueLayout.JAVA_SHORT_UNALIGNED, bo + i * 2)))));
                case BFLOAT16 -> out.set(ValueLayout.JAVA_SHORT_UNALIGNED, oo + i * 2, DataType.toBf16((float)
                    op.apply(bf(a.get(ValueLayout.JAVA_SHORT_UNALIGNED, ao + i * 2)),
                        bf(b.get(ValueLayout.JAVA_SHORT_UNALIGNED, bo + i * 2)))));
            }
        }
    }

    private static float bf(final short s) {
        return Float.intBitsToFloat((s & 0xffff) << 16);
    }

    private static MemorySegment random(final Arena a, final long bytes, final long seed) {
        final MemorySegment m = a.allocate(bytes, 64);
        final SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < bytes; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256));
        }
        return m;
    }

    /**
     * Equal bytes everywhere (the guard bytes around the output included), except that two NaNs of a float type in
     * the output's elements are equal whatever their payloads.
     */
    private static void assertSame(final MemorySegment want, final MemorySegment got, final long off,
                                   final DataType t, final String what) {
        final int es = t.size();
        for (long b = 0; b < want.byteSize(); b++) {
            final boolean inside = b >= off && b < off + (long) COUNT * es;
            if (inside) {
                final long e = (b - off) / es;
                final MemorySegment w = want.asSlice(off + e * es, es);
                final MemorySegment g = got.asSlice(off + e * es, es);
                if (Double.isNaN(t.get(w, 0)) && Double.isNaN(t.get(g, 0))) {
                    continue;
                }
            }
            assertEquals(want.get(ValueLayout.JAVA_BYTE, b), got.get(ValueLayout.JAVA_BYTE, b), what + ": byte " + b
                + (inside ? " (element " + (b - off) / es + ")" : " (outside the output)"));
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(DataType.class)
    void everyOperationMatchesTheElementByElementKernelBitForBit(final DataType t) {
        final int es = t.size();
        try (Arena arena = Arena.ofConfined()) {
            for (final RedOp op : RedOp.values()) {
                final long seed = 31L * t.ordinal() + op.ordinal();
                final MemorySegment a = random(arena, COUNT * es + 16, seed);
                final MemorySegment b = random(arena, COUNT * es + 16, seed + 1000);
                // three operands at odd offsets, the output framed by guard bytes
                final MemorySegment want = arena.allocate(COUNT * es + 16, 64).fill((byte) 0x33);
                final MemorySegment got = arena.allocate(COUNT * es + 16, 64).fill((byte) 0x33);
                reference(want, 3, a, 5, b, 7, COUNT, t, op);
                Reducer.reduce(got, 3, a, 5, b, 7, COUNT, t, op);
                assertSame(want, got, 3, t, t + " " + op + " out = op(a, b)");
                // two operands, in place: dst = op(dst, src)
                final MemorySegment dWant = arena.allocate(COUNT * es + 16, 64);
                final MemorySegment dGot = arena.allocate(COUNT * es + 16, 64);
                MemorySegment.copy(a, 0, dWant, 0, a.byteSize());
                MemorySegment.copy(a, 0, dGot, 0, a.byteSize());
                reference(dWant, 1, dWant, 1, b, 2, COUNT, t, op);
                Reducer.reduce(dGot, 1, b, 2, COUNT, t, op);
                assertSame(dWant, dGot, 1, t, t + " " + op + " dst = op(dst, src)");
            }
        }
    }
}
