/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.config.CommConfiguration;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

/**
 * A communicator's host reductions on several threads: one of at least {@code minBytes} is cut into P parts on
 * element boundaries (each inner cut moved down to a cache line of {@code out} where the element size allows, so no
 * two threads write one line), P-1 parts run on worker threads this reducer owns and one on the caller, which then
 * waits for all. Each part is {@link Reducer#reduce} over its elements, so every element gets exactly the operation
 * the sequential call gives it: the result is the sequential one, bit for bit. A smaller reduction, P = 1, an
 * {@code out} that overlaps an input at another offset (the sequential loop would feed its own results forward), a
 * segment that is not native or that a worker may not touch (confined) run sequentially on the caller.
 *
 * <p>Workers are platform daemon threads, started on the first split reduction; between parts each spins
 * {@value #SPIN_NANOS} ns (the next chunk usually comes sooner) and then parks. With a cold threshold, a reduction
 * up to it that finds a worker parked runs on the caller alone: a lone small collective after a pause does not wait
 * for a thread to be scheduled. If it came within the spin time of the reduction before (a stream is starting), it
 * also wakes the workers, which then spin for the next one. The caller waits at most the
 * timeout; a part not done by then is a {@link CollException} naming it, and the reducer refuses further work (that
 * worker may still write). A worker's exception is rethrown on the caller as a CollException naming the part. Part
 * descriptors are preallocated: no allocation per reduction. One caller thread at a time (the communicator's).
 */
public final class ParallelReducer implements AutoCloseable {
    /** The kernel each part runs ({@link Reducer#reduce}; tests put a failing or stalling one in). */
    @FunctionalInterface
    interface Kernel {
        void reduce(MemorySegment out, long outOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
                    long count, DataType type, RedOp op);
    }

    /**
     * How many threads a communicator's large host reductions use, from which size, and why (the output's
     * {@code reduce_threads}).
     *
     * @param threads  the number of parts a large reduction is split into (1: always sequential)
     * @param minBytes the smallest reduction, in bytes, that is split
     * @param reason   why this choice was made: the setting, or what the automatic choice saw
     */
    public record Choice(int threads, int minBytes, String reason) {
        /** {@return the text for the output: {@code threads} and the threshold, then the reason} */
        public String describe() {
            return threads + (threads > 1 ? " from " + minBytes + " B" : "") + " (" + reason + ")";
        }
    }

    /**
     * How long a worker spins for its next part before it parks: about the gap between two 512 KiB chunks of a large
     * exchange at a busbw of a few GB/s (docs/TRANSPORT.md), so the next chunk finds it awake rather than paying an
     * unpark; the spin itself is not tuned by measurement.
     */
    static final long SPIN_NANOS = 200_000;

    /**
     * The communicator's cold threshold: up to 256 KiB a reduction that finds the workers parked runs alone: waking a
     * parked worker costs more than splitting saves up to about this size, and from 1 MiB the split pays for the
     * wake ({@code bench/.../ParallelReducerColdBench}; the measurement is in docs/TRANSPORT.md, "Cold workers").
     * Back to back, where the workers spin, both ways are within the noise.
     */
    public static final long DEFAULT_COLD_ALONE_BYTES = 256 << 10;
    /** Polls of a caller between deadline checks (System.nanoTime). */
    private static final int CHECK_EVERY = 256;
    private static final int LINE = 64;

    private final int parts;
    private final long minBytes;
    /** Up to this many bytes a reduction that finds a worker parked (or none started) runs on the caller alone. */
    private final long coldAloneBytes;
    /** Reductions run alone because the workers were cold, and the times those woke them (tests, diagnostics). */
    private long coldAlone;
    private long wakes;
    /** When the last reduction large enough to split was asked for ({@link #clock}), for "a stream is underway". */
    private long lastSplittable = Long.MIN_VALUE;
    /** System.nanoTime, or a test's clock. */
    private final java.util.function.LongSupplier clock;
    private final long timeoutNanos;
    private final String name;
    private final Kernel kernel;
    private final Worker[] workers;
    /** Element bounds of the current reduction's parts: part k is [bounds[k], bounds[k + 1]). */
    private final long[] bounds;
    private boolean started;
    private volatile boolean closed;
    private String broken;
    private long seq;

