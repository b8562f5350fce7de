/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A part of a {@link Report}: paragraphs of text, at most one table, and charts, rendered in that order. Made by
 * {@link Report#section(String)}; the methods return this section (or the new chart) for chaining.
 *
 * <p>Table cells are strings, numbers, booleans or null; JSON keeps numbers as numbers (NaN and infinities as
 * null), Markdown and HTML print them rounded to three decimals. Any other object is stored as its
 * {@code toString()}.
 */
public final class Section {
    /**
     * The cell for "no such value" in a numeric column (a first failing trial when none failed): shown as
     * {@code none}, and the column stays numeric (right-aligned).
     */
    public static final String NONE = "none";

    private final String name;
    private final List<String> paragraphs = new ArrayList<>();
    private List<String> columns;
    private final List<List<Object>> rows = new ArrayList<>();
    private final List<Chart> charts = new ArrayList<>();
    private int statusColumn = -1;

    Section(final String name) {
        this.name = Report.requireText(name, "section name");
    }

    public String name() {
        return name;
    }

    /** Adds a paragraph; line breaks inside it are kept in HTML and folded to spaces in Markdown. */
    public Section text(final String paragraph) {
        if (paragraph == null) {
            throw new IllegalArgumentException("section '" + name + "': text must not be null");
        }
        paragraphs.add(paragraph);
        return this;
    }

    /**
     * Starts this section's table.
     *
     * @throws IllegalArgumentException if there are no columns, or a column is blank or repeated (JSON keys rows
     *                                  by column)
     * @throws IllegalStateException    if the section already has a table
     */
    public Section table(final String... columns) {
        if (this.columns != null) {
            throw new IllegalStateException("section '" + name + "' already has a table; start another section");
        }
        if (columns == null || columns.length == 0) {
            throw new IllegalArgumentException("section '" + name + "': a table needs at least one column");
        }
        final Set<String> seen = new HashSet<>();
        for (final String c : columns) {
            Report.requireText(c, "section '" + name + "': column name");
            if (!seen.add(c)) {
                throw new IllegalArgumentException("section '" + name + "': column '" + c + "' appears twice");
            }
        }
        this.columns = List.copyOf(Arrays.asList(columns));
        return this;
    }

    /**
     * Marks {@code column} as a status column: HTML colours its cells by value (PASS / ok / GDR / true green, FAIL /
     * false red, BLOCKED / DEGRADED amber, UNKNOWN grey). Markdown and JSON keep the plain value.
     *
     * @throws IllegalStateException    if {@link #table} was not called
     * @throws IllegalArgumentException if the table has no such column
     */
    public Section statusColumn(final String column) {
        if (columns == null) {
            throw new IllegalStateException("section '" + name + "': statusColumn() before table(columns)");
        }
        final int i = columns.indexOf(column);
        if (i < 0) {
            throw new IllegalArgumentException("section '" + name + "': no column '" + column + "' in " + columns);
        }
        statusColumn = i;
        return this;
    }

    /** The status column's index, or -1. */
    int statusColumn() {
        return statusColumn;
    }

    /** {@link #table(String...)} from a list. */
    public Section table(final List<String> columns) {
        return table(columns == null ? null : columns.toArray(String[]::new));
    }

    /**
     * Adds a row to the table, one value per column in column order.
     *
     * @throws IllegalStateException    if {@link #table} was not called
     * @throws IllegalArgumentException if the number of values differs from the number of columns
     */
    public Section row(final Object... values) {
        if (columns == null) {
            throw new IllegalStateException("section '" + name + "': row() before table(columns)");
        }
        if (values == null) {
            throw new IllegalArgumentException("section '" + name + "': row values must not be a null array");
        }
        final Object[] v = values;
        if (v.length != columns.size()) {
            throw new IllegalArgumentException("section '" + name + "': row " + (rows.size() + 1) + " has "
                + v.length + " values but the table has " + columns.size() + " columns " + columns);
        }
        final List<Object> row = new ArrayList<>(v.length);
        for (final Object o : v) {
            row.add(o == null || o instanceof String || o instanceof Number || o instanceof Boolean ? o
                : o.toString());
        }
        rows.add(Collections.unmodifiableList(row));
        return this;
    }

    /** {@link #row(Object...)} from a list. */
    public Section row(final List<?> values) {
        return row(values == null ? null : values.toArray());
    }

    /** Adds a bar chart to this section and returns it, to be filled with {@link BarChart#bar}. */
    public BarChart barChart(final String title, final String valueLabel) {
        final BarChart c = new BarChart(title, valueLabel);
        charts.add(c);
        return c;
    }

    /** Adds a line chart to this section and returns it, to be filled with {@link LineChart#point}. */
    public LineChart lineChart(final String title, final String xLabel, final String yLabel) {
        final LineChart c = new LineChart(title, xLabel, yLabel);
        charts.add(c);
        return c;
    }

    List<String> paragraphs() {
        return paragraphs;
    }

    /** Null when the section has no table. */
    List<String> columns() {
        return columns;
    }

    List<List<Object>> rows() {
        return rows;
    }

    List<Chart> charts() {
        return charts;
    }

    /** A column is numeric (right-aligned) when it has a value and every value in it is a number. */
    boolean numeric(final int col) {
        boolean any = false;
        for (final List<Object> row : rows) {
            final Object v = row.get(col);
            if (v == null || NONE.equals(v)) {
                continue;
            }
            if (!(v instanceof Number)) {
                return false;
            }
            any = true;
        }
        return any;
    }
}
