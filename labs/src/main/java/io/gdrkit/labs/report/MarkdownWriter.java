/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import java.util.List;
import java.util.Map;

/** report.md: GitHub-flavoured Markdown; charts are the chart-N.svg files beside it, shown as images. */
final class MarkdownWriter {
    private MarkdownWriter() {
    }

    static String render(final Report r) {
        final StringBuilder sb = new StringBuilder();
        sb.append("# ").append(Text.markdown(r.title())).append("\n\n");
        for (final Map.Entry<String, String> f : r.header().entrySet()) {
            sb.append("- **").append(Text.markdown(f.getKey())).append(":** ").append(Text.markdown(f.getValue()))
                .append('\n');
        }
        int chart = 0;
        for (final Section s : r.sections()) {
            sb.append("\n## ").append(Text.markdown(s.name())).append("\n");
            for (final String p : s.paragraphs()) {
                sb.append('\n').append(Text.markdownParagraph(p)).append('\n');
            }
            if (s.columns() != null) {
                table(sb, s);
            }
            for (final Chart c : s.charts()) {
                chart++;
                sb.append("\n![").append(Text.markdown(c.title())).append("](").append(Report.chartFileName(chart))
                    .append(")\n");
            }
        }
        return sb.toString();
    }

    private static void table(final StringBuilder sb, final Section s) {
        final List<String> cols = s.columns();
        sb.append("\n|");
        for (final String c : cols) {
            sb.append(' ').append(Text.markdown(c)).append(" |");
        }
        sb.append("\n|");
        for (int i = 0; i < cols.size(); i++) {
            // numbers right-aligned, so that digits line up when the table is rendered
            sb.append(s.numeric(i) ? " ---: |" : " --- |");
        }
        sb.append('\n');
        for (final List<Object> row : s.rows()) {
            sb.append('|');
            for (final Object v : row) {
                sb.append(' ').append(Text.markdown(Text.cell(v))).append(" |");
            }
            sb.append('\n');
        }
        if (s.rows().isEmpty()) {
            sb.append("\n(no rows)\n");
        }
    }
}
