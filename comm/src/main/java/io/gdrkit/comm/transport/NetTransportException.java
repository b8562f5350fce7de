/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

/** A transport error with NCCL's result class. */
public final class NetTransportException extends RuntimeException {
    /** ncclResult_t's error classes, plus TIMEOUT (NCCL reports those as a remote or system error). */
    public enum Reason {
        /** ncclSystemError: a local system call (socket, verbs) failed. */
        SYSTEM,
        /** ncclInternalError: a bug or a broken invariant. */
        INTERNAL,
        /** ncclInvalidArgument: a bad argument (device out of range, a handle of another transport). */
        INVALID_ARGUMENT,
        /** ncclInvalidUsage: a valid call at the wrong time (too many requests, unknown registration). */
        INVALID_USAGE,
        /** ncclRemoteError: the peer failed, vanished, or sent something that does not fit. */
        REMOTE,
        /** A wait ran past the transport's timeout; the message names what it waited for. */
        TIMEOUT
    }

    /** Why the transport call failed. */
    private final Reason reason;

    /**
     * Creates an exception with a reason and a message.
     *
     * @param reason  why the transport call failed
     * @param message what failed, naming the device, connection or request involved
     */
    public NetTransportException(final Reason reason, final String message) {
        super(message);
        this.reason = reason;
    }

    /**
     * Creates an exception with a reason, a message and the failure that caused it.
     *
     * @param reason  why the transport call failed
     * @param message what failed, naming the device, connection or request involved
     * @param cause   the underlying failure
     */
    public NetTransportException(final Reason reason, final String message, final Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    /** {@return why the transport call failed} */
    public Reason reason() {
        return reason;
    }

    @Override
    public String getMessage() {
        return "NET " + reason.name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ') + ": " + super.getMessage();
    }
}
