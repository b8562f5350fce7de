/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import java.util.ArrayList;
import java.util.List;

/**
 * One or more series of (x, y) points joined by lines, e.g. bandwidth or latency percentiles against message size.
 * The x axis can be log2 (sizes that double) and the y axis log10 (values spanning decades). Points are drawn in
 * x order. Made by {@link Section#lineChart(String, String, String)}.
 */
public final class LineChart implements Chart {
    /** One point. */
    record Point(double x, double y) {
    }

    /** A named series, in the order its first point was added. */
    record Series(String name, List<Point> points) {
    }

    private final String title;
    private final String xLabel;
    private final String yLabel;
    private final List<Series> series = new ArrayList<>();
    private boolean log2X;
    private boolean logY;

    LineChart(final String title, final String xLabel, final String yLabel) {
        this.title = Report.requireText(title, "line chart title");
        this.xLabel = xLabel == null ? "" : xLabel;
        this.yLabel = yLabel == null ? "" : yLabel;
    }

    /**
     * Log2 x axis, ticks at powers of two.
     *
     * @throws IllegalArgumentException if a point already added has x &lt;= 0
     */
    public LineChart log2X() {
        checkAllPositive(true);
        log2X = true;
        return this;
    }

    /**
     * Log10 y axis, ticks at decades.
     *
     * @throws IllegalArgumentException if a point already added has y &lt;= 0
     */
    public LineChart logY() {
        checkAllPositive(false);
        logY = true;
        return this;
    }

    /**
     * Adds a point to the named series, creating the series on its first point.
     *
     * @throws IllegalArgumentException if the series name is null, a coordinate is NaN or infinite, or a
     *                                  coordinate on a log axis is &lt;= 0
     */
    public LineChart point(final String seriesName, final double x, final double y) {
        if (seriesName == null) {
            throw new IllegalArgumentException("line chart '" + title + "': a series name must not be null");
        }
        if (!Double.isFinite(x) || !Double.isFinite(y)) {
            throw new IllegalArgumentException("line chart '" + title + "': series '" + seriesName + "' point ("
                + x + ", " + y + ") is not finite; leave out what was not measured");
        }
        if (log2X) {
            checkPositive(seriesName, "x", x);
        }
        if (logY) {
            checkPositive(seriesName, "y", y);
        }
        Series s = null;
        for (final Series t : series) {
            if (t.name().equals(seriesName)) {
                s = t;
                break;
            }
        }
        if (s == null) {
            s = new Series(seriesName, new ArrayList<>());
            series.add(s);
        }
        s.points().add(new Point(x, y));
        return this;
    }

    /** A log axis set after points were added: those points must fit it too. */
    private void checkAllPositive(final boolean x) {
        for (final Series s : series) {
            for (final Point p : s.points()) {
                checkPositive(s.name(), x ? "x" : "y", x ? p.x() : p.y());
            }
        }
    }

    private void checkPositive(final String seriesName, final String axis, final double v) {
        if (!(v > 0)) {
            throw new IllegalArgumentException("line chart '" + title + "': series '" + seriesName + "' has " + axis
                + " = " + v + " on a log " + axis + " axis, which needs values > 0");
        }
    }

    @Override
    public String title() {
        return title;
    }

    String xLabel() {
        return xLabel;
    }

    String yLabel() {
        return yLabel;
    }

    List<Series> series() {
        return series;
    }

    boolean isLog2X() {
        return log2X;
    }

    boolean isLogY() {
        return logY;
    }
}
