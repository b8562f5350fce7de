/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/** report.json: the same data as the page, tables as arrays of objects keyed by column, charts as their points. */
final class JsonWriter {
    /** Names the layout, so that a reader can tell a later incompatible one apart. */
    static final String FORMAT = "gdrkit-report/1";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private JsonWriter() {
    }

    static String render(final Report r) {
        final ObjectNode root = JSON.createObjectNode();
        root.put("format", FORMAT);
        root.put("title", r.title());
        root.put("command", r.commandLine());
        root.put("date", r.date().toString());
        root.put("host", r.hostName());
        root.put("simulated", r.isSimulated());
        root.put("simulated_what", r.simulatedWhat());
        final ObjectNode facts = root.putObject("facts");
        for (final Map.Entry<String, Object> f : r.facts().entrySet()) {
            put(facts, f.getKey(), f.getValue());
        }
        final ArrayNode sections = root.putArray("sections");
        for (final Section s : r.sections()) {
            final ObjectNode o = sections.addObject();
            o.put("name", s.name());
            final ArrayNode text = o.putArray("text");
            s.paragraphs().forEach(text::add);
            final List<String> cols = s.columns() == null ? List.of() : s.columns();
            final ArrayNode columns = o.putArray("columns");
            cols.forEach(columns::add);
            final ArrayNode rows = o.putArray("rows");
            for (final List<Object> row : s.rows()) {
                final ObjectNode ro = rows.addObject();
                for (int i = 0; i < cols.size(); i++) {
                    put(ro, cols.get(i), row.get(i));
                }
            }
            final ArrayNode charts = o.putArray("charts");
            for (final Chart c : s.charts()) {
                chart(charts.addObject(), c);
            }
        }
        try {
            return JSON.writeValueAsString(root) + "\n";
        } catch (final JsonProcessingException e) {
            throw new IllegalStateException("cannot write report JSON: " + e.getMessage(), e);
        }
    }

    private static void chart(final ObjectNode o, final Chart c) {
        switch (c) {
            case BarChart b -> {
                o.put("type", "bar");
                o.put("title", b.title());
                o.put("value_label", b.valueLabel());
                if (!Double.isNaN(b.alertThreshold())) {
                    o.put("alert_above", b.alertThreshold());
                }
                final ArrayNode bars = o.putArray("bars");
                for (final BarChart.Bar bar : b.bars()) {
                    bars.addObject().put("label", bar.label()).put("value", bar.value());
                }
            }
            case LineChart l -> {
                o.put("type", "line");
                o.put("title", l.title());
                o.put("x_label", l.xLabel());
                o.put("y_label", l.yLabel());
                o.put("log2_x", l.isLog2X());
                o.put("log_y", l.isLogY());
                final ArrayNode series = o.putArray("series");
                for (final LineChart.Series s : l.series()) {
                    final ObjectNode so = series.addObject();
                    so.put("name", s.name());
                    final ArrayNode pts = so.putArray("points");
                    for (final LineChart.Point p : s.points()) {
                        pts.addObject().put("x", p.x()).put("y", p.y());
                    }
                }
            }
        }
    }

    /**
     * Numbers stay numbers; NaN and infinities become null because JSON has no spelling for them, and so does
     * {@link Section#NONE} (a numeric column's "no such value").
     */
    private static void put(final ObjectNode o, final String key, final Object v) {
        switch (v) {
            case null -> o.putNull(key);
            case String s when s.equals(Section.NONE) -> o.putNull(key);
            case Boolean b -> o.put(key, b);
            case Integer i -> o.put(key, i);
            case Long l -> o.put(key, l);
            case Short s -> o.put(key, s);
            case Byte b -> o.put(key, b.intValue());
            case BigInteger b -> o.put(key, b);
            case BigDecimal b -> o.put(key, b);
            // through its decimal text, so that 0.1f stays 0.1 and does not become 0.10000000149
            case Float f when Float.isFinite(f) -> o.put(key, Double.parseDouble(Float.toString(f)));
            case Number n -> {
                final double d = n.doubleValue();
                if (Double.isFinite(d)) {
                    o.put(key, d);
                } else {
                    o.putNull(key);
                }
            }
            default -> o.put(key, v.toString());
        }
    }
}
