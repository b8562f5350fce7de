/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * Report folders for experiments and perf runs: {@link io.gdrkit.labs.report.Report} holds a title,
 * header facts (command line, date, host, what was simulated) and sections with text, a table and charts, and
 * writes them as {@code report.md}, {@code report.json} and one self-contained {@code report.html} whose charts are
 * inline SVG drawn here. {@link io.gdrkit.labs.report.Progress} shows rounds done, rate and ETA of a long run on
 * stderr.
 */
package io.gdrkit.labs.report;
