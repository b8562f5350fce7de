/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.MalformedInputException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;

/**
 * Reads recorded measurements for the models: JSON lines as {@code perf --json} and {@code gpu-path --json} print
 * them (also with a {@code label}/{@code run} prefix, as the bench scripts tag them), and gpu-path's text table (the
 * form of the recorded H200 runs under docs/results). Repeated runs at one x become their median. Every problem is a
 * {@link ModelInputException} naming the file and line.
 */
public final class ModelInputs {
    /** Larger files are not measurement records. */
    static final long MAX_BYTES = 64L << 20;
    private static final ObjectMapper JSON = new ObjectMapper();
    /** gpu-path's table row: path, bytes, iters, MiB/s, check. */
    private static final java.util.regex.Pattern PATH_ROW = java.util.regex.Pattern.compile(
        "^(gdr|bounce|pinned)\\s+(\\d+)\\s+(\\d+)\\s+([0-9.]+)\\s+(.*)$");

    private ModelInputs() {
    }

    /**
     * Bandwidth against QPs from {@code perf --json} lines: objects with {@code qps} and {@code bw_avg_mib_s}, of
     * test {@code test}, of {@code fabric} and {@code bytes} when given (null: any, but only one may be present).
     *
     * @return one measurement per QP count, x = QPs, sorted
     */
    public static List<Measurement> qpScaling(final Path file, final String test, final String fabric,
                                              final Integer bytes) {
        final List<String> lines = lines(file);
        final Map<Double, List<Double>> byQ = new TreeMap<>();
        final java.util.Set<String> fabrics = new java.util.TreeSet<>();
        final java.util.Set<Long> sizes = new java.util.TreeSet<>();
        for (int i = 0; i < lines.size(); i++) {
            final JsonNode o = object(file, i + 1, lines.get(i));
            if (o == null || !o.has("qps") || !o.has("bw_avg_mib_s")) {
                continue;
            }
            if (!test.equals(text(o, "test")) || fabric != null && !fabric.equals(text(o, "fabric"))) {
                continue;
            }
            final long b = (long) number(file, i + 1, o, "bytes");
            if (bytes != null && b != bytes) {
                continue;
            }
            fabrics.add(String.valueOf(text(o, "fabric")));
            sizes.add(b);
            byQ.computeIfAbsent(number(file, i + 1, o, "qps"), k -> new ArrayList<>())
                .add(number(file, i + 1, o, "bw_avg_mib_s"));
        }
        if (byQ.isEmpty()) {
            throw new ModelInputException(file + ": no " + test + " line with qps and bw_avg_mib_s"
                + (fabric != null ? " on fabric " + fabric : "") + (bytes != null ? " at " + bytes + " B" : ""));
        }
        if (fabrics.size() > 1) {
            throw new ModelInputException(file + ": lines of several fabrics " + fabrics + "; pick one (--fabric)");
        }
        if (sizes.size() > 1) {
            throw new ModelInputException(file + ": lines of several sizes " + sizes + "; pick one (--size)");
        }
        return medians(byQ, file + " (" + fabrics.iterator().next() + ", " + sizes.iterator().next() + " B)");
    }

