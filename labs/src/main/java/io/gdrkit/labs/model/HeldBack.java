/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

/**
 * A measurement the fit did not see, and what the fitted model predicts there.
 *
 * @param x         where (QPs or bytes)
 * @param measured  measured MiB/s
 * @param predicted the model's MiB/s
 */
public record HeldBack(double x, double measured, double predicted) {
    /**
     * The largest held-back error a model may have and still recommend: beyond it the model says it does not fit,
     * because a recommendation from a curve that misses its own check by more than a quarter is a guess.
     */
    public static final double FIT_LIMIT = 0.25;

    /** The held-back error is within {@link #FIT_LIMIT} (either sign). */
    public boolean fits() {
        return Math.abs(relativeError()) <= FIT_LIMIT;
    }

    /** (predicted - measured) / measured. */
    public double relativeError() {
        return (predicted - measured) / measured;
    }
}
