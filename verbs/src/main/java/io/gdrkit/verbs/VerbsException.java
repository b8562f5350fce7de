/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import io.gdrkit.core.ErrnoException;


/** A verbs call failed; carries the errno that libibverbs would have returned and a message naming the cause. */
public class VerbsException extends ErrnoException {
    private static final long serialVersionUID = 1L;

    public VerbsException(final int errno, final String message) {
        super(errno, message);
    }
}
