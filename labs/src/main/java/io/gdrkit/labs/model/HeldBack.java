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
    /** (predicted - measured) / measured. */
    public double relativeError() {
        return (predicted - measured) / measured;
    }
}
