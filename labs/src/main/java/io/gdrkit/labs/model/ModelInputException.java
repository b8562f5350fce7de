/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

/** A model's input that cannot be used: the file, the line and what is wrong with it. */
public final class ModelInputException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ModelInputException(final String message) {
        super(message);
    }
}