    /**
     * Creates a reducer whose large reductions are split into {@code threads} parts, one on the caller and the others
     * on worker threads.
     *
     * @param threads  parts per large reduction (1: always sequential), 1..64
     * @param minBytes the smallest reduction that is split
     * @param timeout  the longest the caller waits for the workers' parts (nanoseconds)
     * @param name     the workers' thread name prefix (a part's number is appended)
     */
    public ParallelReducer(final int threads, final long minBytes, final long timeout, final String name) {
        this(threads, minBytes, 0, timeout, name, Reducer::reduce, System::nanoTime);
    }

    /**
     * As above; a reduction of at most {@code coldAloneBytes} bytes that finds a worker parked (it has had no part
     * for {@value #SPIN_NANOS} ns) or none started yet runs on the caller alone, and wakes the workers for the next
     * one when it came within that time of the reduction before: waiting for a parked thread to be scheduled costs
     * more than a small reduction (0: always split).
     *
     * @param threads        parts per large reduction (1: always sequential), 1..64
     * @param minBytes       the smallest reduction that is split
     * @param coldAloneBytes the largest reduction the caller does alone when the workers are parked (0: always split)
     * @param timeout        the longest the caller waits for the workers' parts (nanoseconds)
     * @param name           the workers' thread name prefix (a part's number is appended)
     */
    public ParallelReducer(final int threads, final long minBytes, final long coldAloneBytes, final long timeout,
                           final String name) {
        this(threads, minBytes, coldAloneBytes, timeout, name, Reducer::reduce, System::nanoTime);
    }

    ParallelReducer(final int threads, final long minBytes, final long timeout, final String name,
                    final Kernel kernel) {
        this(threads, minBytes, 0, timeout, name, kernel, System::nanoTime);
    }

    ParallelReducer(final int threads, final long minBytes, final long coldAloneBytes, final long timeout,
                    final String name, final Kernel kernel, final java.util.function.LongSupplier clock) {
        if (threads < 1 || threads > 64 || minBytes < 0 || coldAloneBytes < 0 || timeout <= 0) {
            throw new IllegalArgumentException("ParallelReducer: " + threads + " threads (1..64), from " + minBytes
                + " bytes, alone when cold up to " + coldAloneBytes + " bytes, timeout " + timeout + " ns");
        }
        this.parts = threads;
        this.minBytes = minBytes;
        this.coldAloneBytes = coldAloneBytes;
        this.timeoutNanos = timeout;
        this.name = java.util.Objects.requireNonNull(name, "name");
        this.kernel = java.util.Objects.requireNonNull(kernel, "kernel");
        this.clock = java.util.Objects.requireNonNull(clock, "clock");
        this.workers = new Worker[threads - 1];
        this.bounds = new long[threads + 1];
    }

    /** {@return parts per split reduction (1: none is split)} */
    public int threads() {
        return parts;
    }

    /** Worker threads started so far (0 until the first split reduction; tests check close() ends them). */
    Thread[] workerThreads() {
        final Thread[] t = new Thread[started ? workers.length : 0];
        for (int i = 0; i < t.length; i++) {
            t[i] = workers[i].thread;
        }
        return t;
    }

