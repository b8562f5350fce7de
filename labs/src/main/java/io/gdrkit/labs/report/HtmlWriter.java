/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * report.html: one page that needs nothing else (no scripts, fonts or stylesheets from anywhere), readable with
 * JavaScript off and printable; charts are inline SVG.
 */
final class HtmlWriter {
    private static final String STYLE = """
        body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:86rem;\
        padding:0 1rem;color:#1b1f24;line-height:1.45}
        h1{font-size:1.6rem;margin-bottom:.4rem}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #d0d7de;\
        padding-bottom:.2rem}
        .sim{padding:.5rem .8rem;border-radius:4px;margin:.6rem 0 1rem}
        .sim-true{background:#fff4e5;border:1px solid #f0b35a}.sim-false{background:#eaf5ea;border:1px solid #8bc48b}
        table{border-collapse:collapse;font-size:.9rem}
        th,td{border:1px solid #d0d7de;padding:.25rem .55rem;text-align:left;vertical-align:top}
        thead th{background:#f3f5f7;position:sticky;top:0}
        td.n{text-align:right;font-variant-numeric:tabular-nums}
        p.same{font-size:.85rem;color:#57606a;margin:.3rem 0}p.same code{color:#1b1f24}
        table.facts th{background:#f3f5f7;font-weight:600;white-space:nowrap}
        table.facts td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
        .scroll{overflow-x:auto;max-width:100%}
        figure{margin:1.2rem 0}figure svg{max-width:100%;height:auto}
        td.st{font-weight:600;white-space:nowrap}td.st-pass{background:#dafbe1;color:#116329}\
        td.st-fail{background:#ffebe9;color:#a40e26}td.st-warn{background:#fff8c5;color:#7d4e00}\
        td.st-unknown{background:#eef1f4;color:#57606a}
        nav ol,nav ul{margin:.3rem 0}nav ul.numbered{list-style:none;padding-left:1.2rem}
        table.facts td{overflow-wrap:anywhere}footer{margin-top:3rem;color:#57606a;font-size:.8rem}
        """;

    /** A section name that starts with its own number: "4. ", "2-3. ", "2b. ". */
    static final Pattern OWN_NUMBER = Pattern.compile("\\d+[a-z]?(-\\d+[a-z]?)?[.)]\\s");

    private HtmlWriter() {
    }

    static String render(final Report r) {
        final StringBuilder sb = new StringBuilder(8192);
        sb.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
            .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
            .append("<title>").append(Text.html(r.title())).append("</title>\n")
            .append("<style>\n").append(STYLE).append("</style>\n</head>\n<body>\n<header>\n")
            .append("<h1>").append(Text.html(r.title())).append("</h1>\n");
        // the banner repeats the simulated fact where nobody can miss it
        sb.append("<p class=\"sim sim-").append(r.isSimulated()).append("\"><strong>")
            .append(r.isSimulated() ? "Simulated" : "Not simulated").append("</strong>")
            .append(r.simulatedWhat().isBlank() ? "" : ": " + Text.html(r.simulatedWhat())).append("</p>\n");
        sb.append("<div class=\"scroll\"><table class=\"facts\">\n");
        for (final Map.Entry<String, String> f : r.header().entrySet()) {
            sb.append("<tr><th>").append(Text.html(f.getKey())).append("</th><td>").append(Text.html(f.getValue()))
                .append("</td></tr>\n");
        }
        sb.append("</table></div>\n</header>\n");
        final List<Section> sections = r.sections();
        if (sections.size() > 2) {
            // sections named with their own numbers ("4. GDR ...") get a plain list, so the number shows once
            final boolean numbered = sections.stream().anyMatch(s -> OWN_NUMBER.matcher(s.name()).lookingAt());
            sb.append(numbered ? "<nav><ul class=\"numbered\">\n" : "<nav><ol>\n");
            for (int i = 0; i < sections.size(); i++) {
                sb.append("<li><a href=\"#s").append(i + 1).append("\">").append(Text.html(sections.get(i).name()))
                    .append("</a></li>\n");
            }
            sb.append(numbered ? "</ul></nav>\n" : "</ol></nav>\n");
        }
        for (int i = 0; i < sections.size(); i++) {
            section(sb, sections.get(i), i + 1);
        }
        sb.append("<footer>Written by gdrkit. The same data is in report.json and report.md beside this page.")
            .append("</footer>\n</body>\n</html>\n");
        return sb.toString();
    }

