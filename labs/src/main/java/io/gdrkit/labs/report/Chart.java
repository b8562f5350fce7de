/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

/** A chart of a {@link Section}: drawn as inline SVG in report.html and in chart-N.svg, kept as data in JSON. */
public sealed interface Chart permits BarChart, LineChart {
    /** The caption, also the SVG's title. */
    String title();
}
