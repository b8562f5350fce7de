/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.tools;

import io.gdrkit.experiments.visibility.VisConfig;
import io.gdrkit.experiments.visibility.VisResult;
import io.gdrkit.tools.report.BarChart;
import io.gdrkit.tools.report.Report;
import io.gdrkit.tools.report.Section;
import java.util.List;
import java.util.Locale;

/** The report sections (D8) of the experiments: one row per configuration, failures per configuration as bars. */
final class ExperimentReports {
    private ExperimentReports() {
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

    /** The visibility results as a section: table of every configuration and a failures-per-configuration chart. */
    static void visibility(final Report report, final String processes, final List<VisResult> results) {
        final Section s = report.section("Visibility").text("One row per configuration. A check is one (round, "
            + "sender) verification on the device; failures are checks that did not see exactly the round's data "
            + "(stale, partial, reordered, corrupt) or could not run (timeout, launch-failed, error-completion). "
            + "Times are medians of the receiver's wall clock per round (on a simulated GPU they time the "
            + "simulation, not a GPU). Processes: " + processes + "; notifications over TCP.")
            .table("gpu", "ordering", "consumer", "consumer_gpu", "flag", "readback", "poll", "wr_split", "size",
                "senders", "sync_memops", "source", "rounds", "checks", "failures", "first_failing_round",
                "first_failing_position", "what", "round_us_median", "readback_us_median", "verdict");
        final BarChart bars = s.barChart("Failures per configuration", "failed checks").alertAbove(0);
        for (final VisResult r : results) {
            final VisConfig c = r.config();
            s.row(c.gpu(), r.ordering(), low(c.consumer()), c.peerConsumer() ? "peer" : "same", low(c.flag()),
                low(c.readback()), c.simulated() ? "acquire" : low(c.poll()), c.wrSplit(), c.size(), c.senders(),
                c.syncMemops() ? 1 : 0, low(c.source()), r.rounds(), r.checks(), r.failures(), r.firstFailingRound(),
                r.firstFailingPosition(), r.what(), r.roundMicrosMedian(), r.readbackMicrosMedian(),
                r.passed() ? "PASS" : "FAIL");
            bars.bar(label(c), r.failures());
        }
    }

    /** The ordering lab's results as a section. */
    static void ordering(final Report report, final List<OrderingExperiment.Result> results) {
        final Section s = report.section("Ordering (put-then-flag)").text("Corrupted reads: the receiver saw the flag"
            + " and then read data that was not all of this trial's. Measured on the software NIC (simulated) under"
            + " the fabric's reordering, replayed from the seed.")
            .table("variant", "how", "trials", "corrupted_reads", "first_corrupted_trial", "stale", "partial",
                "reorder", "reordered_packets", "verdict");
        final BarChart bars = s.barChart("Corrupted reads per variant", "corrupted reads");
        for (final OrderingExperiment.Result r : results) {
            final OrderingExperiment.Config c = r.config();
            s.row(c.variant().label(), c.variant().how(), c.trials(), r.corruptedReads(), r.firstCorruptedTrial(),
                r.staleReads(), r.partialReads(), c.reorder(), r.reorderedPackets(), r.verdict().name());
            bars.bar(c.variant().label(), r.corruptedReads());
        }
    }

    private static String label(final VisConfig c) {
        return String.format(Locale.ROOT, "%s %s %s%s %s%s %dx%d", c.gpu(), low(c.consumer()), low(c.flag()),
            c.peerConsumer() ? " peer" : "", low(c.readback()), c.simulated() ? "" : " " + low(c.poll()),
            c.senders(), c.size());
    }

    private static String low(final Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
