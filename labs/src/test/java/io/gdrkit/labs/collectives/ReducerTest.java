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
 * The per-type, per-operation loops give, bit for bit, what the per-element loop gives (ReducerKernelTest.reference:
 * each element through float arithmetic, double for float64, rounded once to the type), for random bit patterns
 * (NaNs, infinities, subnormals, signed zeros included), at unaligned offsets, two-operand (dst = op(dst, src)) and three-operand
 * (out = op(a, b)), with the bytes around the output untouched.
 */
class ReducerTest {
    private static final int COUNT = 1031;

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
                ReducerKernelTest.reference(want, 3, a, 5, b, 7, COUNT, t, op);
                Reducer.reduce(got, 3, a, 5, b, 7, COUNT, t, op);
                assertSame(want, got, 3, t, t + " " + op + " out = op(a, b)");
                // two operands, in place: dst = op(dst, src)
                final MemorySegment dWant = arena.allocate(COUNT * es + 16, 64);
                final MemorySegment dGot = arena.allocate(COUNT * es + 16, 64);
                MemorySegment.copy(a, 0, dWant, 0, a.byteSize());
                MemorySegment.copy(a, 0, dGot, 0, a.byteSize());
                ReducerKernelTest.reference(dWant, 1, dWant, 1, b, 2, COUNT, t, op);
                Reducer.reduce(dGot, 1, b, 2, COUNT, t, op);
                assertSame(dWant, dGot, 1, t, t + " " + op + " dst = op(dst, src)");
            }
        }
    }
}
