/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/** Turns an exception into the cause part of a one-line CLI error: what happened, in words. */
final class Errors {
    private Errors() {
    }

    /**
     * For the last-resort handler: a file-system error names its file and its cause ("x.xml: no such file"),
     * other errors their message.
     */
    static String describeWithInput(final Throwable e) {
        Throwable t = e;
        while ((t instanceof UncheckedIOException || t.getClass() == RuntimeException.class) && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof FileSystemException f && f.getFile() != null) {
            return f.getFile() + ": " + describe(t);
        }
        if (t instanceof NumberFormatException || t instanceof CharacterCodingException || e.getMessage() == null) {
            return describe(t);
        }
        return e.getMessage();
    }

    /** "no such file", "permission denied", "not valid UTF-8 text", "not a number (...)", or the message. */
    static String describe(final Throwable e) {
        Throwable t = e;
        while ((t instanceof UncheckedIOException || t.getClass() == RuntimeException.class) && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof NoSuchFileException) {
            return "no such file";
        }
        if (t instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (t instanceof NotDirectoryException) {
            return "not a directory";
        }
        if (t instanceof CharacterCodingException) {
            return "not valid UTF-8 text (" + t.getMessage() + ")";
        }
        if (t instanceof FileSystemException f) {
            return f.getReason() != null ? f.getReason() : t.getClass().getSimpleName();
        }
        if (t instanceof NumberFormatException) {
            return "not a number (" + t.getMessage() + ")";
        }
        if (t instanceof OutOfMemoryError) {
            return "too large to load (out of memory)";
        }
        return t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
    }
}
