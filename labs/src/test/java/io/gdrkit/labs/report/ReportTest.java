/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report folder: files, JSON content, HTML self-containment and escaping, Markdown tables, bad input. */
class ReportTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** User text that is markup in every one of the three formats. */
    private static final String NASTY = "<script>alert(\"a&b\")</script> | *x* _y_";

    /** A report shaped like the visibility experiment's: one row per configuration, failures as bars. */
    private static Report visibility() {
        final Report r = new Report("gdrkit visibility").command("gdrkit", "visibility", "--readback", "off,on")
            .date(Instant.parse("2026-01-02T03:04:05.678Z")).host("testhost")
            .simulated(true, "GPU sim:v100 (simulated), software NIC (simulated)").fact("seed", 7)
            .fact("rounds", 100);
        final Section s = r.section("Configurations").text("One row per configuration.")
            .table("gpu", "ordering", "readback", "size", "rounds", "failures", "first_failure", "what");
        final BarChart bars = s.barChart("Failures per configuration", "failed rounds").alertAbove(0);
        s.row("sim:v100", "NONE", "off", 4096, 100, 37, "round 3 position 17", "stale");
        bars.bar("sim:v100 NONE off", 37);
        s.row("sim:v100", "NONE", "on", 4096, 100, 0, null, "");
        bars.bar("sim:v100 NONE on", 0);
        final Section perf = r.section("Latency");
        final LineChart c = perf.lineChart("Latency vs size", "bytes", "usec").log2X();
        for (int e = 1; e <= 20; e++) {
            c.point("p50", 1 << e, 2 + e * 0.5);
            c.point("p99", 1 << e, 5 + e);
        }
        return r;
    }

    @Test
    void writesTheFolderAndReturnsThePaths(@TempDir final Path tmp) throws IOException {
        final Path dir = tmp.resolve("a/b/report");
        final ReportFiles f = visibility().write(dir);
        assertEquals(dir.resolve("report.md"), f.markdown());
        assertEquals(dir.resolve("report.json"), f.json());
        assertEquals(dir.resolve("report.html"), f.html());
        assertEquals(List.of(dir.resolve("chart-1.svg"), dir.resolve("chart-2.svg")), f.charts());
        for (final Path p : f.all()) {
            assertTrue(Files.size(p) > 100, p::toString);
        }
        // written again into the same folder: replaced, not refused, and no chart left from the earlier report
        final Report one = new Report("one chart").command("gdrkit").simulated(false, "");
        one.section("s").barChart("b", "v").bar("x", 1);
        assertEquals(List.of(dir.resolve("chart-1.svg")), one.write(dir).charts());
        assertFalse(Files.exists(dir.resolve("chart-2.svg")));
        assertTrue(Files.readString(dir.resolve("report.html")).contains("one chart"));
    }

    @Test
    void jsonHasTheSameDataWithRowsKeyedByColumn(@TempDir final Path tmp) throws IOException {
        final JsonNode j = JSON.readTree(visibility().write(tmp).json().toFile());
        assertEquals("gdrkit-report/1", j.get("format").asText());
        assertEquals("gdrkit visibility", j.get("title").asText());
        assertEquals("gdrkit visibility --readback off,on", j.get("command").asText());
        assertEquals("2026-01-02T03:04:05Z", j.get("date").asText());
        assertEquals("testhost", j.get("host").asText());
        assertTrue(j.get("simulated").isBoolean() && j.get("simulated").asBoolean());
        assertTrue(j.get("simulated_what").asText().contains("sim:v100"));
        assertEquals(7, j.get("facts").get("seed").asInt());
        final JsonNode s = j.get("sections").get(0);
        assertEquals("Configurations", s.get("name").asText());
        assertEquals(8, s.get("columns").size());
        assertEquals(2, s.get("rows").size());
        final JsonNode row = s.get("rows").get(0);
        assertTrue(row.get("failures").isInt() && row.get("failures").asInt() == 37, row::toString);
        assertEquals("stale", row.get("what").asText());
        assertTrue(s.get("rows").get(1).get("first_failure").isNull());
        final JsonNode bar = s.get("charts").get(0);
        assertEquals("bar", bar.get("type").asText());
        assertEquals(37, bar.get("bars").get(0).get("value").asInt());
        assertEquals(0.0, bar.get("alert_above").asDouble());
        final JsonNode line = j.get("sections").get(1).get("charts").get(0);
        assertEquals("line", line.get("type").asText());
        assertTrue(line.get("log2_x").asBoolean());
        assertEquals(2, line.get("series").size());
        assertEquals(20, line.get("series").get(0).get("points").size());
        assertEquals(2, line.get("series").get(0).get("points").get(0).get("x").asInt());
    }

    @Test
    void jsonWritesNonFiniteNumbersAsNull() throws IOException {
        final Report r = new Report("t").command("gdrkit").simulated(false, "");
        r.section("s").table("a", "b", "c").row(Double.NaN, 0.1f, 3L);
        final JsonNode row = JSON.readTree(r.json()).get("sections").get(0).get("rows").get(0);
        assertTrue(row.get("a").isNull(), row::toString);
        assertEquals("0.1", row.get("b").asText());
        assertEquals(3, row.get("c").asLong());
        assertTrue(r.markdown().contains("| n/a | 0.1 | 3 |"), r::markdown);
    }

    @Test
    void htmlIsSelfContainedWithAnSvgPerChart(@TempDir final Path tmp) throws IOException {
        final String html = Files.readString(visibility().write(tmp).html());
        assertTrue(html.startsWith("<!DOCTYPE html>"), html);
        assertEquals(2, count(html, "<svg "), "one inline SVG per chart");
        for (final String external : new String[] {"<script", "<link", "@import", "url(", "src=", "href=\"http"}) {
            assertFalse(html.contains(external), () -> "the page must not load anything: " + external);
        }
        // the only URL is the SVG namespace, which names and does not load
        final Matcher m = Pattern.compile("https?://[^\"]*").matcher(html);
        while (m.find()) {
            assertEquals("http://www.w3.org/2000/svg", m.group());
        }
        assertTrue(html.contains("Simulated</strong>: GPU sim:v100 (simulated), software NIC (simulated)"));
        assertTrue(html.contains("<td class=\"n\">37</td>"), "numbers right-aligned");
        assertTrue(html.contains("fill=\"#D62728\""), "a failing configuration drawn in the alert colour");
    }

    @Test
    void aStatusColumnIsColouredInHtmlOnly() {
        final Report r = new Report("t").command("gdrkit").simulated(true, "x");
        r.section("doctor").table("layer", "check", "status", "evidence").statusColumn("status")
            .row("GPU", "116", "PASS", "attribute 116 = 1").row("verbs", "port", "FAIL", "DOWN")
            .row("topology", "distance", "BLOCKED", "no pair").row("platform", "IOMMU", "UNKNOWN", "groups");
        final String html = r.html();
        assertTrue(html.contains("<td class=\"st st-pass\">PASS</td>"), html);
        assertTrue(html.contains("<td class=\"st st-fail\">FAIL</td>"), html);
        assertTrue(html.contains("<td class=\"st st-warn\">BLOCKED</td>"), html);
        assertTrue(html.contains("<td class=\"st st-unknown\">UNKNOWN</td>"), html);
        assertTrue(html.contains("<td>attribute 116 = 1</td>"), "other columns are plain");
        assertTrue(r.markdown().contains("| GPU | 116 | PASS | attribute 116 = 1 |"), r::markdown);
        assertEquals(1, count(html, "<th>status</th>"), "one header row");
        assertThrows(IllegalArgumentException.class, () -> r.section("x").table("a").statusColumn("b"));
        assertThrows(IllegalStateException.class, () -> r.section("y").statusColumn("a"));
    }

    @Test
    void userTextIsEscapedEverywhere(@TempDir final Path tmp) throws Exception {
        final Report r = new Report(NASTY).command("gdrkit", NASTY).simulated(true, NASTY).fact(NASTY, NASTY);
        final Section s = r.section(NASTY).text(NASTY).table(NASTY, "n").row(NASTY, 1);
        s.barChart(NASTY, NASTY).bar(NASTY, 1);
        s.lineChart(NASTY, NASTY, NASTY).point(NASTY, 1, 2);
        final ReportFiles f = r.write(tmp);
        final String html = Files.readString(f.html());
        assertFalse(html.contains("<script"), "no raw markup from user text");
        assertFalse(html.contains("\"a&b\""));
        assertTrue(html.contains("&lt;script&gt;alert(&quot;a&amp;b&quot;)&lt;/script&gt;"), html);
        final String md = Files.readString(f.markdown());
        // every markup character backslash-escaped, in the title, facts, heading, paragraph, cells and image texts
        final String escaped = "\\<script\\>alert(\"a\\&b\")\\</script\\> \\| \\*x\\* \\_y\\_";
        assertEquals(11, count(md, escaped), md);
        assertFalse(md.replace(escaped, "").contains("<"), md);
        // every chart file is well-formed XML with the text intact
        for (final Path svg : f.charts()) {
            final var doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(svg.toFile());
            assertTrue(doc.getDocumentElement().getTextContent().contains(NASTY), svg::toString);
        }
    }

    @Test
    void markdownTableIsExact() {
        final Report r = new Report("T").command("gdrkit", "x y").date(Instant.parse("2026-01-02T03:04:05Z"))
            .host("h").simulated(false, "");
        r.section("S").text("# not a heading\nsecond line").table("name", "bytes", "note")
            .row("a|b", 4096, null).row("c", 2.5, "ok");
        r.section("Empty").table("x");
        assertEquals("""
            # T

            - **command:** gdrkit 'x y'
            - **date:** 2026-01-02T03:04:05Z
            - **host:** h
            - **simulated:** false

            ## S

            \\# not a heading second line

            | name | bytes | note |
            | --- | ---: | --- |
            | a\\|b | 4096 |  |
            | c | 2.5 | ok |

            ## Empty

            | x |
            | --- |

            (no rows)
            """, r.markdown());
    }

    @Test
    void chartsAreImagesInMarkdown() {
        final String md = visibility().markdown();
        assertTrue(md.contains("![Failures per configuration](chart-1.svg)"), md);
        assertTrue(md.contains("![Latency vs size](chart-2.svg)"), md);
    }

    @Test
    void badInputIsRefusedClearly(@TempDir final Path tmp) throws IOException {
        assertEquals("report title must not be empty",
            assertThrows(IllegalArgumentException.class, () -> new Report(" ")).getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Report(null));
        final Report r = new Report("r");
        assertThrows(IllegalArgumentException.class, () -> r.section(""));
        final Section s = r.section("s");
        assertTrue(assertThrows(IllegalStateException.class, () -> s.row(1)).getMessage()
            .contains("row() before table(columns)"));
        s.table("a", "b", "c");
        final String wrong = assertThrows(IllegalArgumentException.class, () -> s.row(1, 2)).getMessage();
        assertEquals("section 's': row 1 has 2 values but the table has 3 columns [a, b, c]", wrong);
        assertThrows(IllegalStateException.class, () -> s.table("d"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> r.section("t").table("a", "a")).getMessage()
            .contains("column 'a' appears twice"));
        assertThrows(IllegalArgumentException.class, () -> s.barChart("b", "v").bar("x", -1));
        assertThrows(IllegalArgumentException.class, () -> s.barChart("b", "v").bar("x", Double.NaN));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> s.lineChart("l", "x", "y").log2X()
            .point("s", 0, 1)).getMessage().contains("log x axis, which needs values > 0"));
        assertThrows(IllegalArgumentException.class, () -> s.lineChart("l", "x", "y").point("s", 1, 1).logY()
            .point("s", 2, 0));
        assertThrows(IllegalArgumentException.class, () -> s.lineChart("l", "x", "y").point("s", Double.NaN, 1));
        assertThrows(IllegalArgumentException.class, () -> r.simulated(true, " "));
        assertThrows(IllegalArgumentException.class, () -> r.command());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> r.fact("host", "x")).getMessage()
            .contains("use host(...)"));

        // the header must say how the run started and what was simulated
        assertTrue(assertThrows(IllegalStateException.class, () -> r.write(tmp)).getMessage().contains("command"));
        r.command("gdrkit");
        assertTrue(assertThrows(IllegalStateException.class, () -> r.write(tmp)).getMessage()
            .contains("what was simulated"));
        r.simulated(true, "everything");

        // a folder that cannot be made: its parent is a file (root ignores permission bits, a file is a file)
        final Path file = Files.writeString(tmp.resolve("plain-file"), "x");
        final IOException e = assertThrows(IOException.class, () -> r.write(file.resolve("report")));
        assertTrue(e.getMessage().startsWith("cannot write report 'r' into " + file.resolve("report") + ": "),
            e::getMessage);
        assertFalse(Files.exists(file.resolve("report")));
    }

    @Test
    void emptyChartsSayNoData() {
        final Report r = new Report("e").command("gdrkit").simulated(false, "");
        final Section s = r.section("s");
        s.barChart("no bars", "v");
        s.lineChart("no points", "x", "y").log2X().logY();
        final String html = r.html();
        assertEquals(2, count(html, ">no data</text>"), html);
    }

    @Test
    void numbersAndAxisLabels() {
        assertEquals("3", Text.number(3));
        assertEquals("2.5", Text.number(2.5));
        assertEquals("0.333", Text.number(1.0 / 3));
        assertEquals("0.0000123", Text.number(0.0000123));
        assertEquals("0.0000742", Text.number(7.42e-05));
        assertEquals("n/a", Text.number(Double.POSITIVE_INFINITY));
        assertEquals("0", Text.number(-0.0));
        assertEquals("1Ki", Svg.pow2Label(10));
        assertEquals("8Mi", Svg.pow2Label(23));
        assertEquals("2Gi", Svg.pow2Label(31));
        assertEquals("0.5", Svg.pow2Label(-1));
        assertEquals("12k", Svg.compact(12_000));
        assertEquals("3.5M", Svg.compact(3_500_000));
        assertEquals("1e-6", Svg.pow10Label(-6));
        assertEquals(List.of(0.0, 20.0, 40.0, 60.0, 80.0, 100.0), boxed(Svg.niceTicks(0, 97, 6)));
        assertEquals(List.of(0.0, 0.2, 0.4, 0.6, 0.8, 1.0), boxed(Svg.niceTicks(0, 1, 6)));
        assertEquals("plain-arg_1.2=x,y", Report.shellQuote("plain-arg_1.2=x,y"));
        assertEquals("'it'\\''s here'", Report.shellQuote("it's here"));
        assertEquals("''", Report.shellQuote(""));
    }

    @Test
    void tinyNumbersAreFixedDecimalsInEveryTable() {
        final Report r = new Report("coll").command("gdrkit").simulated(true, "software NICs");
        r.section("8. Collectives").table("size", "busbw(GB/s)").row(8, 7.42e-05).row(2097152, 1.5);
        final String html = r.html();
        final String table = html.substring(html.indexOf("<table class=\"data\">"), html.lastIndexOf("</table>"));
        final String md = r.markdown().lines().filter(l -> l.startsWith("|")).reduce("", (a, b) -> a + b + "\n");
        for (final String text : List.of(table, md)) {
            assertTrue(text.contains("0.0000742"), text);
            assertFalse(Pattern.compile("\\d[eE][-+]?\\d").matcher(text).find(), "no exponent in the table: " + text);
        }
    }

    @Test
    void tableOfContentsNumbersSectionsOnce() {
        final Report own = new Report("demo").command("gdrkit demo").simulated(true, "everything");
        own.section("1. Verbs").text("a");
        own.section("2-3. Doctor").text("b");
        own.section("2b. NCCL settings").text("c");
        own.section("4. GDR and host bounce").text("d");
        final String html = own.html();
        final String nav = html.substring(html.indexOf("<nav>"), html.indexOf("</nav>"));
        assertFalse(nav.contains("<ol>"), "names carry their numbers: no second numbering " + nav);
        assertTrue(nav.contains(">4. GDR and host bounce</a>"), nav);
        assertEquals(1, count(html, "4. GDR and host bounce</a>"), html);

        final Report plain = new Report("plain").command("gdrkit").simulated(false, "");
        plain.section("Alpha").text("a");
        plain.section("Beta").text("b");
        plain.section("Gamma").text("c");
        final String p = plain.html();
        assertTrue(p.substring(p.indexOf("<nav>"), p.indexOf("</nav>")).contains("<ol>"), "unnumbered names: numbered list");
    }

    @Test
    void noneReadsNoneAndKeepsTheColumnNumeric() throws IOException {
        final Report r = new Report("ordering").command("gdrkit ordering").simulated(true, "software NICs");
        r.section("Ordering").table("variant", "first_corrupted_trial").row("one-qp", Section.NONE).row("two-qp", 17);
        final String html = r.html();
        assertTrue(html.contains("<td class=\"n\">none</td>"), html);
        assertTrue(html.contains("<td class=\"n\">17</td>"), html);
        assertFalse(html.contains(">-1<"), html);
        final String md = r.markdown();
        assertTrue(md.contains("| one-qp | none |"), md);
        assertTrue(md.contains(" ---: |"), md);
        final JsonNode row = JSON.readTree(r.json()).get("sections").get(0).get("rows").get(0);
        assertTrue(row.get("first_corrupted_trial").isNull(), row.toString());
    }

    @Test
    void orderingSectionSaysNoneForNoCorruptedTrial() {
        final Report r = new Report("ordering").command("gdrkit ordering").simulated(true, "software NICs");
        final var cfg = new io.gdrkit.labs.ordering.OrderingExperiment.Config(
            io.gdrkit.labs.ordering.OrderingExperiment.Variant.ONE_QP).trials(10).conclude();
        ExperimentReports.ordering(r, List.of(new io.gdrkit.labs.ordering.OrderingExperiment.Result(cfg, 0, -1, -1,
            0, 0, 0, 0, 0, io.gdrkit.labs.ordering.OrderingExperiment.Verdict.PASS)));
        final String md = r.markdown();
        assertTrue(md.contains("| 10 | 0 | none |"), md);
        assertFalse(md.contains("| -1 |"), md);
    }

    @Test
    void wideTablesScrollInsideThePage() {
        final String html = visibility().html();
        assertTrue(html.contains(".scroll{overflow-x:auto"), "the wrapper scrolls sideways");
        assertEquals(count(html, "<table"), count(html, "<div class=\"scroll\"><table"), "every table is wrapped");
    }

    @Test
    void aWideTableSaysItsConstantColumnsOnceAboveItInHtmlOnly() {
        final Report r = new Report("t").command("gdrkit").simulated(true, "x");
        final String[] cols = new String[HtmlWriter.WIDE_COLUMNS + 2];
        for (int i = 0; i < cols.length; i++) {
            cols[i] = "c" + i;
        }
        final Section s = r.section("wide").table(cols).statusColumn("c1");
        final Object[] a = new Object[cols.length];
        final Object[] b = new Object[cols.length];
        for (int i = 0; i < cols.length; i++) {
            a[i] = i % 2 == 0 ? "same" + i : "a" + i;
            b[i] = i % 2 == 0 ? "same" + i : "b" + i;
        }
        a[1] = "PASS";
        b[1] = "PASS"; // the status column stays a column even when every row agrees
        s.row(a).row(b);
        final String html = r.html();
        assertTrue(html.contains("<p class=\"same\">The same in every row: c0 <code>same0</code>, c2 <code>same2</code>"),
            html);
        assertTrue(html.contains("<thead><tr><th>c1</th><th>c3</th><th>c5</th>"), html);
        assertFalse(html.contains("<th>c0</th>"), html);
        assertTrue(html.contains("<tr><td class=\"st st-pass\">PASS</td><td>a3</td><td>a5</td>"), html);
        // markdown and JSON keep every column
        assertTrue(r.markdown().contains("| same0 | PASS | same2 | a3 |"), r::markdown);
        // a narrow table keeps its constant columns
        final Report n = new Report("t").command("gdrkit").simulated(true, "x");
        n.section("narrow").table("a", "b").row("x", 1).row("x", 2);
        assertTrue(n.html().contains("<thead><tr><th>a</th><th>b</th></tr></thead>"), n::html);
        assertFalse(n.html().contains("The same in every row"), n::html);
    }

    private static List<Double> boxed(final double[] v) {
        return java.util.Arrays.stream(v).map(d -> Math.round(d * 1e9) / 1e9).boxed().toList();
    }

    private static int count(final String s, final String what) {
        int n = 0;
        for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) {
            n++;
        }
        return n;
    }
}
