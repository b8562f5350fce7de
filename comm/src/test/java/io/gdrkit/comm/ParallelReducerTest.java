/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link ParallelReducer} against the sequential {@link Reducer}, byte for byte, for every type and operation, with
 * seeded data full of special values ({@link ReducerKernelTest#fill}, and its one latitude: an element whose inputs
 * are both NaN, or a float16 NaN result, need only be a NaN): counts around the threshold and odd ones (no multiple
 * of P), P = 1..4, out distinct (framed by guard bytes), out == a, out == b. Then how the parts are cut, what runs
 * sequentially, a worker's failure and a stalled part as named errors, and close() ending every worker.
 */
class ParallelReducerTest {
    private static final long SEED = 0x9a4_11e1L;
    private static final long MIN = 4096;
    private static final long TIMEOUT = TimeUnit.SECONDS.toNanos(30);

    private static long[] counts(final DataType t) {
        final long k = MIN / t.size();
        return new long[] {k - 1, k, k + 1, k + 3, 2 * k + 5, 3 * k + 7, 5 * k + 11};
    }

    private static MemorySegment copy(final Arena arena, final MemorySegment m) {
        final MemorySegment c = arena.allocate(m.byteSize(), 64);
        MemorySegment.copy(m, 0, c, 0, m.byteSize());
        return c;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(DataType.class)
    void everyTypeOperationAndPartCountMatchesTheSequentialReducerByteForByte(final DataType t) {
        final SplittableRandom r = new SplittableRandom(SEED + t.ordinal());
        final int es = t.size();
        int cases = 0;
        try (Arena arena = Arena.ofShared()) {
            for (int p = 1; p <= 4; p++) {
                try (ParallelReducer pr = new ParallelReducer(p, MIN, TIMEOUT, "test-red")) {
                    for (final RedOp op : RedOp.values()) {
                        for (final long n : counts(t)) {
                            // offsets that are no multiple of a cache line (nor, but for int8, of the element)
                            final long ao = 1 + r.nextInt(63);
                            final long bo = 1 + r.nextInt(63);
                            final long oo = 1 + r.nextInt(63);
                            final long size = n * es + 128;
                            final MemorySegment a = ReducerKernelTest.fill(arena.allocate(size, 64), t, r);
                            final MemorySegment b = ReducerKernelTest.fill(arena.allocate(size, 64), t, r);
                            final MemorySegment aBefore = copy(arena, a);
                            final MemorySegment bBefore = copy(arena, b);
                            final String what = t + " " + op + " count " + n + " P " + p;

                            final MemorySegment want = arena.allocate(size, 64).fill((byte) 0x5a);
                            final MemorySegment got = arena.allocate(size, 64).fill((byte) 0x5a);
                            Reducer.reduce(want, oo, a, ao, b, bo, n, t, op);
                            pr.reduce(got, oo, a, ao, b, bo, n, t, op);
                            ReducerKernelTest.assertBytes(want, got, oo, a, ao, b, bo, n, t, op,
                                what + ", out distinct");
                            assertEquals(-1, a.mismatch(aBefore), what + ": input a written");
                            assertEquals(-1, b.mismatch(bBefore), what + ": input b written");

                            // in place: out == a (dst = op(dst, src)), and out == b
                            final MemorySegment wantA = copy(arena, a);
                            final MemorySegment gotA = copy(arena, a);
                            Reducer.reduce(wantA, ao, b, bo, n, t, op);
                            pr.reduce(gotA, ao, gotA, ao, b, bo, n, t, op);
                            ReducerKernelTest.assertBytes(wantA, gotA, ao, a, ao, b, bo, n, t, op, what + ", out == a");
                            final MemorySegment wantB = copy(arena, b);
                            final MemorySegment gotB = copy(arena, b);
                            Reducer.reduce(wantB, bo, a, ao, wantB, bo, n, t, op);
                            pr.reduce(gotB, bo, a, ao, gotB, bo, n, t, op);
                            ReducerKernelTest.assertBytes(wantB, gotB, bo, a, ao, b, bo, n, t, op, what + ", out == b");
                            cases++;
                        }
                    }
                    assertEquals(p == 1 ? 0 : p - 1, pr.workerThreads().length, "P " + p + ": workers started");
                }
            }
        }
        assertEquals(4 * RedOp.values().length * counts(t).length, cases);
    }

    /** One part as the kernel saw it. */
    private record Part(String thread, long outOff, long aOff, long bOff, long count) {
    }

    private static ParallelReducer recording(final int p, final List<Part> seen) {
        return new ParallelReducer(p, MIN, TIMEOUT, "test-rec", (o, oo, a, ao, b, bo, n, t, op) -> {
            seen.add(new Part(Thread.currentThread().getName(), oo, ao, bo, n));
            Reducer.reduce(o, oo, a, ao, b, bo, n, t, op);
        });
    }

    @Test
    void partsCoverTheRangeOnceCutOnCacheLinesOneOnTheCaller() {
        final List<Part> seen = Collections.synchronizedList(new ArrayList<>());
        try (Arena arena = Arena.ofShared(); ParallelReducer pr = recording(3, seen)) {
            final MemorySegment a = arena.allocate(1 << 16, 64);
            final MemorySegment b = arena.allocate(1 << 16, 64);
            final MemorySegment o = arena.allocate(1 << 16, 64);
            final long n = 3001; // float32: 12004 bytes, no multiple of 3 elements
            pr.reduce(o, 12, a, 4, b, 8, n, DataType.FLOAT32, RedOp.SUM);
            assertEquals(3, seen.size(), seen.toString());
            final List<Part> parts = new ArrayList<>(seen);
            parts.sort((x, y) -> Long.compare(x.outOff(), y.outOff()));
            assertEquals(Thread.currentThread().getName(), parts.get(0).thread(), "part 0 runs on the caller");
            assertEquals(12, parts.get(0).outOff());
            long next = 12;
            long total = 0;
            for (int k = 0; k < 3; k++) {
                final Part x = parts.get(k);
                assertEquals(next, x.outOff(), "parts are contiguous: " + parts);
                assertEquals(x.outOff() - 12 + 4, x.aOff(), "a's part is out's elements");
                assertEquals(x.outOff() - 12 + 8, x.bOff(), "b's part is out's elements");
                if (k > 0) {
                    assertEquals("test-rec-" + k, x.thread());
                    assertEquals(0, (o.address() + x.outOff()) % 64, "inner cut " + k + " on a cache line: " + parts);
                }
                next = x.outOff() + x.count() * 4;
                total += x.count();
            }
            assertEquals(n, total);
        }
    }

    @Test
    void smallShiftedConfinedOrHeapReductionsRunSequentiallyOnTheCaller() {
        final List<Part> seen = Collections.synchronizedList(new ArrayList<>());
        final String me = Thread.currentThread().getName();
        final SplittableRandom r = new SplittableRandom(SEED);
        try (Arena arena = Arena.ofShared(); ParallelReducer pr = recording(4, seen)) {
            final long n = MIN / 4 * 3;
            final MemorySegment a = ReducerKernelTest.fill(arena.allocate(n * 4 + 64, 64), DataType.INT32, r);
            final MemorySegment b = ReducerKernelTest.fill(arena.allocate(n * 4 + 64, 64), DataType.INT32, r);

            pr.reduce(copy(arena, a), 0, a, 0, b, 0, MIN / 4 - 1, DataType.INT32, RedOp.SUM); // below the threshold
            assertEquals(List.of(new Part(me, 0, 0, 0, MIN / 4 - 1)), seen);
            seen.clear();

            // out one element ahead of a in the same memory: the sequential loop feeds its results forward
            final MemorySegment want = copy(arena, a);
            final MemorySegment got = copy(arena, a);
            Reducer.reduce(want, 4, want, 0, b, 0, n, DataType.INT32, RedOp.SUM);
            pr.reduce(got, 4, got, 0, b, 0, n, DataType.INT32, RedOp.SUM);
            assertEquals(-1, want.mismatch(got), "shifted out");
            assertEquals(1, seen.size(), "shifted out runs in one piece: " + seen);
            seen.clear();

            try (Arena confined = Arena.ofConfined()) {
                final MemorySegment c = confined.allocate(n * 4 + 64, 64);
                final MemorySegment cw = confined.allocate(n * 4 + 64, 64);
                Reducer.reduce(cw, 0, a, 0, b, 0, n, DataType.INT32, RedOp.MAX);
                pr.reduce(c, 0, a, 0, b, 0, n, DataType.INT32, RedOp.MAX);
                assertEquals(-1, cw.mismatch(c), "confined out");
                assertEquals(List.of(new Part(me, 0, 0, 0, n)), seen, "a worker may not touch a confined segment");
            }
            seen.clear();

            final MemorySegment heap = MemorySegment.ofArray(new byte[(int) (n * 4)]);
            pr.reduce(heap, 0, a, 0, b, 0, n, DataType.INT32, RedOp.MIN);
            assertEquals(List.of(new Part(me, 0, 0, 0, n)), seen, "heap segments run sequentially");
            for (long i = 0; i < n; i++) {
                assertEquals(Math.min(a.getAtIndex(ValueLayout.JAVA_INT, i), b.getAtIndex(ValueLayout.JAVA_INT, i)),
                    heap.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i), "heap element " + i);
            }
        }
    }

    /** Waits until every worker of {@code pr} is parked (they park after spinning SPIN_NANOS without a part). */
    private static void awaitAllParked(final ParallelReducer pr) {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!pr.allParked()) {
            assertTrue(System.nanoTime() < deadline, "the workers did not park within 20 s");
            LockSupport.parkNanos(ParallelReducer.SPIN_NANOS);
        }
    }

    @Test
    void aSmallReductionThatFindsTheWorkersColdRunsAloneAndWakesThemOnlyInAStream() {
        final List<Part> seen = Collections.synchronizedList(new ArrayList<>());
        final SplittableRandom r = new SplittableRandom(SEED + 11);
        final java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
        final long n = 6000; // 24000 bytes of int32 (integers: exact, no NaN payloads to tell apart)
        try (Arena arena = Arena.ofShared();
             ParallelReducer pr = new ParallelReducer(3, MIN, 64 << 10, TIMEOUT, "test-cold",
                 (o, oo, a, ao, b, bo, c, t, op) -> {
                     seen.add(new Part(Thread.currentThread().getName(), oo, ao, bo, c));
                     Reducer.reduce(o, oo, a, ao, b, bo, c, t, op);
                 }, now::get)) {
            final MemorySegment a = ReducerKernelTest.fill(arena.allocate(n * 4), DataType.INT32, r);
            final MemorySegment b = ReducerKernelTest.fill(arena.allocate(n * 4), DataType.INT32, r);
            final MemorySegment want = arena.allocate(n * 4);
            Reducer.reduce(want, 0, a, 0, b, 0, n, DataType.INT32, RedOp.SUM);
            final List<Part> alone = List.of(new Part(Thread.currentThread().getName(), 0, 0, 0, n));
            // no worker started yet: this one runs here, whole, and starts them
            final MemorySegment first = arena.allocate(n * 4);
            pr.reduce(first, 0, a, 0, b, 0, n, DataType.INT32, RedOp.SUM);
            assertEquals(-1, want.mismatch(first));
            assertEquals(alone, seen);
            assertEquals(1, pr.coldAlone());
            assertEquals(2, pr.workerThreads().length, "the workers were started for the next one");
            for (int round = 0; round < 3; round++) {
                awaitAllParked(pr);
                // an isolated reduction (a second after the last): alone, and the workers are left parked
                now.addAndGet(1_000_000_000L);
                seen.clear();
                final MemorySegment got = arena.allocate(n * 4);
                pr.reduce(got, 0, a, 0, b, 0, n, DataType.INT32, RedOp.SUM);
                assertEquals(-1, want.mismatch(got), "round " + round);
                assertEquals(alone, seen, "round " + round);
                assertEquals(2 + 2 * round, pr.coldAlone());
                assertEquals(round, pr.wakes(), "round " + round + ": an isolated one wakes nobody");
                // the next within the spin time: still alone (they are parked), and now they are woken
                now.addAndGet(ParallelReducer.SPIN_NANOS / 2);
                seen.clear();
                final MemorySegment again = arena.allocate(n * 4);
                pr.reduce(again, 0, a, 0, b, 0, n, DataType.INT32, RedOp.SUM);
                assertEquals(-1, want.mismatch(again), "round " + round + ", again");
                assertEquals(alone, seen, "round " + round + ", again");
                assertEquals(3 + 2 * round, pr.coldAlone());
                assertEquals(round + 1, pr.wakes(), "round " + round + ": a stream is starting");
                // a reduction above the threshold is split even when they are parked (they are waited for)
                awaitAllParked(pr);
                seen.clear();
                final long big = (64 << 10) / 4 + 1; // just over the 64 KiB threshold, int32
                final MemorySegment ba = ReducerKernelTest.fill(arena.allocate(big * 4), DataType.INT32, r);
                final MemorySegment bb = ReducerKernelTest.fill(arena.allocate(big * 4), DataType.INT32, r);
                final MemorySegment bw = arena.allocate(big * 4);
                final MemorySegment bg = arena.allocate(big * 4);
                Reducer.reduce(bw, 0, ba, 0, bb, 0, big, DataType.INT32, RedOp.SUM);
                now.addAndGet(1_000_000_000L);
                pr.reduce(bg, 0, ba, 0, bb, 0, big, DataType.INT32, RedOp.SUM);
                assertEquals(-1, bw.mismatch(bg), "round " + round + ", 64 KiB");
                assertEquals(3, seen.size(), "round " + round + ": 64 KiB is split: " + seen);
                assertEquals(3 + 2 * round, pr.coldAlone());
            }
        }
        assertThrows(IllegalArgumentException.class, () -> new ParallelReducer(2, MIN, -1, TIMEOUT, "x"));
    }

    @Test
    void aWokenWorkerSpinsAgainBeforeItParks() {
        final SplittableRandom r = new SplittableRandom(SEED + 12);
        final java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
        final long n = 6000;
        try (Arena arena = Arena.ofShared(); ParallelReducer pr = new ParallelReducer(2, MIN, 64 << 10, TIMEOUT,
            "test-wake", Reducer::reduce, now::get)) {
            final MemorySegment a = ReducerKernelTest.fill(arena.allocate(n * 4), DataType.INT32, r);
            final MemorySegment b = ReducerKernelTest.fill(arena.allocate(n * 4), DataType.INT32, r);
            final MemorySegment got = arena.allocate(n * 4);
            pr.reduce(got, 0, a, 0, b, 0, n, DataType.INT32, RedOp.SUM); // starts the worker
            awaitAllParked(pr);
            now.addAndGet(1_000_000_000L);
            pr.reduce(got, 0, a, 0, b, 0, n, DataType.INT32, RedOp.SUM); // isolated: alone
            now.addAndGet(1_000);
            pr.reduce(got, 0, a, 0, b, 0, n, DataType.INT32, RedOp.SUM); // within the spin time: wakes it
            assertEquals(3, pr.coldAlone());
            assertEquals(1, pr.wakes());
            // woken without a part, it spins again (SPIN_NANOS) and then parks once more, never stays awake
            awaitAllParked(pr);
        }
    }

    @Test
    void aWorkerThatParkedTakesTheNextPart() {
        final SplittableRandom r = new SplittableRandom(SEED + 7);
        try (Arena arena = Arena.ofShared(); ParallelReducer pr = new ParallelReducer(2, MIN, TIMEOUT, "test-park")) {
            final long n = 10_000;
            for (int round = 0; round < 5; round++) {
                final MemorySegment a = ReducerKernelTest.fill(arena.allocate(n * 8), DataType.INT64, r);
                final MemorySegment b = ReducerKernelTest.fill(arena.allocate(n * 8), DataType.INT64, r);
                final MemorySegment want = arena.allocate(n * 8);
                final MemorySegment got = arena.allocate(n * 8);
                Reducer.reduce(want, 0, a, 0, b, 0, n, DataType.INT64, RedOp.PROD);
                pr.reduce(got, 0, a, 0, b, 0, n, DataType.INT64, RedOp.PROD);
                assertEquals(-1, want.mismatch(got), "round " + round);
                // well past the worker's spin: it parks, and the next part must unpark it
                LockSupport.parkNanos(20 * ParallelReducer.SPIN_NANOS);
            }
        }
    }

    @Test
    void aWorkersFailureIsTheReductionsNamedErrorAndTheReducerGoesOn() {
        final RuntimeException boom = new IllegalStateException("boom in a worker");
        final boolean[] fail = {true};
        try (Arena arena = Arena.ofShared(); ParallelReducer pr = new ParallelReducer(3, MIN, TIMEOUT, "test-fail",
            (o, oo, a, ao, b, bo, n, t, op) -> {
                if (fail[0] && Thread.currentThread().getName().equals("test-fail-2")) {
                    throw boom;
                }
                Reducer.reduce(o, oo, a, ao, b, bo, n, t, op);
            })) {
            final long n = 4000;
            final MemorySegment a = arena.allocate(n * 4).fill((byte) 1);
            final MemorySegment b = arena.allocate(n * 4).fill((byte) 2);
            final MemorySegment o = arena.allocate(n * 4);
            final CollException e = assertThrows(CollException.class,
                () -> pr.reduce(o, 0, a, 0, b, 0, n, DataType.INT32, RedOp.SUM));
            assertSame(boom, e.getCause());
            assertTrue(e.getMessage().startsWith("parallel reduction: part 2 of 3 (elements "), e.getMessage());
            assertTrue(e.getMessage().contains("of 4000, INT32 SUM) failed on test-fail-2: "
                + "java.lang.IllegalStateException: boom in a worker"), e.getMessage());
            // the failure is reported once; the next reduction runs whole
            fail[0] = false;
            pr.reduce(o, 0, a, 0, b, 0, n, DataType.INT32, RedOp.SUM);
            for (long i = 0; i < n; i++) {
                assertEquals(0x03030303, o.getAtIndex(ValueLayout.JAVA_INT, i), "element " + i);
            }
        }
    }

    @Test
    void theCallersOwnFailureIsRethrownAsItIsAfterTheWorkersFinish() {
        final RuntimeException boom = new IndexOutOfBoundsException("boom on the caller");
        final Thread caller = Thread.currentThread();
        final int[] workerParts = {0};
        try (Arena arena = Arena.ofShared(); ParallelReducer pr = new ParallelReducer(2, MIN, TIMEOUT, "test-own",
            (o, oo, a, ao, b, bo, n, t, op) -> {
                if (Thread.currentThread() == caller) {
                    throw boom;
                }
                LockSupport.parkNanos(5_000_000); // still writing when the caller fails
                Reducer.reduce(o, oo, a, ao, b, bo, n, t, op);
                synchronized (workerParts) {
                    workerParts[0]++;
                }
            })) {
            final long n = 4000;
            final MemorySegment a = arena.allocate(n * 4).fill((byte) 1);
            final MemorySegment o = arena.allocate(n * 4);
            assertSame(boom, assertThrows(IndexOutOfBoundsException.class,
                () -> pr.reduce(o, 0, a, 0, a, 0, n, DataType.INT32, RedOp.SUM)));
            synchronized (workerParts) {
                assertEquals(1, workerParts[0], "the caller returned before its worker's part was done");
            }
        }
    }

    @Test
    void aStalledPartIsANamedTimeoutAndTheReducerRefusesMore() throws Exception {
        final CountDownLatch release = new CountDownLatch(1);
        final ParallelReducer pr = new ParallelReducer(2, MIN, TimeUnit.MILLISECONDS.toNanos(300), "test-stall",
            (o, oo, a, ao, b, bo, n, t, op) -> {
                if (Thread.currentThread().getName().startsWith("test-stall")) {
                    try {
                        release.await(60, TimeUnit.SECONDS);
                    } catch (final InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                Reducer.reduce(o, oo, a, ao, b, bo, n, t, op);
            });
        try (Arena arena = Arena.ofShared()) {
            final long n = 4000;
            final MemorySegment a = arena.allocate(n * 2);
            final MemorySegment o = arena.allocate(n * 2);
            final CollException e = assertThrows(CollException.class,
                () -> pr.reduce(o, 0, a, 0, a, 0, n, DataType.BFLOAT16, RedOp.MAX));
            assertTrue(e.getMessage().matches("parallel reduction: part 1 of 2 \\(elements \\d+\\.\\.4000 of 4000, "
                + "BFLOAT16 MAX\\) on test-stall-1 not done after 300 ms \\(gdrkit.coll.timeout.ms\\); this reducer "
                + "takes no more work"), e.getMessage());
            final CollException again = assertThrows(CollException.class,
                () -> pr.reduce(o, 0, a, 0, a, 0, n, DataType.BFLOAT16, RedOp.MAX));
            assertEquals(e.getMessage(), again.getMessage());
            release.countDown();
        } finally {
            pr.close();
        }
        for (final Thread t : pr.workerThreads()) {
            assertFalse(t.isAlive(), t.getName() + " outlived close()");
        }
    }

    @Test
    void closeEndsEveryWorkerAndLargeReductionsAreRefusedAfter() {
        final ParallelReducer pr = new ParallelReducer(4, MIN, TIMEOUT, "test-close");
        assertEquals(0, pr.workerThreads().length, "workers start with the first split reduction");
        try (Arena arena = Arena.ofShared()) {
            final long n = 4096;
            final MemorySegment a = arena.allocate(n * 8).fill((byte) 3);
            final MemorySegment o = arena.allocate(n * 8);
            pr.reduce(o, 0, a, 0, a, 0, n, DataType.FLOAT64, RedOp.SUM);
            final Thread[] workers = pr.workerThreads();
            assertEquals(3, workers.length);
            for (final Thread t : workers) {
                assertTrue(t.isDaemon(), t.getName());
                assertTrue(t.getName().startsWith("test-close-"), t.getName());
            }
            pr.close();
            pr.close(); // twice is once
            for (final Thread t : workers) {
                assertFalse(t.isAlive(), t.getName() + " outlived close()");
            }
            for (final Thread t : Thread.getAllStackTraces().keySet()) {
                assertFalse(t.getName().startsWith("test-close-"), t.getName() + " is still there");
            }
            final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> pr.reduce(o, 0, a, 0, a, 0, n, DataType.FLOAT64, RedOp.SUM));
            assertEquals("the parallel reducer test-close is closed", e.getMessage());
            // below the threshold nothing needs a worker
            pr.reduce(o, 0, a, 0, a, 0, 3, DataType.FLOAT64, RedOp.SUM);
            assertEquals(2 * Double.longBitsToDouble(0x0303030303030303L), o.getAtIndex(ValueLayout.JAVA_DOUBLE, 0));
        }
        // a reducer never used has no thread to end
        new ParallelReducer(4, MIN, TIMEOUT, "test-unused").close();
    }

    @Test
    void nonsenseArgumentsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ParallelReducer(0, MIN, TIMEOUT, "x"));
        assertThrows(IllegalArgumentException.class, () -> new ParallelReducer(65, MIN, TIMEOUT, "x"));
        assertThrows(IllegalArgumentException.class, () -> new ParallelReducer(2, -1, TIMEOUT, "x"));
        assertThrows(IllegalArgumentException.class, () -> new ParallelReducer(2, MIN, 0, "x"));
    }
}
