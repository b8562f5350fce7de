/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

/** Where a setting's value came from. */
public enum Source {
    /** Nobody set it: the component's default. */
    DEFAULT,
    /** An environment variable ({@code NCCL_*}). */
    ENVIRONMENT,
    /** A JVM system property ({@code gdrkit.*}). */
    PROPERTY,
    /** A command-line flag or an explicit setter call. */
    FLAG
}
