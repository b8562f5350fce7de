/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core;

/** A failure that carries a Linux errno, named in its message ({@code EINVAL: ...}). */
public class ErrnoException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int errno;

    public ErrnoException(final int errno, final String message) {
        super(Errno.name(errno) + ": " + message);
        this.errno = errno;
    }

    /** The errno value (see {@link Errno}). */
    public int errno() {
        return errno;
    }
}
