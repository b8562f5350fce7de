/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs.cm;

/** A connection could not be made or kept; {@link #reason()} says which way it failed. */
public final class CmException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public enum Reason {
        /** Nothing listens at the address (TCP RST). */
        REFUSED,
        /** No route to the host, or the host does not answer the TCP handshake. */
        UNREACHABLE,
        /** The peer did not answer a CM message within the timeout. */
        TIMEOUT,
        /** The peer answered with a reject. */
        REJECTED,
        /** The peer sent something that is not a gdrkit CM message, or closed the connection mid-exchange. */
        PROTOCOL
    }

    private final Reason reason;

    public CmException(final Reason reason, final String message, final Throwable cause) {
        super(reason + ": " + message, cause);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
