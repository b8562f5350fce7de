/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.report.Report;
import java.util.List;

/** The CLI's side of the report folders: titles from the typed command line, and where the HTML page went. */
final class ReportOutput {
    private ReportOutput() {
    }

    /** A report titled after the command, with the command line as it was typed. */
    static Report forCommand(final String title, final picocli.CommandLine.Model.CommandSpec spec) {
        final List<String> cmd = new java.util.ArrayList<>(List.of("gdrkit"));
        cmd.addAll(spec.commandLine().getParseResult().originalArgs());
        return new Report(title).command(cmd);
    }

    /** Writes the report folder and prints where its HTML page is: a comment line, or a JSON object. */
    static void writeAndPrint(final Report report, final java.nio.file.Path dir, final boolean json,
                              final java.io.PrintWriter out) {
        final String html;
        try {
            html = report.write(dir).html().toAbsolutePath().toString();
        } catch (final java.io.IOException e) {
            throw new java.io.UncheckedIOException(e.getMessage(), e);
        }
        out.println(json ? new com.fasterxml.jackson.databind.ObjectMapper().createObjectNode().put("report", html)
            .toString() : "# report: " + html);
        out.flush();
    }
}
