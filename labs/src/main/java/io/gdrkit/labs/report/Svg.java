/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Draws charts as standalone SVG (valid inside HTML and as a .svg file). Text widths are estimated, not measured:
 * there is no font engine here, so labels get generous room and long ones are cut with an ellipsis (the full text
 * is in the element's tooltip).
 */
final class Svg {
    static final int WIDTH = 760;
    /** Estimated advance of one 12 px sans-serif character. */
    private static final double CHAR_W = 6.6;
    /** Okabe-Ito colours: told apart by people with the common colour-vision deficiencies. */
    private static final String[] COLORS = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
        "#000000", "#999933"};
    private static final String BAR = "#4C78A8";
    private static final String ALERT = "#D62728";
    private static final String GRID = "#e5e7eb";
    private static final String AXIS = "#57606a";

    private Svg() {
    }

    static String render(final Chart c) {
        return switch (c) {
            case BarChart b -> bar(b);
            case LineChart l -> line(l);
        };
    }

    // ------------------------------------------------------------------ bar chart

    private static String bar(final BarChart c) {
        final List<BarChart.Bar> bars = c.bars();
        int labelChars = 4;
        double max = 0;
        for (final BarChart.Bar b : bars) {
            labelChars = Math.max(labelChars, b.label().length());
            max = Math.max(max, b.value());
        }
        final double labelW = Math.min(300, labelChars * CHAR_W + 8);
        final double x0 = 12 + labelW + 6;
        final double x1 = WIDTH - 80;
        final double top = 44;
        final double rowH = 22;
        final double barH = 15;
        final double axisY = top + Math.max(1, bars.size()) * rowH;
        final int height = (int) Math.ceil(axisY + 48);
        final double[] ticks = niceTicks(0, max > 0 ? max : 1, 6);
        final double domain = ticks[ticks.length - 1];
        final StringBuilder sb = open(c.title(), height);
        for (final double t : ticks) {
            final double x = x0 + t / domain * (x1 - x0);
            line(sb, x, top, x, axisY, GRID);
            text(sb, x, axisY + 16, "middle", compact(t), null);
        }
        line(sb, x0, top, x0, axisY, AXIS);
        line(sb, x0, axisY, x1, axisY, AXIS);
        text(sb, (x0 + x1) / 2, axisY + 36, "middle", c.valueLabel(), null);
        if (bars.isEmpty()) {
            text(sb, (x0 + x1) / 2, top + rowH / 2 + 4, "middle", "no data", null);
        }
        final int maxChars = (int) Math.floor(labelW / CHAR_W);
        for (int i = 0; i < bars.size(); i++) {
            final BarChart.Bar b = bars.get(i);
            final double y = top + i * rowH + (rowH - barH) / 2;
            final double w = b.value() / domain * (x1 - x0);
            final String tip = b.label() + ": " + Text.number(b.value());
            sb.append("<g><title>").append(Text.html(tip)).append("</title>");
            text(sb, x0 - 6, y + barH - 3, "end", cut(b.label(), maxChars), null);
            sb.append("<rect x=\"").append(f(x0)).append("\" y=\"").append(f(y)).append("\" width=\"").append(f(w))
                .append("\" height=\"").append(f(barH)).append("\" fill=\"").append(c.alert(b) ? ALERT : BAR)
                .append("\"/>");
            text(sb, x0 + w + 4, y + barH - 3, "start", Text.number(b.value()), null);
            sb.append("</g>\n");
        }
        return sb.append("</svg>\n").toString();
    }

    // ------------------------------------------------------------------ line chart

    private static String line(final LineChart c) {
        final List<LineChart.Series> series = c.series();
        double minX = Double.POSITIVE_INFINITY;
        double maxX = Double.NEGATIVE_INFINITY;
        double minY = Double.POSITIVE_INFINITY;
        double maxY = Double.NEGATIVE_INFINITY;
        for (final LineChart.Series s : series) {
            for (final LineChart.Point p : s.points()) {
                minX = Math.min(minX, p.x());
                maxX = Math.max(maxX, p.x());
                minY = Math.min(minY, p.y());
                maxY = Math.max(maxY, p.y());
            }
        }
        final boolean empty = minX > maxX;
        // the legend wraps into rows across the width
        final List<double[]> legendAt = new ArrayList<>();
        final double legendLeft = 70;
        double lx = legendLeft;
        double ly = 40;
        for (final LineChart.Series s : series) {
            final double w = 30 + s.name().length() * CHAR_W + 16;
            if (lx + w > WIDTH - 20 && lx > legendLeft) {
                lx = legendLeft;
                ly += 18;
            }
            legendAt.add(new double[] {lx, ly});
            lx += w;
        }
        final double top = (series.isEmpty() ? 32 : ly + 16);
        final double left = 72;
        final double right = WIDTH - 24;
        final double bottom = top + 280;
        final int height = (int) Math.ceil(bottom + 56);
        final Axis xa = empty ? Axis.linear(0, 1) : c.isLog2X() ? Axis.log(minX, maxX, 2, 12)
            : Axis.linear(minX, maxX);
        final Axis ya = empty ? Axis.linear(0, 1) : c.isLogY() ? Axis.log(minY, maxY, 10, 8)
            : Axis.linear(Math.min(0, minY), maxY);
        final StringBuilder sb = open(c.title(), height);
        for (int i = 0; i < xa.ticks.length; i++) {
            final double x = left + xa.fraction(xa.ticks[i]) * (right - left);
            line(sb, x, top, x, bottom, GRID);
            text(sb, x, bottom + 16, "middle", xa.labels[i], null);
        }
        for (int i = 0; i < ya.ticks.length; i++) {
            final double y = bottom - ya.fraction(ya.ticks[i]) * (bottom - top);
            line(sb, left, y, right, y, GRID);
            text(sb, left - 6, y + 4, "end", ya.labels[i], null);
        }
        line(sb, left, top, left, bottom, AXIS);
        line(sb, left, bottom, right, bottom, AXIS);
        text(sb, (left + right) / 2, bottom + 40, "middle", c.xLabel() + (c.isLog2X() ? " (log2 scale)" : ""),
            null);
        final double midY = (top + bottom) / 2;
        sb.append("<text x=\"16\" y=\"").append(f(midY)).append("\" text-anchor=\"middle\" transform=\"rotate(-90 16 ")
            .append(f(midY)).append(")\">").append(Text.html(c.yLabel() + (c.isLogY() ? " (log scale)" : "")))
            .append("</text>\n");
        if (empty) {
            text(sb, (left + right) / 2, midY, "middle", "no data", null);
        }
        for (int si = 0; si < series.size(); si++) {
            final LineChart.Series s = series.get(si);
            final String color = COLORS[si % COLORS.length];
            // past the palette, a dash pattern keeps series apart
            final String dash = si >= COLORS.length ? " stroke-dasharray=\"6 3\"" : "";
            final List<LineChart.Point> pts = new ArrayList<>(s.points());
            pts.sort(Comparator.comparingDouble(LineChart.Point::x));
            sb.append("<g><title>").append(Text.html(s.name())).append("</title>\n<polyline fill=\"none\" stroke=\"")
                .append(color).append("\" stroke-width=\"2\"").append(dash).append(" points=\"");
            for (final LineChart.Point p : pts) {
                sb.append(f(left + xa.fraction(p.x()) * (right - left))).append(',')
                    .append(f(bottom - ya.fraction(p.y()) * (bottom - top))).append(' ');
            }
            sb.append("\"/>\n");
            for (final LineChart.Point p : pts) {
                sb.append("<circle cx=\"").append(f(left + xa.fraction(p.x()) * (right - left))).append("\" cy=\"")
                    .append(f(bottom - ya.fraction(p.y()) * (bottom - top))).append("\" r=\"3\" fill=\"")
                    .append(color).append("\"><title>").append(Text.html(s.name() + ": x=" + Text.number(p.x())
                        + ", y=" + Text.number(p.y()))).append("</title></circle>\n");
            }
            sb.append("</g>\n");
            final double[] at = legendAt.get(si);
            sb.append("<line x1=\"").append(f(at[0])).append("\" y1=\"").append(f(at[1] - 4)).append("\" x2=\"")
                .append(f(at[0] + 22)).append("\" y2=\"").append(f(at[1] - 4)).append("\" stroke=\"").append(color)
                .append("\" stroke-width=\"2\"").append(dash).append("/>");
            text(sb, at[0] + 28, at[1], "start", s.name(), null);
        }
        return sb.append("</svg>\n").toString();
    }

    /** An axis: maps a value to 0..1 and carries its ticks and their labels. */
    private static final class Axis {
        final double lo;
        final double hi;
        final boolean log;
        final double base;
        final double[] ticks;
        final String[] labels;

        private Axis(final double lo, final double hi, final boolean log, final double base, final double[] ticks,
                     final String[] labels) {
            this.lo = lo;
            this.hi = hi;
            this.log = log;
            this.base = base;
            this.ticks = ticks;
            this.labels = labels;
        }

        static Axis linear(final double min, final double max) {
            double a = min;
            double b = max;
            if (!(b > a)) {
                // one value: centre it in a range around it
                final double pad = a == 0 ? 1 : Math.abs(a) * 0.1;
                a -= a == 0 ? 0 : pad;
                b += pad;
            }
            final double[] t = niceTicks(a, b, 6);
            final String[] l = new String[t.length];
            for (int i = 0; i < t.length; i++) {
                l[i] = compact(t[i]);
            }
            return new Axis(t[0], t[t.length - 1], false, 0, t, l);
        }

        /** Whole powers of {@code base} around the data, at most {@code maxLabels} of them labelled. */
        static Axis log(final double min, final double max, final int base, final int maxLabels) {
            int lo = (int) Math.floor(logOf(min, base) + 1e-9);
            int hi = (int) Math.ceil(logOf(max, base) - 1e-9);
            if (hi <= lo) {
                lo--;
                hi++;
            }
            final int step = Math.max(1, (int) Math.ceil((hi - lo + 1) / (double) maxLabels));
            final List<Double> t = new ArrayList<>();
            final List<String> l = new ArrayList<>();
            for (int k = lo; k <= hi; k += step) {
                t.add(Math.pow(base, k));
                l.add(base == 2 ? pow2Label(k) : pow10Label(k));
            }
            final double[] ticks = new double[t.size()];
            for (int i = 0; i < ticks.length; i++) {
                ticks[i] = t.get(i);
            }
            return new Axis(lo, hi, true, base, ticks, l.toArray(String[]::new));
        }

        double fraction(final double v) {
            if (log) {
                return (logOf(v, base) - lo) / (hi - lo);
            }
            return (v - lo) / (hi - lo);
        }

        private static double logOf(final double v, final double base) {
            return Math.log(v) / Math.log(base);
        }
    }

    /** Ticks at 1, 2, 2.5 or 5 times a power of ten, covering [lo, hi] with about {@code target} of them. */
    static double[] niceTicks(final double lo, final double hi, final int target) {
        final double raw = (hi - lo) / (target - 1);
        final double mag = Math.pow(10, Math.floor(Math.log10(raw)));
        final double f = raw / mag;
        final double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
        final double start = Math.floor(lo / step + 1e-9) * step;
        final int n = (int) Math.ceil((hi - start) / step - 1e-9);
        final double[] t = new double[n + 1];
        for (int i = 0; i <= n; i++) {
            final double v = start + i * step;
            t[i] = Math.abs(v) < step * 1e-9 ? 0 : v;
        }
        return t;
    }

    /** 1024 as 1Ki, 2^20 as 1Mi: sizes read better than their digits on a log2 axis. */
    static String pow2Label(final int k) {
        if (k >= 40) {
            return (1L << (k - 40)) + "Ti";
        }
        if (k >= 30) {
            return (1L << (k - 30)) + "Gi";
        }
        if (k >= 20) {
            return (1L << (k - 20)) + "Mi";
        }
        if (k >= 10) {
            return (1L << (k - 10)) + "Ki";
        }
        return Text.number(Math.pow(2, k));
    }

    static String pow10Label(final int k) {
        if (k >= -3 && k <= 3) {
            return Text.number(Math.pow(10, k));
        }
        return k > 0 ? compact(Math.pow(10, k)) : "1e" + k;
    }

    /** 12000 as 12k, 3500000 as 3.5M: tick labels stay short. */
    static String compact(final double v) {
        final double a = Math.abs(v);
        if (a >= 1e12) {
            return Text.number(v / 1e12) + "T";
        }
        if (a >= 1e9) {
            return Text.number(v / 1e9) + "G";
        }
        if (a >= 1e6) {
            return Text.number(v / 1e6) + "M";
        }
        if (a >= 1e4) {
            return Text.number(v / 1e3) + "k";
        }
        return Text.number(v);
    }

    // ------------------------------------------------------------------ primitives

    private static StringBuilder open(final String title, final int height) {
        final StringBuilder sb = new StringBuilder(4096);
        sb.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(WIDTH).append("\" height=\"")
            .append(height).append("\" viewBox=\"0 0 ").append(WIDTH).append(' ').append(height)
            .append("\" role=\"img\" font-family=\"system-ui, sans-serif\" font-size=\"12\" fill=\"#1b1f24\">\n")
            .append("<title>").append(Text.html(title)).append("</title>\n")
            // a white ground, so that a .svg opened in a dark viewer stays readable
            .append("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
        text(sb, 12, 22, "start", title, "font-size=\"14\" font-weight=\"600\"");
        return sb;
    }

    private static void line(final StringBuilder sb, final double x1, final double y1, final double x2,
                             final double y2, final String color) {
        sb.append("<line x1=\"").append(f(x1)).append("\" y1=\"").append(f(y1)).append("\" x2=\"").append(f(x2))
            .append("\" y2=\"").append(f(y2)).append("\" stroke=\"").append(color).append("\"/>\n");
    }

    private static void text(final StringBuilder sb, final double x, final double y, final String anchor,
                             final String s, final String extra) {
        sb.append("<text x=\"").append(f(x)).append("\" y=\"").append(f(y)).append("\" text-anchor=\"")
            .append(anchor).append('"');
        if (extra != null) {
            sb.append(' ').append(extra);
        }
        sb.append('>').append(Text.html(s)).append("</text>\n");
    }

    private static String cut(final String s, final int maxChars) {
        return s.length() <= maxChars ? s : s.substring(0, Math.max(1, maxChars - 1)) + "\u2026";
    }

    /** A coordinate to one decimal: enough for a screen, and keeps the file small. */
    private static String f(final double v) {
        final long tenths = Math.round(v * 10);
        final String s = (tenths / 10) + (tenths % 10 == 0 ? "" : "." + Math.abs(tenths % 10));
        return tenths < 0 && tenths > -10 ? "-" + s : s;
    }
}
