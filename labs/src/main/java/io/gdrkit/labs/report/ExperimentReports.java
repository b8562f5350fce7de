/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import io.gdrkit.labs.ordering.OrderingExperiment;

import io.gdrkit.labs.visibility.VisConfig;
import io.gdrkit.labs.visibility.VisResult;
import java.util.List;
import java.util.Locale;

/** The report sections (D8) of the experiments: one row per configuration, failures per configuration as bars. */
public final class ExperimentReports {
    private ExperimentReports() {
    }

    /** The visibility results as a section: table of every configuration and a failures-per-configuration chart. */
    public static void visibility(final Report report, final String processes, final List<VisResult> results) {
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
    public static void ordering(final Report report, final List<OrderingExperiment.Result> results) {
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