    /**
     * {@code out[i] = op(a[i], b[i])} for {@code count} elements, as {@link Reducer#reduce(MemorySegment, long,
     * MemorySegment, long, MemorySegment, long, long, DataType, RedOp)} computes it, split when large enough.
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
     * @throws CollException a worker's part failed (the cause) or was not done within the timeout
     */
    public void reduce(final MemorySegment out, final long outOff, final MemorySegment a, final long aOff,
                       final MemorySegment b, final long bOff, final long count, final DataType type,
                       final RedOp op) {
        final int es = type.size();
        if (parts == 1 || count * es < minBytes || count < parts || !splittable(out, outOff, a, aOff, b, bOff,
            count * es)) {
            kernel.reduce(out, outOff, a, aOff, b, bOff, count, type, op);
            return;
        }
        if (closed) {
            throw new IllegalStateException("the parallel reducer " + name + " is closed");
        }
        if (broken != null) {
            throw new CollException(broken);
        }
        final long previous = lastSplittable;
        if (coldAloneBytes > 0) {
            lastSplittable = clock.getAsLong();
        }
        if (count * es <= coldAloneBytes && (!started || anyParked())) {
            // cold: the workers would first have to be scheduled, so this one runs here. They are woken for the next
            // only when this one came within their spin time of the last (a stream is starting): an isolated
            // reduction, every few ms, would wake them to spin for nothing
            if (!started) {
                start();
            } else if (previous != Long.MIN_VALUE && lastSplittable - previous <= SPIN_NANOS) {
                wake();
                wakes++;
            }
            coldAlone++;
            kernel.reduce(out, outOff, a, aOff, b, bOff, count, type, op);
            return;
        }
        if (!started) {
            start();
        }
        if (!accessible(out) || !accessible(a) || !accessible(b)) {
            kernel.reduce(out, outOff, a, aOff, b, bOff, count, type, op);
            return;
        }
        cut(out.address() + outOff, count, es);
        final long s = ++seq;
        for (int k = 1; k < parts; k++) {
            final Worker w = workers[k - 1];
            final long lo = bounds[k];
            final long n = bounds[k + 1] - lo;
            w.out = out;
            w.outOff = outOff + lo * es;
            w.a = a;
            w.aOff = aOff + lo * es;
            w.b = b;
            w.bOff = bOff + lo * es;
            w.count = n;
            w.type = type;
            w.op = op;
            w.posted = s; // publishes the fields above
            if (w.parked) {
                LockSupport.unpark(w.thread);
            }
        }
        Throwable mine = null;
        try {
            kernel.reduce(out, outOff, a, aOff, b, bOff, bounds[1], type, op);
        } catch (final Throwable e) {
            mine = e;
        }
        // the workers write into out until they are done: wait for them even when the caller's part failed
        awaitParts(s, count, type, op);
        CollException partFailed = null;
        for (int k = 1; k < parts; k++) {
            final Worker w = workers[k - 1];
            final Throwable e = w.error;
            if (e != null) {
                w.error = null;
                if (partFailed == null) {
                    partFailed = new CollException("parallel reduction: part " + k + " of " + parts + " (elements "
                        + bounds[k] + ".." + bounds[k + 1] + " of " + count + ", " + type + " " + op + ") failed on "
                        + w.thread.getName() + ": " + e, e);
                }
            }
            w.out = null; // the segments are not kept alive past the call
            w.a = null;
            w.b = null;
        }
        if (mine != null) {
            if (partFailed != null) {
                mine.addSuppressed(partFailed);
            }
            if (mine instanceof RuntimeException re) {
                throw re;
            }
            if (mine instanceof Error er) {
                throw er;
            }
            throw new CollException("parallel reduction: the caller's part failed: " + mine, mine);
        }
        if (partFailed != null) {
            throw partFailed;
        }
    }

    private boolean anyParked() {
        for (final Worker w : workers) {
            if (w.parked) {
                return true;
            }
        }
        return false;
    }

    private void wake() {
        for (final Worker w : workers) {
            if (w.parked) {
                LockSupport.unpark(w.thread);
            }
        }
    }

    /** Reductions that ran on the caller alone because the workers were cold. */
    long coldAlone() {
        return coldAlone;
    }

    /** The cold threshold this reducer was made with (0: always split). */
    long coldAloneBytes() {
        return coldAloneBytes;
    }

    /** Cold reductions that woke the workers (they came within the spin time of the one before). */
    long wakes() {
        return wakes;
    }

