/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link CopyEngines}: a split read is byte-exact and covers its range exactly once, answers what one read of the
 * whole range answers (short reads, EFAULT, ESRCH in any part), names a worker that does not finish, reads a
 * thread-confined destination whole, and its threads end at close.
 */
class CopyEnginesTest {
    private static final long ME = ProcessHandle.current().pid();
    private static final long TIMEOUT = TimeUnit.SECONDS.toNanos(10);

    private static void fill(final MemorySegment seg, final long seed) {
        final Random r = new Random(seed);
        for (long i = 0; i < seg.byteSize(); i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    /** process_vm_readv of this process, recording each range read (from any thread). */
    private static final class Recording implements RemoteMemoryReader {
        final RemoteMemoryReader real = RemoteMemoryReader.processVmReadv();
        final List<long[]> ranges = Collections.synchronizedList(new ArrayList<>());

        @Override
        public long read(final long pid, final MemorySegment dst, final long dstOffset, final long remote,
                         final long length) {
            ranges.add(new long[] {remote, length, dstOffset});
            return real.read(pid, dst, dstOffset, remote, length);
        }
    }

    @Test
    void splitReadsAreByteExactAndCoverTheRangeOnce() {
        final Random rnd = new Random(20261201L);
        try (Arena arena = Arena.ofShared()) {
            final MemorySegment src = arena.allocate(3 << 20, 4096);
            final MemorySegment dst = arena.allocate(3 << 20, 4096);
            fill(src, 7);
            for (final int k : new int[] {1, 2, 4}) {
                try (CopyEngines e = new CopyEngines(k, 4096, TIMEOUT, "t" + k)) {
                    final Recording rec = new Recording();
                    int splits = 0;
                    for (int round = 0; round < 40; round++) {
                        // odd sizes and offsets: parts are not multiples of pages, nor page aligned
                        final int length = round == 0 ? 4096 : 4096 + rnd.nextInt((2 << 20) - 4096);
                        final int from = rnd.nextInt(4096) + (round % 3) * 4096;
                        final int to = rnd.nextInt(4096);
                        dst.fill((byte) 0);
                        rec.ranges.clear();
                        final long n = e.read(rec, ME, dst, to, src.address() + from, length);
                        assertEquals(length, n, "k " + k + ", round " + round);
                        final long mismatch = src.asSlice(from, length).mismatch(dst.asSlice(to, length));
                        assertEquals(-1, mismatch, "k " + k + " round " + round + ": first differing byte");
                        assertEquals(0, dst.get(ValueLayout.JAVA_BYTE, to + length), "nothing past the range");
                        if (to > 0) {
                            assertEquals(0, dst.get(ValueLayout.JAVA_BYTE, to - 1), "nothing before the range");
                        }
                        assertCovered(rec.ranges, src.address() + from, to, length);
                        final int parts = k == 1 ? 1 : Math.min(k, length / 4096);
                        assertEquals(parts, rec.ranges.size(),
                            "parts of a read of " + length + " bytes with " + k + " engines");
                        splits += parts > 1 ? 1 : 0;
                    }
                    assertEquals(k == 1 ? 0 : 39, splits, "every read but the first (one page) is split");
                    assertEquals(splits, e.splitReads());
                }
            }
        }
    }

    /** The recorded parts tile [remote, remote + length) exactly, each landing at its own offset of dst. */
    private static void assertCovered(final List<long[]> ranges, final long remote, final long dstOffset,
                                      final long length) {
        final List<long[]> sorted = new ArrayList<>(ranges);
        sorted.sort((x, y) -> Long.compare(x[0], y[0]));
        long at = remote;
        for (final long[] r : sorted) {
            assertEquals(at, r[0], "parts tile the range without gap or overlap");
            assertEquals(dstOffset + (r[0] - remote), r[2], "a part lands at its own offset");
            assertTrue(r[1] > 0, "no empty part is read");
            at += r[1];
        }
        assertEquals(remote + length, at, "parts end where the range does");
    }

    @Test
    void belowTheThresholdAReadIsOneRead() {
        try (Arena arena = Arena.ofShared(); CopyEngines e = new CopyEngines(4, 65536, TIMEOUT, "below")) {
            final MemorySegment src = arena.allocate(65536);
            final MemorySegment dst = arena.allocate(65536);
            fill(src, 3);
            final Recording rec = new Recording();
            assertEquals(65535, e.read(rec, ME, dst, 0, src.address(), 65535));
            assertEquals(1, rec.ranges.size());
            assertEquals(-1, src.asSlice(0, 65535).mismatch(dst.asSlice(0, 65535)));
            assertEquals(0, e.splitReads());
        }
    }

    /**
     * A model of a sender's memory: [base, base + readable) reads, the rest faults, as the kernel answers one read
     * (the bytes up to the fault, or EFAULT when none); and a process that is gone for reads touching [gone, end).
     */
    private record Model(long base, long readable, long goneFrom) implements RemoteMemoryReader {
        @Override
        public long read(final long pid, final MemorySegment dst, final long dstOffset, final long remote,
                         final long length) {
            if (goneFrom >= 0 && remote + length > base + goneFrom) {
                return -ESRCH;
            }
            final long ok = Math.max(0, Math.min(length, base + readable - remote));
            if (ok == 0) {
                return -EFAULT;
            }
            dst.asSlice(dstOffset, ok).fill((byte) 1);
            return ok;
        }
    }

    @Test
    void aSplitReadAnswersWhatOneReadWould() {
        final Random rnd = new Random(99);
        try (Arena arena = Arena.ofShared()) {
            final MemorySegment dst = arena.allocate(1 << 20);
            final long base = 0x7000_0000_0000L;
            for (final int k : new int[] {2, 3, 4}) {
                try (CopyEngines e = new CopyEngines(k, 4096, TIMEOUT, "model" + k)) {
                    for (int round = 0; round < 200; round++) {
                        final int length = 4096 + rnd.nextInt(900_000);
                        final long start = rnd.nextInt(1000);
                        // a fault before, inside any part of, or past the range; sometimes a dead process
                        final long readable = rnd.nextInt(length + 2000);
                        final long gone = round % 5 == 0 ? start + rnd.nextInt(length) : -1;
                        final Model m = new Model(base, readable, gone);
                        final long one = m.read(ME, dst, 0, base + start, length);
                        final long split = e.read(m, ME, dst, 0, base + start, length);
                        assertEquals(one, split, () -> "k " + k + ", " + length + " bytes from +" + start
                            + ", readable " + readable + ", gone from " + gone);
                    }
                }
            }
        }
    }

    @Test
    void aWorkerThatDoesNotFinishIsANamedTimeoutAndLaterReadsAreWhole() throws Exception {
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicInteger inWorkers = new AtomicInteger();
        final Thread caller = Thread.currentThread();
        final RemoteMemoryReader stuck = (pid, dst, off, remote, len) -> {
            if (Thread.currentThread() != caller) {
                inWorkers.incrementAndGet();
                try {
                    release.await(20, TimeUnit.SECONDS);
                } catch (final InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
                return len;
            }
            // the caller's own part: wait until a worker holds its part, so there is one to time out on
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (inWorkers.get() == 0) {
                if (System.nanoTime() > deadline) {
                    fail("no worker took a part within 20 s");
                }
                Thread.onSpinWait();
            }
            return len;
        };
        try (Arena arena = Arena.ofShared();
             CopyEngines e = new CopyEngines(2, 4096, TimeUnit.MILLISECONDS.toNanos(200), "stuck")) {
            final MemorySegment dst = arena.allocate(1 << 16);
            assertEquals(CopyEngines.TIMED_OUT, e.read(stuck, ME, dst, 0, 0x1000_0000L, 1 << 16));
            assertTrue(e.timeoutError().startsWith("copy engine 1 of stuck did not finish its part of a "
                + "process_vm_readv (32768 bytes at 0x10008000 of process " + ME + ") within 200 ms"),
                e::timeoutError);
            release.countDown();
            final Recording rec = new Recording();
            final MemorySegment src = arena.allocate(1 << 16);
            fill(src, 5);
            assertEquals(1 << 16, e.read(rec, ME, dst, 0, src.address(), 1 << 16));
            assertEquals(1, rec.ranges.size(), "after a timeout, one thread reads");
            assertEquals(-1, src.mismatch(dst));
        }
    }

    /**
     * A reader that throws in one part (process_vm_readv's binding does only if the downcall itself breaks): the caller
     * rethrows that exception once every part is in, as one read would have thrown it, and the next read is split and
     * byte-exact again (no part left behind).
     */
    @Test
    void aReaderThatThrowsInOnePartThrowsFromTheReadAndLeavesNoPartBehind() {
        try (Arena arena = Arena.ofShared(); CopyEngines e = new CopyEngines(4, 4096, TIMEOUT, "throws")) {
            final MemorySegment src = arena.allocate(1 << 20, 4096);
            final MemorySegment dst = arena.allocate(1 << 20, 4096);
            fill(src, 17);
            final RemoteMemoryReader real = RemoteMemoryReader.processVmReadv();
            final long bad = src.address() + (600 << 10);
            final IllegalStateException boom = new IllegalStateException("process_vm_readv downcall failed: test");
            final RemoteMemoryReader r = (pid, d, off, remote, len) -> {
                if (remote <= bad && bad < remote + len) {
                    throw boom;
                }
                return real.read(pid, d, off, remote, len);
            };
            for (int round = 0; round < 20; round++) {
                final IllegalStateException x = assertThrows(IllegalStateException.class,
                    () -> e.read(r, ME, dst, 0, src.address(), 1 << 20));
                assertEquals(boom, x);
                dst.fill((byte) 0);
                final Recording rec = new Recording();
                assertEquals(1 << 20, e.read(rec, ME, dst, 0, src.address(), 1 << 20));
                assertEquals(4, rec.ranges.size(), "split again");
                assertEquals(-1, src.mismatch(dst), "round " + round);
            }
        }
    }

    @Test
    void aConfinedDestinationIsReadWholeByTheCaller() {
        try (Arena confined = Arena.ofConfined(); CopyEngines e = new CopyEngines(4, 4096, TIMEOUT, "confined")) {
            final MemorySegment src = confined.allocate(1 << 18);
            final MemorySegment dst = confined.allocate(1 << 18);
            fill(src, 11);
            final Thread caller = Thread.currentThread();
            final List<Thread> readers = Collections.synchronizedList(new ArrayList<>());
            final RemoteMemoryReader real = RemoteMemoryReader.processVmReadv();
            final RemoteMemoryReader r = (pid, d, off, remote, len) -> {
                readers.add(Thread.currentThread());
                return real.read(pid, d, off, remote, len);
            };
            assertEquals(1 << 18, e.read(r, ME, dst, 0, src.address(), 1 << 18));
            assertEquals(List.of(caller), readers);
            assertEquals(-1, src.mismatch(dst));
            assertEquals(0, e.splitReads());
        }
    }

    @Test
    void closeEndsTheThreads() throws Exception {
        final CopyEngines e = new CopyEngines(4, 4096, TIMEOUT, "closing");
        final Thread[] threads = e.threads();
        assertEquals(3, threads.length);
        for (final Thread t : threads) {
            assertTrue(t.isDaemon() && t.getName().startsWith("gdrkit-copy-closing-"), t::getName);
        }
        try (Arena arena = Arena.ofShared()) {
            final MemorySegment src = arena.allocate(1 << 20);
            final MemorySegment dst = arena.allocate(1 << 20);
            fill(src, 1);
            assertEquals(1 << 20, e.read(RemoteMemoryReader.processVmReadv(), ME, dst, 0, src.address(), 1 << 20));
            assertEquals(-1, src.mismatch(dst));
            e.close();
            for (final Thread t : threads) {
                t.join(10_000);
                assertFalse(t.isAlive(), t.getName() + " ended");
            }
            e.close(); // idempotent
            // after close: one read on the caller
            dst.fill((byte) 0);
            assertEquals(1 << 20, e.read(RemoteMemoryReader.processVmReadv(), ME, dst, 0, src.address(), 1 << 20));
            assertEquals(-1, src.mismatch(dst));
        }
    }

    @Test
    void oneEngineStartsNoThreadAndBadArgumentsAreRefused() {
        try (CopyEngines e = new CopyEngines(1, 4096, TIMEOUT, "one")) {
            assertEquals(0, e.threads().length);
        }
        assertThrows(IllegalArgumentException.class, () -> new CopyEngines(0, 4096, TIMEOUT, "x"));
        assertThrows(IllegalArgumentException.class,
            () -> new CopyEngines(CopyEngines.MAX_ENGINES + 1, 4096, TIMEOUT, "x"));
        assertThrows(IllegalArgumentException.class, () -> new CopyEngines(2, 0, TIMEOUT, "x"));
        assertThrows(IllegalArgumentException.class, () -> new CopyEngines(2, 4096, 0, "x"));
    }
}
