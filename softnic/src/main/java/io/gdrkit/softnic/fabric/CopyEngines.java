/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * Several copy engines for one NIC's cross-process pulls (the shm fabric's cma path): a {@code process_vm_readv} of
 * at least {@link #threshold()} bytes is split into up to {@link #engines()} parts; {@code engines - 1} daemon threads
 * each take one part while the calling (NIC engine) thread reads the first, and the call returns only once every part
 * is in, so the NIC sees one read, as with a single engine: completion order, PSNs and ACKs do not change. Why: with
 * one NIC thread per rank doing every pull, that thread bounds a large 2-rank allreduce (docs/PERFORMANCE.md), where
 * SocketTransport copies on several kernel threads.
 *
 * <p>The answer is what one read of the whole range would have answered ({@link #read}): the bytes read up to the
 * first part that came back short (EFAULT at a part's start is a short read of the whole, as the kernel reports a
 * fault after some bytes), or the errno of a part that met one that is not about addresses (ESRCH: the peer is gone,
 * EPERM, EINVAL: the destination's arena closed), or {@link #TIMED_OUT}. Parts past a short one may have written
 * their bytes too: destination memory of a failed RDMA operation is undefined anyway. A reader that throws in any
 * part (the FFM binding does only if the downcall itself breaks) has that exception rethrown here once every part is
 * in.
 *
 * <p>Threads: a worker spins 50 µs ({@code SPIN_NANOS}) after its last part, then parks until the next is posted. The
 * caller, done with its own part, reads any part no worker has taken yet itself (a parked worker may take longer to
 * wake than the copy takes), then waits for the taken ones, spinning briefly, then parked (a worker unparks it), at
 * most the timeout: a part not in by then is a named error ({@link #timeoutError()}) and this object stops splitting
 * (the late part's descriptor stays its worker's). Nothing is allocated per read: the part descriptors are made here.
 * One caller at a time (the thread holding the NIC's duty). {@link #close()} stops the threads; reads after it are
 * single.
 */
public final class CopyEngines implements AutoCloseable {
    /** What {@link #read} answers when a worker did not finish its part within the timeout. */
    public static final long TIMED_OUT = Long.MIN_VALUE;
    /** Most engines (the calling thread included) a NIC may have. */
    public static final int MAX_ENGINES = 64;
    /** How long a worker keeps spinning for the next part: back-to-back pulls of a long WRITE find it awake. */
    static final long SPIN_NANOS = 50_000;
    /** How long the caller spins for taken parts before it parks. */
    private static final long WAIT_SPIN_NANOS = 20_000;
    /** Part boundaries fall on page boundaries of the source once parts are at least this large. */
    private static final long ALIGN_FROM = 16 * 1024;
    private static final long PAGE = 4096;

    private static final int IDLE = 0;
    private static final int POSTED = 1;
    private static final int TAKEN = 2;
    private static final int DONE = 3;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Part.class, "state", int.class);
        } catch (final ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final int engines;
    private final long threshold;
    private final long timeoutNanos;
    private final String name;
    /** parts[0] is the caller's; parts[i] belongs to workers[i - 1]. */
    private final Part[] parts;
    private final Thread[] workers;
    private volatile boolean closed;
    /** Set by a read that timed out: a worker may still hold its part, so nothing is split from then on. */
    private volatile boolean broken;
    /** The caller while it is parked waiting for parts (a worker that finishes one unparks it). */
    private volatile Thread waiter;
    private String timeoutError = "";
    private long splitReads;

    /**
     * Starts {@code engines - 1} daemon threads named {@code gdrkit-copy-<name>-<i>}. {@code engines} 1 starts none:
     * every read is one read.
     *
     * @param engines      1..{@link #MAX_ENGINES}: the calling thread and {@code engines - 1} workers
     * @param threshold    smallest read that is split (bytes, >= 1)
     * @param timeoutNanos how long a read waits for its workers' parts
     * @param name         the owner, in thread names and errors (a device name)
     */
    public CopyEngines(final int engines, final long threshold, final long timeoutNanos, final String name) {
        if (engines < 1 || engines > MAX_ENGINES) {
            throw new IllegalArgumentException("copy engines " + engines + " is not in [1, " + MAX_ENGINES + "]");
        }
        if (threshold < 1 || timeoutNanos <= 0) {
            throw new IllegalArgumentException("copy threshold " + threshold + " and timeout " + timeoutNanos
                + " ns must be positive");
        }
        this.engines = engines;
        this.threshold = threshold;
        this.timeoutNanos = timeoutNanos;
        this.name = name;
        parts = new Part[engines];
        for (int i = 0; i < engines; i++) {
            parts[i] = new Part();
        }
        workers = new Thread[engines - 1];
        for (int i = 0; i < workers.length; i++) {
            final Part part = parts[i + 1];
            workers[i] = Thread.ofPlatform().daemon().name("gdrkit-copy-" + name + "-" + (i + 1))
                .unstarted(() -> work(part));
            part.worker = workers[i];
        }
        for (final Thread t : workers) {
            t.start();
        }
    }

    /** Engines, the calling thread included (1: no split). */
    public int engines() {
        return engines;
    }

    /** Smallest read that is split. */
    public long threshold() {
        return threshold;
    }

    /** Reads that were split into parts. */
    public long splitReads() {
        return splitReads;
    }

    /** The worker threads (for tests and diagnostics: none once closed and ended). */
    public Thread[] threads() {
        return workers.clone();
    }

    /** What the last read answering {@link #TIMED_OUT} waited for. */
    public String timeoutError() {
        return timeoutError;
    }

    /**
     * {@code reader.read(pid, dst, dstOffset, remoteAddress, length)}, split into parts when it is at least the
     * threshold, there are workers, and they may write {@code dst} (a segment confined to the calling thread is read
     * whole). Answers as one read would (see the class comment), or {@link #TIMED_OUT}.
     */
    public long read(final RemoteMemoryReader reader, final long pid, final MemorySegment dst, final long dstOffset,
                     final long remoteAddress, final long length) {
        final int k = partsFor(length);
        if (k <= 1 || closed || broken || !dst.isNative() || !dst.isAccessibleBy(workers[0])) {
            return reader.read(pid, dst, dstOffset, remoteAddress, length);
        }
        splitReads++;
        // boundaries: equal shares, moved down to a page boundary of the source once parts are large (a part then
        // touches whole pages of the source, and no page is pinned by two threads)
        long start = 0;
        int used = 0;
        for (int i = 0; i < k; i++) {
            long end = i == k - 1 ? length : length / k * (i + 1);
            if (i < k - 1 && length / k >= ALIGN_FROM) {
                end = ((remoteAddress + end) & -PAGE) - remoteAddress;
            }
            final Part p = parts[i];
            p.reader = reader;
            p.pid = pid;
            p.dst = dst;
            p.dstOffset = dstOffset + start;
            p.remote = remoteAddress + start;
            p.length = Math.max(0, end - start);
            p.result = 0;
            p.failure = null;
            start = Math.max(start, end);
            used = i + 1;
        }
        for (int i = 1; i < used; i++) {
            final Part p = parts[i];
            if (p.length == 0) {
                continue;
            }
            STATE.setVolatile(p, POSTED); // then the parked flag: Dekker against the worker's flag-then-state
            if (p.parked) {
                LockSupport.unpark(p.worker);
            }
        }
        // the caller's part, then the parts no worker took yet: read here rather than wait for a parked thread to wake
        for (int i = 0; i < used; i++) {
            final Part p = parts[i == 0 ? 0 : used - i];
            if (p.length != 0 && (i == 0 || STATE.compareAndSet(p, POSTED, TAKEN))) {
                readPart(p);
                if (i != 0) {
                    STATE.setRelease(p, IDLE);
                }
            }
        }
        // even after a reader threw: no part may still be written when this returns (the next read reuses them)
        if (!awaitParts(used)) {
            return TIMED_OUT;
        }
        final long answer = combine(used);
        Throwable failure = null;
        for (int i = 0; i < used; i++) {
            final Part p = parts[i];
            failure = failure != null ? failure : p.failure;
            p.failure = null;
            p.dst = null; // hold no destination past the read
            p.reader = null;
        }
        if (failure instanceof RuntimeException e) {
            throw e; // what the reader threw, as one read would have thrown it
        }
        if (failure instanceof Error e) {
            throw e;
        }
        return answer;
    }

    /** One part's read; a reader that throws (it should not) has it rethrown by the caller once all parts are in. */
    private static void readPart(final Part p) {
        try {
            p.result = p.reader.read(p.pid, p.dst, p.dstOffset, p.remote, p.length);
        } catch (final RuntimeException | Error e) {
            p.result = 0;
            p.failure = e;
        }
    }

    /** Parts for a read of {@code length} bytes: all engines from the threshold on, each at least a page. */
    private int partsFor(final long length) {
        if (engines <= 1 || length < threshold) {
            return 1;
        }
        return (int) Math.max(1, Math.min(engines, length / PAGE));
    }

    /** Waits until every worker's part of this read is DONE (then IDLE again); false at the timeout. */
    private boolean awaitParts(final int used) {
        final long begin = System.nanoTime();
        for (int i = 1; i < used; i++) {
            final Part p = parts[i];
            while (true) {
                final int s = (int) STATE.getAcquire(p);
                if (s == DONE) {
                    STATE.setRelease(p, IDLE);
                    break;
                }
                if (s == IDLE) {
                    break; // empty, or read by this thread
                }
                final long waited = System.nanoTime() - begin;
                if (waited < WAIT_SPIN_NANOS) {
                    Thread.onSpinWait();
                    continue;
                }
                if (waited > timeoutNanos) {
                    broken = true;
                    timeoutError = "copy engine " + i + " of " + name + " did not finish its part of a process_vm_readv ("
                        + p.length + " bytes at 0x" + Long.toHexString(p.remote) + " of process " + p.pid + ") within "
                        + timeoutNanos / 1_000_000 + " ms" + (s == POSTED ? " (never taken)" : "")
                        + "; this NIC pulls on one thread from now on";
                    return false;
                }
                waiter = Thread.currentThread();
                if ((int) STATE.getVolatile(p) != DONE) {
                    LockSupport.parkNanos(this, Math.min(1_000_000, timeoutNanos - waited + 1));
                }
                waiter = null;
            }
        }
        return true;
    }

    /** The parts' results as one read's (see the class comment). */
    private long combine(final int used) {
        for (int i = 0; i < used; i++) {
            final long r = parts[i].result;
            if (r < 0 && r != -RemoteMemoryReader.EFAULT) {
                return r; // about the process or the destination, not an address: what one read would meet too
            }
        }
        long prefix = 0;
        for (int i = 0; i < used; i++) {
            final Part p = parts[i];
            if (p.result == p.length) {
                prefix += p.length;
                continue;
            }
            if (p.result >= 0) {
                return prefix + p.result;
            }
            return prefix > 0 ? prefix : p.result; // EFAULT at this part's start: short after the bytes before
        }
        return prefix;
    }

    private void work(final Part p) {
        long idleSince = System.nanoTime();
        while (true) {
            if (STATE.compareAndSet(p, POSTED, TAKEN)) {
                readPart(p);
                STATE.setVolatile(p, DONE); // then the waiter: Dekker against the caller's waiter-then-state

                final Thread w = waiter;
                if (w != null) {
                    LockSupport.unpark(w);
                }
                idleSince = System.nanoTime();
                continue;
            }
            if (closed) {
                return; // nothing posted (checked first): no read waits on this thread
            }
            if (System.nanoTime() - idleSince < SPIN_NANOS) {
                Thread.onSpinWait();
                continue;
            }
            p.parked = true;
            if ((int) STATE.getVolatile(p) != POSTED && !closed) {
                LockSupport.parkNanos(this, 100_000_000L); // bounded: a lost unpark costs 100 ms, not forever
            }
            p.parked = false;
            idleSince = System.nanoTime();
        }
    }

    /**
     * Stops the workers: each ends after the part it is reading, if any, and this waits up to a second for them.
     * Idempotent.
     */
    @Override
    public void close() {
        closed = true;
        for (final Thread t : workers) {
            LockSupport.unpark(t);
        }
        final long deadline = System.nanoTime() + 1_000_000_000L;
        for (final Thread t : workers) {
            final long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            try {
                t.join(Math.max(1, left / 1_000_000));
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** One part of a split read: written by the caller before POSTED, by its reader before DONE. */
    private static final class Part {
        volatile int state;
        volatile boolean parked;
        Thread worker;
        RemoteMemoryReader reader;
        long pid;
        MemorySegment dst;
        long dstOffset;
        long remote;
        long length;
        long result;
        /** What the reader threw, for the caller to rethrow. */
        Throwable failure;
    }
}
