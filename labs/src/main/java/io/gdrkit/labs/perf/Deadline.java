/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

/**
 * A timeout for a busy wait that names what it waited for. Re-armed whenever progress is made, so a run of any
 * length only fails when nothing happens for the whole timeout.
 */
public final class Deadline {
    public static final long DEFAULT_TIMEOUT_NS = 30_000_000_000L;

    private final long timeoutNs;
    private long deadline;

    public Deadline(final long timeoutNs) {
        this.timeoutNs = timeoutNs;
        rearm();
    }

    public Deadline() {
        this(DEFAULT_TIMEOUT_NS);
    }

    public void rearm() {
        deadline = System.nanoTime() + timeoutNs;
    }

    /** Throws when the deadline passed; the message is only built then, so the check is allocation free. */
    public void check(final String what, final long have, final long want) {
        if (System.nanoTime() - deadline > 0) {
            throw new TimeoutError("timed out after " + timeoutNs / 1_000_000_000L + " s waiting for " + what
                + " (have " + have + " of " + want + ")");
        }
    }

    /** A wait that gave up: reported as a one-line error, exit code 1. */
    public static final class TimeoutError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public TimeoutError(final String message) {
            super(message, null, false, false);
        }
    }
}
