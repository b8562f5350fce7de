/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;
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

    /**
     * Native operands run the kernels at absolute addresses (one segment for every caller); the checks the
     * segments' own accesses made are then made once, before anything is written: bounds, a read-only output, a
     * closed arena, another thread's confined segment. Nothing of the output changes when a check fails.
     */
    @ParameterizedTest(name = "{0} floats")
    @org.junit.jupiter.params.provider.ValueSource(ints = {4, Reducer.FEW, 1000})
    void nativeOperandsAreCheckedAsTheSegmentsWouldBeBeforeAnythingIsWritten(final int n) throws Exception {
        final int bytes = n * 4;
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment a = random(arena, bytes, 1);
            final MemorySegment b = random(arena, bytes, 2);
            final MemorySegment out = arena.allocate(bytes, 64).fill((byte) 0x44);
            // n floats from offset 4 need 4 bytes more than each segment has: the input, the other, the output
            assertThrows(IndexOutOfBoundsException.class,
                () -> Reducer.reduce(out, 0, a, 4, b, 0, n, DataType.FLOAT32, RedOp.SUM));
            assertThrows(IndexOutOfBoundsException.class,
                () -> Reducer.reduce(out, 0, a, 0, b, 4, n, DataType.FLOAT32, RedOp.SUM));
            assertThrows(IndexOutOfBoundsException.class,
                () -> Reducer.reduce(out, 4, a, 0, b, 0, n, DataType.FLOAT32, RedOp.SUM));
            assertThrows(IndexOutOfBoundsException.class,
                () -> Reducer.reduce(out, -1, a, 0, b, 0, 1, DataType.FLOAT32, RedOp.SUM));
            assertThrows(IllegalArgumentException.class,
                () -> Reducer.reduce(out.asReadOnly(), 0, a, 0, b, 0, n, DataType.FLOAT32, RedOp.SUM));
            final Throwable other = assertThrows(ExecutionException.class, () -> CompletableFuture.runAsync(
                () -> Reducer.reduce(out, 0, a, 0, b, 0, n, DataType.FLOAT32, RedOp.SUM)).get());
            assertTrue(other.getCause() instanceof WrongThreadException, other.getCause().toString());
            for (long i = 0; i < bytes; i++) {
                assertEquals((byte) 0x44, out.get(ValueLayout.JAVA_BYTE, i), "output byte " + i);
            }
            // no elements: nothing is read or written (and no range is checked: there is none)
            Reducer.reduce(out, bytes, a, bytes, b, bytes, 0, DataType.FLOAT64, RedOp.MAX);
            assertEquals((byte) 0x44, out.get(ValueLayout.JAVA_BYTE, bytes - 1));
            // and the same call within bounds reduces
            Reducer.reduce(out, 0, a, 0, b, 0, n, DataType.FLOAT32, RedOp.SUM);
            final int last = (n - 1) * 4;
            assertEquals(Float.floatToRawIntBits(a.get(ValueLayout.JAVA_FLOAT_UNALIGNED, last)
                + b.get(ValueLayout.JAVA_FLOAT_UNALIGNED, last)), Float.floatToRawIntBits(
                out.get(ValueLayout.JAVA_FLOAT_UNALIGNED, last)), "the last element");
        }
        final Arena closed = Arena.ofShared();
        final MemorySegment gone = closed.allocate(64);
        closed.close();
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment out = arena.allocate(64).fill((byte) 0x55);
            assertThrows(IllegalStateException.class,
                () -> Reducer.reduce(out, 0, gone, 0, out, 0, 16, DataType.INT32, RedOp.SUM));
            assertEquals((byte) 0x55, out.get(ValueLayout.JAVA_BYTE, 0));
        }
    }

    /**
     * A heap operand takes the segments' own path, a count below {@link Reducer#FEW} the per-element one; the bits
     * are those of native memory's bulk loops.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(DataType.class)
    void heapAndNativeOperandsGiveTheSameBits(final DataType t) {
        try (Arena arena = Arena.ofConfined()) {
            for (final int count : new int[] {COUNT, Reducer.FEW - 1}) {
                final int bytes = count * t.size();
                final MemorySegment a = random(arena, bytes, 7 + t.ordinal());
                final MemorySegment b = random(arena, bytes, 70 + t.ordinal());
                final MemorySegment heapA = MemorySegment.ofArray(new byte[bytes]).copyFrom(a);
                final MemorySegment onHeap = MemorySegment.ofArray(new byte[bytes]);
                final MemorySegment nat = arena.allocate(bytes);
                Reducer.reduce(onHeap, 0, heapA, 0, b, 0, count, t, RedOp.PROD);
                Reducer.reduce(nat, 0, a, 0, b, 0, count, t, RedOp.PROD);
                final MemorySegment want = arena.allocate(bytes);
                ReducerKernelTest.reference(want, 0, a, 0, b, 0, count, t, RedOp.PROD);
                assertSame(want, nat, 0, t, t + " native, " + count);
                assertSame(want, arena.allocate(bytes).copyFrom(onHeap), 0, t, t + " heap, " + count);
            }
        }
    }
}
