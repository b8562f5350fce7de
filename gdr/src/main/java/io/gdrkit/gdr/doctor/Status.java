/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

/** The outcome of one doctor check. */
public enum Status {
    /** Present and working, with the evidence that proves it. */
    PASS,
    /** Looked for and absent or refused. */
    FAIL,
    /** Could not be checked because something below it is missing (no GPU to ask, no device to query). */
    BLOCKED,
    /** Not decidable from what could be read; never guessed. */
    UNKNOWN
}
