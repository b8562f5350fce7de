/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import io.gdrkit.labs.ordering.OrderingExperiment;
import io.gdrkit.shmem.ShmemPerf;

import io.gdrkit.labs.visibility.VisConfig;
import io.gdrkit.labs.visibility.VisResult;
import java.util.List;
import java.util.Locale;

/** The report sections of the experiments: one row per configuration, failures per configuration as bars. */
public final class ExperimentReports {
    private ExperimentReports() {
    }

    /** The visibility results as a section: table of every configuration and a failures-per-configuration chart. */
    public static void visibility(final Report report, final String processes, final List<VisResult> results) {
        visibility(report, "Visibility", processes, results);
    }

    /** As {@link #visibility(Report, String, List)}, the section named {@code title} ("5. Visibility" in the demo). */
    public static void visibility(final Report report, final String title, final String processes,
                                  final List<VisResult> results) {
        final Section s = report.section(title).text("One row per configuration. A check is one (round, "
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
                c.syncMemops() ? 1 : 0, low(c.source()), r.rounds(), r.checks(), r.failures(), orNone(r.firstFailingRound()),
                orNone(r.firstFailingPosition()), r.what(), r.roundMicrosMedian(), r.readbackMicrosMedian(),
                r.passed() ? "PASS" : "FAIL");
            bars.bar(label(c), r.failures());
        }
    }

    /** The ordering lab's results as a section. */
    public static void ordering(final Report report, final List<OrderingExperiment.Result> results) {
        ordering(report, "Ordering (put-then-flag)", results);
    }

    /** As {@link #ordering(Report, List)}, the section named {@code title}. */
    public static void ordering(final Report report, final String title,
                                final List<OrderingExperiment.Result> results) {
        final Section s = report.section(title).text("Corrupted reads: the receiver saw the flag"
            + " and then read data that was not all of this trial's. Measured on the software NIC (simulated) under"
            + " the fabric's reordering, replayed from the seed.")
            .table("variant", "how", "trials", "corrupted_reads", "first_corrupted_trial", "stale", "partial",
                "reorder", "reordered_packets", "verdict");
        final BarChart bars = s.barChart("Corrupted reads per variant", "corrupted reads");
        for (final OrderingExperiment.Result r : results) {
            final OrderingExperiment.Config c = r.config();
            s.row(c.variant().label(), c.variant().how(), c.trials(), r.corruptedReads(), orNone(r.firstCorruptedTrial()),
                r.staleReads(), r.partialReads(), c.reorder(), r.reorderedPackets(), r.verdict().name());
            bars.bar(c.variant().label(), r.corruptedReads());
        }
    }

    /**
     * A shmem-perf run as sections: its rows (latency per size with a chart, or bandwidth and message rate), the
     * time breakdown with each step's clock-pairing error, and the NIC's doorbell counters (who rang: CPU or GPU).
     */
    public static void shmemPerf(final Report report, final ShmemPerf.Result r) {
        final String mode = r.mode().name().toLowerCase(Locale.ROOT);
        report.fact("test", r.test()).fact("mode", mode).fact("pes", r.nPes()).fact("gpu", r.gpu())
            .fact("device", r.device()).fact("fence_before_doorbell", r.wqeFence()).fact("clock", r.clock());
        final boolean bw = !r.rows().isEmpty() && r.rows().get(0).mibPerSec() > 0;
        final Section rows = report.section(r.test() + " over " + mode).text("Every row byte-checked on the target "
            + "(verified). " + (bw ? "Throughput of all GPU threads together: MiB/s and million operations per "
            + "second." : "Latency per blocking operation, microseconds"
            + (r.test().equals("put_signal_lat") ? " (half the ping-pong's round trip)." : ".")));
        if (bw) {
            rows.table("bytes", "ops", "threads", "mib_per_s", "mops", "verified");
            final LineChart c = rows.lineChart(r.test() + " " + mode, "bytes", "MiB/s");
            for (final ShmemPerf.Row row : r.rows()) {
                rows.row(row.bytes(), row.iters(), row.threads(), row.mibPerSec(), row.mops(), row.verified());
                c.point(mode, row.bytes(), row.mibPerSec());
            }
            c.log2X();
        } else {
            final String l = ShmemPerf.HALF_RTT.equals(r.rows().get(0).latency()) ? "half_rtt_" : "";
            rows.table("bytes", "iters", l + "min_us", l + "median_us", l + "max_us", "verified");
            final LineChart c = rows.lineChart(r.test() + " " + mode + " (median" + (l.isEmpty() ? "" : ", half "
                + "round trip") + ")", "bytes", "us");
            for (final ShmemPerf.Row row : r.rows()) {
                rows.row(row.bytes(), row.iters(), row.minUs(), row.medianUs(), row.maxUs(), row.verified());
                c.point(mode, row.bytes(), row.medianUs());
            }
            c.log2X();
            splitSection(report, r, !l.isEmpty());
        }
        final ShmemPerf.Breakdown b = r.breakdown();
        if (b.samples() > 0) {
            final Section s = report.section("Where the time goes").text("Medians over " + b.samples()
                + " operations of the largest size, microseconds. A step between a GPU stamp and a host stamp "
                + "carries the clock pairing's error (" + String.format(Locale.ROOT, "±%.2f", b.clockPairingErrorUs())
                + " us); a step within it is a bound, never a negative time. Total: issue to completion on one "
                + "clock.").table("step", "median_us", "error_us", "resolved", "reading");
            final BarChart bars = s.barChart("Median per step", "us");
            for (final ShmemPerf.Step st : b.steps()) {
                s.row(st.name(), st.us() == null ? "" : st.us(), st.errorUs(), st.resolved(), st.text());
                bars.bar(st.name(), st.us() == null ? 0 : st.us());
            }
            s.row("total", b.totalUs(), 0.0, true, String.format(Locale.ROOT, "%.2f", b.totalUs()));
        }
        report.section("Who rang the doorbell").text("The software NIC's counters over the run's QPs: doorbells "
            + "rung by a CPU (postSend: the proxy on IBRC) and by the GPU (a new producer index on a queue the GPU "
            + "owns: IBGDA); WQEs refused because the doorbell overtook them (stale).")
            .table("cpu_doorbells", "gpu_doorbells", "stale_wqes")
            .row(r.cpuDoorbells(), r.gpuDoorbells(), r.staleWqes());
    }

    /**
     * The time split per size: total, kernel, communication and CPU-wait per operation (and the proxy's share of the
     * communication on IBRC), with how each was measured, as a table and a chart of the parts against the size.
     */
    private static void splitSection(final Report report, final ShmemPerf.Result r, final boolean roundTrip) {
        if (r.rows().isEmpty() || r.rows().get(0).split() == null) {
            return;
        }
        final ShmemPerf.Split first = r.rows().get(0).split();
        final boolean proxy = first.proxyUs() != null;
        final Section s = report.section("Time split per size").text("Means per operation, microseconds, over "
            + "every operation of the size: total = kernel + comm + cpu_wait" + (roundTrip ? "; comm is the full "
            + "round trip (rtt_us), twice the half_rtt above" : "") + (proxy ? "; proxy is the part of comm before "
            + "the proxy's pick-up, over the last operations whose stamps were held, ± the clock pairing's error"
            : "") + ". Measured: " + first.method() + ".");
        if (proxy) {
            s.table("bytes", "total_us", "kernel_us", roundTrip ? "comm_rtt_us" : "comm_us", "cpu_wait_us",
                "proxy_us", "proxy_error_us", "proxy_samples");
        } else {
            s.table("bytes", "total_us", "kernel_us", roundTrip ? "comm_rtt_us" : "comm_us", "cpu_wait_us");
        }
        final LineChart c = s.lineChart("time split per operation", "bytes", "us");
        for (final ShmemPerf.Row row : r.rows()) {
            final ShmemPerf.Split x = row.split();
            if (proxy) {
                s.row(row.bytes(), x.totalUs(), x.kernelUs(), x.commUs(), x.cpuWaitUs(),
                    x.proxyUs() == null ? "" : x.proxyUs(), x.clockPairingErrorUs(), x.proxySamples());
            } else {
                s.row(row.bytes(), x.totalUs(), x.kernelUs(), x.commUs(), x.cpuWaitUs());
            }
            c.point("total", row.bytes(), x.totalUs());
            c.point("kernel", row.bytes(), x.kernelUs());
            c.point(roundTrip ? "comm (rtt)" : "comm", row.bytes(), x.commUs());
            c.point("cpu-wait", row.bytes(), x.cpuWaitUs());
            if (proxy && x.proxyUs() != null) {
                c.point("proxy", row.bytes(), x.proxyUs());
            }
        }
        c.log2X();
    }

    private static String label(final VisConfig c) {
        return String.format(Locale.ROOT, "%s %s %s%s %s%s %dx%d", c.gpu(), low(c.consumer()), low(c.flag()),
            c.peerConsumer() ? " peer" : "", low(c.readback()), c.simulated() ? "" : " " + low(c.poll()),
            c.senders(), c.size());
    }

    private static String low(final Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** A "first failing ..." index: -1 (nothing failed) reads {@link Section#NONE}. */
    static Object orNone(final long index) {
        return index < 0 ? Section.NONE : (Object) index;
    }
}
