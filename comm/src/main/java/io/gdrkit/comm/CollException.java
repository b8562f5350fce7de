/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

/** A collective that could not finish: a timeout naming what it waited for, a peer's error, a bad argument. */
public final class CollException extends RuntimeException {
    public CollException(final String message) {
        super(message);
    }

    public CollException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
