/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import picocli.CommandLine;

/**
 * Upper bounds of the count flags (iterations, warm-up rounds, durations): a typo such as {@code -n 1000000000}
 * is refused by name (exit 2) instead of running for days; sizes are bounded by each command's buffer limits.
 */
final class Counts {
    /** The most iterations (or warm-up iterations) one size may run: far beyond any benchmark's need. */
    static final long MAX_ITERS = 100_000_000L;
    /** The longest {@code -D/--duration} or warm-up time, in seconds: one hour. */
    static final long MAX_SECONDS = 3600;

    private Counts() {
    }

    /** Refuses {@code value} of {@code flag} above {@code max} (exit 2 naming the flag and the bound). */
    static void atMost(final CommandLine cl, final String flag, final double value, final long max) {
        if (value > max) {
            throw new CommandLine.ParameterException(cl, flag + " must be at most " + max + ", not "
                + (value == Math.rint(value) && Math.abs(value) < 1e18 ? Long.toString((long) value)
                    : Double.toString(value)));
        }
    }
}
