/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;

/** Escaping and number formatting shared by the Markdown, HTML and SVG writers. */
final class Text {
    private Text() {
    }

    /** For HTML text, attribute values and SVG: the five characters XML gives meaning to. */
    static String html(final String s) {
        final StringBuilder sb = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            switch (c) {
                case '<' -> sb.append("&lt;");
                case '>' -> sb.append("&gt;");
                case '&' -> sb.append("&amp;");
                case '"' -> sb.append("&quot;");
                case '\'' -> sb.append("&#39;");
                default -> sb.append(c);
            }
        }
        return sb.toString();
    }

    /**
     * For Markdown inline text (table cells, headings, facts): a backslash before every character CommonMark/GFM
     * could read as markup (emphasis, code, links, raw HTML, entities, table pipes), and line breaks folded to
     * spaces so that a value never ends a table row early.
     */
    static String markdown(final String s) {
        final StringBuilder sb = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            switch (c) {
                case '\\', '`', '*', '_', '[', ']', '<', '>', '&', '|', '~' -> sb.append('\\').append(c);
                case '\r', '\n' -> sb.append(' ');
                default -> sb.append(c);
            }
        }
        return sb.toString();
    }

    /**
     * For a Markdown paragraph: {@link #markdown} plus a backslash before a leading {@code #}, {@code -},
     * {@code +} or {@code 1.}, so that user text never turns into a heading or a list.
     */
    static String markdownParagraph(final String s) {
        // leading blanks would make an indented code block
        final StringBuilder sb = new StringBuilder(markdown(s.stripLeading()));
        if (!sb.isEmpty() && (sb.charAt(0) == '#' || sb.charAt(0) == '-' || sb.charAt(0) == '+')) {
            sb.insert(0, '\\');
        }
        int digits = 0;
        while (digits < sb.length() && Character.isDigit(sb.charAt(digits))) {
            digits++;
        }
        if (digits > 0 && digits < sb.length() && (sb.charAt(digits) == '.' || sb.charAt(digits) == ')')) {
            sb.insert(digits, '\\');
        }
        return sb.toString();
    }

    /**
     * A cell or axis value as people read it: integers in full, other numbers in fixed decimals, rounded to three
     * decimals without trailing zeros (tiny ones to three significant digits, {@code 0.0000742}, never an exponent),
     * non-finite ones as {@code n/a}.
     */
    static String number(final Number n) {
        if (n instanceof Integer || n instanceof Long || n instanceof Short || n instanceof Byte
            || n instanceof BigInteger) {
            return n.toString();
        }
        if (n instanceof BigDecimal b) {
            return b.toPlainString();
        }
        final double d = n.doubleValue();
        if (!Double.isFinite(d)) {
            return "n/a";
        }
        if (d != 0 && Math.abs(d) < 1e-3) {
            return new BigDecimal(d).round(new MathContext(3, RoundingMode.HALF_EVEN)).stripTrailingZeros()
                .toPlainString();
        }
        final String s = BigDecimal.valueOf(d).setScale(3, RoundingMode.HALF_EVEN).stripTrailingZeros()
            .toPlainString();
        return s.equals("-0") ? "0" : s;
    }

    /** A table cell: numbers formatted, null empty, anything else as its text. */
    static String cell(final Object v) {
        if (v == null) {
            return "";
        }
        if (v instanceof Number n) {
            return number(n);
        }
        return v.toString();
    }
}
