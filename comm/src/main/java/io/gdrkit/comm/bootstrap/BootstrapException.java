/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

/** A bootstrap failure with a named reason; the message says what was waited for or which rank misbehaved. */
public final class BootstrapException extends RuntimeException {
    /** Why the bootstrap failed. */
    public enum Reason {
        /** A wait ran past its timeout; the message names what was awaited. */
        TIMEOUT,
        /** Another rank (or the root) failed, exited or aborted: a remote error. */
        REMOTE,
        /** A peer sent bytes that are not this protocol, or the wrong run's id. */
        PROTOCOL,
        /** Ranks called different operations, or disagree on the number of ranks. */
        MISMATCH,
        /** The root refused this rank (bad token, duplicate rank, rank out of range). */
        REJECTED,
        /** The root could not be reached, or a socket failed locally. */
        IO
    }

    /** Why the bootstrap failed. */
    private final Reason reason;

    /**
     * Creates an exception with a reason and a message.
     *
     * @param reason  why the bootstrap failed
     * @param message what was waited for, or which rank misbehaved
     */
    public BootstrapException(final Reason reason, final String message) {
        super(message);
        this.reason = reason;
    }

    /**
     * Creates an exception with a reason, a message and the failure that caused it.
     *
     * @param reason  why the bootstrap failed
     * @param message what was waited for, or which rank misbehaved
     * @param cause   the underlying failure, such as a socket error
     */
    public BootstrapException(final Reason reason, final String message, final Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    /** {@return why the bootstrap failed} */
    public Reason reason() {
        return reason;
    }

    @Override
    public String getMessage() {
        return "bootstrap " + reason.name().toLowerCase(java.util.Locale.ROOT) + ": " + super.getMessage();
    }
}
