/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

/** A collective that could not finish: a timeout naming what it waited for, a peer's error, a bad argument. */
public final class CollException extends RuntimeException {
    /**
     * Creates an exception for a failed collective.
     *
     * @param message what failed, naming the operation and the rank or peer involved
     */
    public CollException(final String message) {
        super(message);
    }

    /**
     * Creates an exception for a failed collective, with the failure that caused it.
     *
     * @param message what failed, naming the operation and the rank or peer involved
     * @param cause   the underlying failure, such as a transport or bootstrap error
     */
    public CollException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