    /**
     * Bandwidth against message size per path ({@code gdr}, {@code bounce}, {@code pinned}) from gpu-path's JSON
     * lines ({@code path}, {@code bytes}, {@code mib_s}) or its text table; other lines are skipped.
     *
     * @return path -> one measurement per size, x = bytes, sorted
     */
    public static Map<String, List<Measurement>> paths(final Path file) {
        final List<String> lines = lines(file);
        final Map<String, Map<Double, List<Double>>> by = new TreeMap<>();
        for (int i = 0; i < lines.size(); i++) {
            final String line = lines.get(i).strip();
            final Matcher m = PATH_ROW.matcher(line);
            if (m.matches()) {
                final double mib;
                try {
                    mib = Double.parseDouble(m.group(4));
                } catch (final NumberFormatException e) {
                    throw new ModelInputException(file + ":" + (i + 1) + ": MiB/s '" + m.group(4) + "' is not a "
                        + "number");
                }
                if (!m.group(5).startsWith("byte-exact") && !m.group(1).equals("pinned")) {
                    throw new ModelInputException(file + ":" + (i + 1) + ": the " + m.group(1) + " run delivered "
                        + "wrong bytes (" + m.group(5) + "); its speed is not a measurement of the path");
                }
                by.computeIfAbsent(m.group(1), k -> new TreeMap<>())
                    .computeIfAbsent(Double.parseDouble(m.group(2)), k -> new ArrayList<>()).add(mib);
                continue;
            }
            final JsonNode o = object(file, i + 1, line);
            if (o == null || !o.has("path") || !o.has("mib_s")) {
                continue;
            }
            if (o.has("check") && !"byte-exact".equals(text(o, "check")) && !"pinned".equals(text(o, "path"))) {
                throw new ModelInputException(file + ":" + (i + 1) + ": the " + text(o, "path") + " run delivered "
                    + "wrong bytes (" + text(o, "check") + "); its speed is not a measurement of the path");
            }
            by.computeIfAbsent(text(o, "path"), k -> new TreeMap<>())
                .computeIfAbsent(number(file, i + 1, o, "bytes"), k -> new ArrayList<>())
                .add(number(file, i + 1, o, "mib_s"));
        }
        if (!by.containsKey("gdr") || !by.containsKey("bounce")) {
            throw new ModelInputException(file + ": needs gdr and bounce rows (gpu-path --json lines or its table); "
                + "found " + (by.isEmpty() ? "none" : by.keySet()));
        }
        final Map<String, List<Measurement>> out = new TreeMap<>();
        by.forEach((p, m) -> out.put(p, medians(m, file + " (" + p + ")")));
        return out;
    }

    static List<Measurement> medians(final Map<Double, List<Double>> by, final String source) {
        final List<Measurement> out = new ArrayList<>();
        by.forEach((x, v) -> {
            final double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            final int n = a.length;
            final double med = n % 2 == 1 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
            out.add(new Measurement(x, med, n, source));
        });
        return out;
    }

    private static List<String> lines(final Path file) {
        try {
            if (Files.isDirectory(file)) {
                throw new ModelInputException(file + ": is a directory, not a measurement file");
            }
            if (Files.size(file) > MAX_BYTES) {
                throw new ModelInputException(file + ": over " + MAX_BYTES + " bytes, not a measurement file");
            }
            final byte[] raw = Files.readAllBytes(file);
            for (int i = 0; i < raw.length; i++) {
                if (raw[i] == 0) {
                    throw new ModelInputException(file + ": binary content (NUL byte at offset " + i + ")");
                }
            }
            return Arrays.asList(StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(raw))
                .toString().split("\n"));
        } catch (final NoSuchFileException e) {
            throw new ModelInputException(file + ": no such file");
        } catch (final MalformedInputException e) {
            throw new ModelInputException(file + ": not UTF-8 text");
        } catch (final IOException e) {
            throw new ModelInputException(file + ": cannot read: " + e.getMessage());
        }
    }

    /** The line as a JSON object; null for blank lines, comments and other text that does not start with '{'. */
    private static JsonNode object(final Path file, final int line, final String text) {
        final String t = text.strip();
        if (!t.startsWith("{")) {
            return null;
        }
        try {
            final JsonNode n = JSON.readTree(t);
            if (n == null || !n.isObject()) {
                throw new ModelInputException(file + ":" + line + ": not a JSON object");
            }
            return n;
        } catch (final IOException e) {
            throw new ModelInputException(file + ":" + line + ": malformed JSON ("
                + e.getMessage().lines().findFirst().orElse("?") + ")");
        }
    }

    private static String text(final JsonNode o, final String field) {
        final JsonNode n = o.get(field);
        return n == null || n.isNull() ? null : n.asText();
    }

    private static double number(final Path file, final int line, final JsonNode o, final String field) {
        final JsonNode n = o.get(field);
        if (n == null || !n.isNumber()) {
            throw new ModelInputException(file + ":" + line + ": field '" + field + "' is "
                + (n == null ? "missing" : "not a number (" + n + ")"));
        }
        final double v = n.asDouble();
        if (!(v > 0) || Double.isInfinite(v)) {
            throw new ModelInputException(file + ":" + line + ": field '" + field + "' must be positive, not "
                + String.format(Locale.ROOT, "%s", n));
        }
        return v;
    }
}
