/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.net;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What a listener does when {@code accept} fails: out of file descriptors (EMFILE, ENFILE), out of memory
 * (ENOBUFS, ENOMEM), or a peer that reset before it was taken. The failure is counted and remembered, and the next
 * attempt waits: 1 ms after the first failure, doubling up to 200 ms, back to none after the next success. A
 * listener neither spins on an accept that fails at once every time (the pending connection stays in the backlog
 * while no descriptor is free) nor dies of it; it serves again as soon as a descriptor is free, as Aeron's media
 * driver and nginx back off on EMFILE.
 *
 * <p>A blocking accept loop calls {@link #failed} and then {@link #pause}; a polled (non-blocking) accept asks
 * {@link #mayTry} first and skips the attempt while the pause lasts. One accepting thread at a time; the
 * counters may be read from any thread.
 */
public final class AcceptBackoff {
    /** The first pause after a failure. */
    public static final long MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** The longest pause: how late a listener may notice that descriptors are free again. */
    public static final long MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final AtomicLong failures = new AtomicLong();
    private volatile long delayNanos;
    private volatile String lastError = "";
    private long notBefore;

    /** Counts {@code e} and doubles the pause (from {@link #MIN_NANOS} up to {@link #MAX_NANOS}); returns it. */
    public long failed(final IOException e) {
        failures.incrementAndGet();
        lastError = String.valueOf(e.getMessage() == null ? e.toString() : e.getMessage());
        final long d = delayNanos == 0 ? MIN_NANOS : Math.min(MAX_NANOS, delayNanos * 2);
        delayNanos = d;
        notBefore = System.nanoTime() + d;
        return d;
    }

    /** An accept succeeded: the next failure starts again at the shortest pause. */
    public void succeeded() {
        if (delayNanos != 0) {
            delayNanos = 0;
        }
    }

    /** Sleeps the current pause (a blocking accept loop, after {@link #failed}); returns false if interrupted. */
    public boolean pause() {
        final long d = delayNanos;
        if (d == 0) {
            return true;
        }
        try {
            TimeUnit.NANOSECONDS.sleep(d);
            return true;
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** For a polled accept: false while the pause after the last failure lasts (skip this attempt). */
    public boolean mayTry() {
        return delayNanos == 0 || System.nanoTime() - notBefore >= 0;
    }

    /** Accepts that failed since this listener started. */
    public long failures() {
        return failures.get();
    }

    /** The current pause in nanoseconds: 0 after a success, else the one the last failure set. */
    public long delayNanos() {
        return delayNanos;
    }

    /** The message of the last failed accept ("" if none), for instance "Too many open files". */
    public String lastError() {
        return lastError;
    }
}