    private static void section(final StringBuilder sb, final Section s, final int number) {
        sb.append("<section id=\"s").append(number).append("\">\n<h2>").append(Text.html(s.name()))
            .append("</h2>\n");
        for (final String p : s.paragraphs()) {
            sb.append("<p>").append(Text.html(p).replace("\n", "<br>\n")).append("</p>\n");
        }
        if (s.columns() != null) {
            table(sb, s);
        }
        for (final Chart c : s.charts()) {
            sb.append("<figure>\n").append(Svg.render(c)).append("</figure>\n");
        }
        sb.append("</section>\n");
    }

    /** The colour class of a status value: by its first word, case-insensitive. */
    static String statusClass(final Object value) {
        final String v = value == null ? "" : String.valueOf(value).trim().toUpperCase(java.util.Locale.ROOT);
        final String word = v.split("[\\s:(,]", 2)[0];
        return switch (word) {
            case "PASS", "OK", "GDR", "GDR_READY", "TRUE", "YES", "BYTE-EXACT" -> "st-pass";
            case "FAIL", "FAILED", "FALSE", "MISMATCH" -> "st-fail";
            case "BLOCKED", "DEGRADED", "HARDWARE_BLOCKED", "HOST" -> "st-warn";
            default -> "st-unknown";
        };
    }

    /**
     * A table this wide does not fit a 1400 px window; its columns that hold one value in every row are said once
     * above it instead (the data are unchanged in report.json and report.md).
     */
    static final int WIDE_COLUMNS = 12;

    private static void table(final StringBuilder sb, final Section s) {
        final List<String> cols = s.columns();
        final boolean[] numeric = new boolean[cols.size()];
        final boolean[] shown = new boolean[cols.size()];
        java.util.Arrays.fill(shown, true);
        if (cols.size() > WIDE_COLUMNS && s.rows().size() > 1) {
            final StringBuilder same = new StringBuilder();
            for (int i = 0; i < cols.size(); i++) {
                if (i != s.statusColumn() && constant(s.rows(), i)) {
                    shown[i] = false;
                    same.append(same.isEmpty() ? "" : ", ").append(Text.html(cols.get(i))).append(" <code>")
                        .append(Text.html(Text.cell(s.rows().get(0).get(i)))).append("</code>");
                }
            }
            if (!same.isEmpty()) {
                sb.append("<p class=\"same\">The same in every row: ").append(same).append(".</p>\n");
            }
        }
        int visible = 0;
        sb.append("<div class=\"scroll\"><table class=\"data\">\n<thead><tr>");
        for (int i = 0; i < cols.size(); i++) {
            numeric[i] = s.numeric(i);
            if (shown[i]) {
                visible++;
                sb.append("<th>").append(Text.html(cols.get(i))).append("</th>");
            }
        }
        sb.append("</tr></thead>\n<tbody>\n");
        for (final List<Object> row : s.rows()) {
            sb.append("<tr>");
            for (int i = 0; i < row.size(); i++) {
                if (i < shown.length && !shown[i]) {
                    continue;
                }
                final String cls = i == s.statusColumn() ? "st " + statusClass(row.get(i)) : numeric[i] ? "n" : "";
                sb.append(cls.isEmpty() ? "<td>" : "<td class=\"" + cls + "\">")
                    .append(Text.html(Text.cell(row.get(i)))).append("</td>");
            }
            sb.append("</tr>\n");
        }
        if (s.rows().isEmpty()) {
            sb.append("<tr><td colspan=\"").append(visible).append("\">(no rows)</td></tr>\n");
        }
        sb.append("</tbody>\n</table></div>\n");
    }

    /** Whether column {@code i} holds one value (as printed) in every row. */
    private static boolean constant(final List<List<Object>> rows, final int i) {
        final String first = rows.get(0).size() > i ? Text.cell(rows.get(0).get(i)) : null;
        for (final List<Object> row : rows) {
            if (row.size() <= i || !Text.cell(row.get(i)).equals(first)) {
                return false;
            }
        }
        return true;
    }
}
