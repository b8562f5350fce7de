/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import java.util.ArrayList;
import java.util.List;

/**
 * Horizontal bars, one per label (e.g. failures per configuration), drawn from zero with the value written beside
 * each bar so that a zero is visible too. Made by {@link Section#barChart(String, String)}.
 */
public final class BarChart implements Chart {
    /** One bar. */
    record Bar(String label, double value) {
    }

    private final String title;
    private final String valueLabel;
    private final List<Bar> bars = new ArrayList<>();
    private double alertAbove = Double.NaN;

    BarChart(final String title, final String valueLabel) {
        this.title = Report.requireText(title, "bar chart title");
        this.valueLabel = valueLabel == null ? "" : valueLabel;
    }

    /**
     * Adds a bar.
     *
     * @throws IllegalArgumentException if the label is null or the value is negative, NaN or infinite
     */
    public BarChart bar(final String label, final double value) {
        if (label == null) {
            throw new IllegalArgumentException("bar chart '" + title + "': a bar label must not be null");
        }
        if (!Double.isFinite(value) || value < 0) {
            throw new IllegalArgumentException("bar chart '" + title + "': bar '" + label + "' has value " + value
                + "; bars are drawn from zero and need a finite value >= 0");
        }
        bars.add(new Bar(label, value));
        return this;
    }

    /**
     * Draws bars whose value is above {@code threshold} in the alert colour, e.g. {@code alertAbove(0)} for failure
     * counts, so that a failing configuration stands out among many passing ones.
     */
    public BarChart alertAbove(final double threshold) {
        if (!Double.isFinite(threshold)) {
            throw new IllegalArgumentException("bar chart '" + title + "': alert threshold must be finite");
        }
        alertAbove = threshold;
        return this;
    }

    @Override
    public String title() {
        return title;
    }

    String valueLabel() {
        return valueLabel;
    }

    List<Bar> bars() {
        return bars;
    }

    /** NaN when no threshold was set. */
    double alertThreshold() {
        return alertAbove;
    }

    boolean alert(final Bar b) {
        return !Double.isNaN(alertAbove) && b.value() > alertAbove;
    }
}
