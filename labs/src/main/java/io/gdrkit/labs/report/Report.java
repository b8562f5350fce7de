/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import io.gdrkit.core.host.HostName;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A report of one run: a title, header facts and sections, written as a folder with {@code report.md},
 * {@code report.json}, {@code report.html} (one self-contained page, charts as inline SVG, no scripts) and one
 * {@code chart-N.svg} per chart.
 *
 * <pre>{@code
 * Report r = new Report("gdrkit visibility").command("gdrkit", "visibility", "--readback", "off,on")
 *     .simulated(true, "GPU sim:v100 (simulated), software NIC (simulated)").fact("seed", 7);
 * Section s = r.section("Configurations").text("One row per configuration.").table("readback", "failures");
 * BarChart bars = s.barChart("Failures per configuration", "failed rounds").alertAbove(0);
 * s.row("off", 12); bars.bar("off", 12);
 * ReportFiles files = r.write(Path.of("out/vis"));
 * }</pre>
 *
 * <p>{@link #command} and {@link #simulated} are required before writing: the header always says how the run was
 * started and what in it was simulated (simulated hardware says so everywhere it prints). The date and host
 * default to now and this machine. Not thread-safe: build it on one thread, then write it.
 */
public final class Report {
    public static final String MARKDOWN_FILE = "report.md";
    public static final String JSON_FILE = "report.json";
    public static final String HTML_FILE = "report.html";

    private static final java.util.Set<String> STANDARD_FACTS = java.util.Set.of("command", "date", "host",
        "simulated");

    private final String title;
    private String command;
    private Instant date = Instant.now().truncatedTo(ChronoUnit.SECONDS);
    private String host;
    private Boolean simulated;
    private String simulatedWhat;
    private final Map<String, Object> facts = new LinkedHashMap<>();
    private final List<Section> sections = new ArrayList<>();

    /**
     * @throws IllegalArgumentException if the title is null or blank
     */
    public Report(final String title) {
        this.title = requireText(title, "report title");
    }

    public String title() {
        return title;
    }

    /**
     * The command line that produced the run, e.g. {@code command("gdrkit", "perf", "write_bw", "-a")}; arguments
     * with spaces or shell characters are quoted so that the line can be pasted back into a shell.
     */
    public Report command(final String... argv) {
        if (argv == null || argv.length == 0) {
            throw new IllegalArgumentException("report '" + title + "': command needs at least the program name");
        }
        final StringBuilder sb = new StringBuilder();
        for (final String a : argv) {
            if (a == null) {
                throw new IllegalArgumentException("report '" + title + "': a command argument is null");
            }
            if (!sb.isEmpty()) {
                sb.append(' ');
            }
            sb.append(shellQuote(a));
        }
        command = sb.toString();
        return this;
    }

    /** {@link #command(String...)} from a list. */
    public Report command(final List<String> argv) {
        return command(argv == null ? null : argv.toArray(String[]::new));
    }

    /** When the run happened (default: when this report was created), shown to the second in UTC. */
    public Report date(final Instant when) {
        if (when == null) {
            throw new IllegalArgumentException("report '" + title + "': date must not be null");
        }
        date = when.truncatedTo(ChronoUnit.SECONDS);
        return this;
    }

    /** The machine the run happened on (default: this machine's host name). */
    public Report host(final String name) {
        host = requireText(name, "report '" + title + "': host");
        return this;
    }

    /**
     * Whether the run used simulated hardware, and in words what was simulated (or, when false, what was real),
     * e.g. {@code simulated(true, "software NICs (simulated) on the in-JVM fabric; GPU sim:h200 (simulated)")}.
     *
     * @throws IllegalArgumentException if {@code simulated} is true and {@code what} is blank
     */
    public Report simulated(final boolean simulated, final String what) {
        if (simulated) {
            requireText(what, "report '" + title + "': what was simulated");
        }
        this.simulated = simulated;
        this.simulatedWhat = what == null ? "" : what;
        return this;
    }

    /**
     * Adds a header fact (a setting, a seed, a version); a string, number, boolean or anything with a
     * {@code toString()}. Facts keep the order they were first given in; giving a key again replaces its value.
     *
     * @throws IllegalArgumentException if the key is blank or one of the standard header's: command, date, host,
     *                                  simulated (they have their own methods)
     */
    public Report fact(final String key, final Object value) {
        requireText(key, "report '" + title + "': fact key");
        if (STANDARD_FACTS.contains(key)) {
            throw new IllegalArgumentException("report '" + title + "': '" + key + "' is a standard header fact; "
                + "use " + key + "(...)");
        }
        facts.put(key, value == null || value instanceof String || value instanceof Number
            || value instanceof Boolean ? value : value.toString());
        return this;
    }

    /** Adds a section at the end and returns it. */
    public Section section(final String name) {
        final Section s = new Section(name);
        sections.add(s);
        return s;
    }

    /**
     * Writes the report folder, creating it (and its parents) if needed and replacing report files already there
     * (including an earlier report's surplus chart-N.svg files).
     * Everything is rendered before the first file is written, so a bad chart never leaves half a folder.
     *
     * @throws IllegalStateException if {@link #command} or {@link #simulated} was not given
     * @throws IOException           naming the folder and the reason, if it cannot be created or written
     */
    public ReportFiles write(final Path dir) throws IOException {
        if (dir == null) {
            throw new IllegalArgumentException("report '" + title + "': no folder to write into");
        }
        final String md = markdown();
        final String json = json();
        final String html = html();
        final List<String> svgs = new ArrayList<>();
        for (final Chart c : charts()) {
            svgs.add(Svg.render(c));
        }
        final Path md1 = dir.resolve(MARKDOWN_FILE);
        final Path json1 = dir.resolve(JSON_FILE);
        final Path html1 = dir.resolve(HTML_FILE);
        final List<Path> chartFiles = new ArrayList<>();
        try {
            Files.createDirectories(dir);
            Files.writeString(md1, md, StandardCharsets.UTF_8);
            Files.writeString(json1, json, StandardCharsets.UTF_8);
            Files.writeString(html1, html, StandardCharsets.UTF_8);
            for (int i = 0; i < svgs.size(); i++) {
                final Path p = dir.resolve(chartFileName(i + 1));
                Files.writeString(p, svgs.get(i), StandardCharsets.UTF_8);
                chartFiles.add(p);
            }
            // charts of an earlier report in this folder beyond this one's count would look like part of it
            for (int n = svgs.size() + 1; Files.deleteIfExists(dir.resolve(chartFileName(n))); n++) {
                // deleted
            }
        } catch (final IOException e) {
            throw new IOException("cannot write report '" + title + "' into " + dir + ": " + reason(e), e);
        }
        return new ReportFiles(dir, md1, json1, html1, chartFiles);
    }

    /** The Markdown text of report.md. */
    public String markdown() {
        checkHeader();
        return MarkdownWriter.render(this);
    }

    /** The JSON text of report.json. */
    public String json() {
        checkHeader();
        return JsonWriter.render(this);
    }

    /** The page of report.html. */
    public String html() {
        checkHeader();
        return HtmlWriter.render(this);
    }

    // --- for the writers

    String commandLine() {
        return command;
    }

    Instant date() {
        return date;
    }

    String hostName() {
        return host != null ? host : HostName.get();
    }

    boolean isSimulated() {
        return simulated;
    }

    String simulatedWhat() {
        return simulatedWhat;
    }

    Map<String, Object> facts() {
        return Collections.unmodifiableMap(facts);
    }

    List<Section> sections() {
        return Collections.unmodifiableList(sections);
    }

    /** Every chart in section order; chart i (1-based) is written to {@link #chartFileName(int)}. */
    List<Chart> charts() {
        final List<Chart> all = new ArrayList<>();
        for (final Section s : sections) {
            all.addAll(s.charts());
        }
        return all;
    }

    static String chartFileName(final int number) {
        return "chart-" + number + ".svg";
    }

    /** The header as the page and the Markdown show it: command, date, host, simulated, then the facts. */
    Map<String, String> header() {
        final Map<String, String> h = new LinkedHashMap<>();
        h.put("command", command);
        h.put("date", date.toString());
        h.put("host", hostName());
        h.put("simulated", simulatedLine());
        for (final Map.Entry<String, Object> f : facts.entrySet()) {
            h.put(f.getKey(), Text.cell(f.getValue()));
        }
        return h;
    }

    /** The header line that says what was simulated, the same words in every format. */
    String simulatedLine() {
        if (simulated) {
            return "true \u2014 " + simulatedWhat;
        }
        return simulatedWhat.isBlank() ? "false" : "false \u2014 " + simulatedWhat;
    }

    private void checkHeader() {
        if (command == null) {
            throw new IllegalStateException("report '" + title + "': give the command line with command(...) "
                + "before writing");
        }
        if (simulated == null) {
            throw new IllegalStateException("report '" + title + "': say what was simulated with "
                + "simulated(true|false, what) before writing");
        }
    }

    static String requireText(final String s, final String what) {
        if (s == null || s.isBlank()) {
            throw new IllegalArgumentException(what + " must not be empty");
        }
        return s;
    }

    /** Single-quotes an argument the way a POSIX shell reads it back, unless it is plain. */
    static String shellQuote(final String a) {
        if (!a.isEmpty() && a.chars().allMatch(c -> c < 128 && (Character.isLetterOrDigit(c)
            || "-_./:=,@%+".indexOf(c) >= 0))) {
            return a;
        }
        return "'" + a.replace("'", "'\\''") + "'";
    }

    /** The filesystem's reason in words: AccessDeniedException's message is only the path. */
    private static String reason(final IOException e) {
        if (e instanceof AccessDeniedException a) {
            return "permission denied: " + a.getFile();
        }
        if (e instanceof FileAlreadyExistsException f) {
            return f.getFile() + " exists and is not a folder";
        }
        if (e instanceof FileSystemException f) {
            return (f.getFile() != null ? f.getFile() + ": " : "") + (f.getReason() != null ? f.getReason()
                : e.getClass().getSimpleName());
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }
}
