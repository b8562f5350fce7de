/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.util.Locale;

/** ncclRedOp_t (the four NCCL has for every type), with nccl-tests' names. */
public enum RedOp {
    /** Sum of the ranks' values. */
    SUM,
    /** Product of the ranks' values. */
    PROD,
    /** Smallest of the ranks' values. */
    MIN,
    /** Largest of the ranks' values. */
    MAX;

    /**
     * {@return the lower-case name NCCL and nccl-tests use: {@code sum}, {@code prod}, {@code min} or {@code max}}
     */
    public String ncclName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Reads an operation by name, in any case.
     *
     * @param s the name: {@code sum}, {@code prod}, {@code min} or {@code max}
     * @return the operation named
     * @throws IllegalArgumentException if the name is none of these
     */
    public static RedOp parse(final String s) {
        try {
            return valueOf(s.toUpperCase(Locale.ROOT));
        } catch (final IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown reduction '" + s + "' (sum, prod, min, max)");
        }
    }

    double apply(final double a, final double b) {
        return switch (this) {
            case SUM -> a + b;
            case PROD -> a * b;
            case MIN -> Math.min(a, b);
            case MAX -> Math.max(a, b);
        };
    }
}
