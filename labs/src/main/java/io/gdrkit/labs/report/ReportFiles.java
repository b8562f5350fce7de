/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What {@link Report#write(Path)} wrote: the folder, its three report files, and one SVG file per chart (which
 * report.md shows as images; report.html has the same charts inline).
 */
public record ReportFiles(Path dir, Path markdown, Path json, Path html, List<Path> charts) {
    public ReportFiles {
        charts = List.copyOf(charts);
    }

    /** Every file written, the three report files first. */
    public List<Path> all() {
        final List<Path> all = new ArrayList<>(List.of(markdown, json, html));
        all.addAll(charts);
        return List.copyOf(all);
    }
}