    /** Whether every worker is parked now (tests wait for it; false before the workers start). */
    boolean allParked() {
        if (!started) {
            return false;
        }
        for (final Worker w : workers) {
            if (!w.parked) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether the parts may run apart: native segments (addresses compare), and {@code out} either disjoint from
     * each input or the same elements (in place); an {@code out} shifted against an input makes the sequential loop
     * read results it wrote, which only one pass in order reproduces.
     */
    private static boolean splittable(final MemorySegment out, final long oo, final MemorySegment a, final long ao,
                                      final MemorySegment b, final long bo, final long bytes) {
        if (!out.isNative() || !a.isNative() || !b.isNative()) {
            return false;
        }
        final long o = out.address() + oo;
        return apart(o, a.address() + ao, bytes) && apart(o, b.address() + bo, bytes);
    }

    private static boolean apart(final long x, final long y, final long bytes) {
        return x == y || Math.abs(x - y) >= bytes;
    }

    /** A confined segment is its owner's only: a worker's part would fail where the sequential call works. */
    private boolean accessible(final MemorySegment s) {
        return s.isAccessibleBy(workers[0].thread);
    }

    /**
     * Part bounds: equal shares of {@code count}, each inner cut moved down to the start of {@code out}'s cache
     * line when an element starts there (the cut's offset into its line is a whole number of elements).
     */
    private void cut(final long outAddr, final long count, final int es) {
        bounds[0] = 0;
        bounds[parts] = count;
        for (int k = 1; k < parts; k++) {
            long i = count * k / parts;
            final long rem = (outAddr + i * es) & (LINE - 1);
            if (rem % es == 0 && i - rem / es >= bounds[k - 1]) {
                i -= rem / es;
            }
            bounds[k] = i;
        }
    }

    private void awaitParts(final long s, final long count, final DataType type, final RedOp op) {
        final long deadline = System.nanoTime() + timeoutNanos;
        for (int k = 1; k < parts; k++) {
            final Worker w = workers[k - 1];
            int polls = 0;
            while (w.done != s) {
                if (++polls % CHECK_EVERY != 0) {
                    Thread.onSpinWait();
                    continue;
                }
                if (System.nanoTime() - deadline > 0) {
                    broken = "parallel reduction: part " + k + " of " + parts + " (elements " + bounds[k] + ".."
                        + bounds[k + 1] + " of " + count + ", " + type + " " + op + ") on " + w.thread.getName()
                        + " not done after " + timeoutNanos / 1_000_000 + " ms ("
                        + CommConfiguration.COLL_TIMEOUT_MS.name() + "); this "
                        + "reducer takes no more work";
                    throw new CollException(broken);
                }
                if (polls > 64 * CHECK_EVERY) {
                    Thread.yield(); // a part this long means the workers lack a core: give one back
                }
            }
        }
    }

    private void start() {
        for (int k = 1; k < parts; k++) {
            final Worker w = new Worker(this);
            w.thread = Thread.ofPlatform().daemon(true).name(name + "-" + k).unstarted(w);
            workers[k - 1] = w;
        }
        started = true;
        for (final Worker w : workers) {
            w.thread.start();
        }
    }

    /** Ends the workers (each waited for, at most the timeout together); later reductions are refused. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (!started) {
            return;
        }
        for (final Worker w : workers) {
            LockSupport.unpark(w.thread);
        }
        final long deadline = System.nanoTime() + Math.min(timeoutNanos, 10_000_000_000L);
        for (final Worker w : workers) {
            final long left = deadline - System.nanoTime();
            try {
                if (left > 0) {
                    w.thread.join(java.time.Duration.ofNanos(left));
                }
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** One worker: its part (written by the caller before {@code posted}), and its thread's loop. */
    private static final class Worker implements Runnable {
        private final ParallelReducer owner;
        Thread thread;
        MemorySegment out;
        long outOff;
        MemorySegment a;
        long aOff;
        MemorySegment b;
        long bOff;
        long count;
        DataType type;
        RedOp op;
        /** Written before {@link #done}, read by the caller after it. */
        Throwable error;
        volatile long posted;
        volatile long done;
        volatile boolean parked;

        Worker(final ParallelReducer owner) {
            this.owner = owner;
        }

        @Override
        public void run() {
            // started by the rank's thread, which gdrkit.coll.bind may have pinned to one CPU: run where the
            // process may, not on the rank's own core
            io.gdrkit.core.cpu.CpuAffinity.release();
            long seen = 0;
            while (true) {
                long p;
                long spinUntil = System.nanoTime() + SPIN_NANOS;
                int polls = 0;
                while ((p = posted) == seen) {
                    if (owner.closed) {
                        return;
                    }
                    if (++polls % 64 != 0 || System.nanoTime() - spinUntil < 0) {
                        Thread.onSpinWait();
                        continue;
                    }
                    // parked is set before posted is read again, the caller writes posted before it reads parked:
                    // one of the two sees the other, so a part is never left waiting for a parked worker
                    parked = true;
                    if (posted == seen && !owner.closed) {
                        LockSupport.park(this);
                    }
                    parked = false;
                    // woken without a part (a cold reduction wakes the workers for the next): spin again first
                    spinUntil = System.nanoTime() + SPIN_NANOS;
                }
                seen = p;
                try {
                    owner.kernel.reduce(out, outOff, a, aOff, b, bOff, count, type, op);
                } catch (final Throwable e) {
                    error = e;
                }
                done = p;
            }
        }
    }
}
