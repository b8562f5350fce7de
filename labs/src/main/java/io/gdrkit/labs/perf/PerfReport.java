/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.labs.report.LineChart;
import io.gdrkit.labs.report.Report;
import io.gdrkit.labs.report.Section;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.DoubleStream;

/**
 * {@code perf --report DIR}: collects the rows and comment lines a run prints (through the CLI's printer) and
 * turns them into a report with the results table, bandwidth or latency-percentile curves against message size,
 * the baseline if one ran, and the run's notes.
 */
public final class PerfReport {
    /** Above this ratio between the largest and the smallest value a y axis goes logarithmic. */
    private static final double LOG_Y_SPAN = 100;

    private final boolean gbits;
    private final List<BwResult> bw = new ArrayList<>();
    private final List<LatResult> lat = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();

    public PerfReport(final boolean gbits) {
        this.gbits = gbits;
    }

    public void bw(final BwResult r) {
        bw.add(r);
    }

    public void lat(final LatResult r) {
        lat.add(r);
    }

    /** A comment line as printed, e.g. "# faults injected: ..."; kept without its '#'. */
    public void note(final String line) {
        final String t = line.startsWith("#") ? line.substring(1).strip() : line.strip();
        if (!t.isEmpty()) {
            notes.add(t);
        }
    }

    /**
     * The report of the run.
     *
     * @param test     the test, or null for a --baseline-only run
     * @param argv     the command line after "gdrkit"
     * @param simulated what was simulated, in words (null: nothing, a baseline-only run)
     * @param facts    the run's settings, in order
     * @param base     the baseline measured in this run, or null
     */
    public Report build(final PerfKind test, final List<String> argv, final String simulated,
                 final Map<String, Object> facts, final BaselineResult base) {
        final Report r = new Report("gdrkit perf " + (test != null ? test.id() : "--baseline"));
        final List<String> cmd = new ArrayList<>(List.of("gdrkit"));
        cmd.addAll(argv);
        r.command(cmd);
        if (simulated != null) {
            r.simulated(true, simulated);
        } else {
            r.simulated(false, "no NIC and no GPU: MemorySegment.copy and a cache-line ping-pong in this JVM");
        }
        facts.forEach(r::fact);
        if (test != null && test.bandwidth) {
            bandwidth(r.section("Bandwidth"));
        } else if (test != null) {
            latency(r.section("Latency"), test);
        }
        if (base != null) {
            final Section s = r.section("Baseline").text("The machine's own limits, measured in this JVM with no NIC "
                + "involved: single-thread MemorySegment.copy bandwidth by size; the cache-line ping-pong round trip "
                + "between two threads was " + PerfUnits.fmt(base.rttNs()) + " ns (median).")
                .table("bytes", "memcpy_mib_s");
            base.memcpy().forEach((bytes, mib) -> s.row(bytes, mib));
        }
        if (!notes.isEmpty()) {
            final Section s = r.section("Run notes").text("The comment lines the run printed, in order.")
                .table("note");
            notes.forEach(n -> s.row(n));
        }
        return r;
    }

    private void bandwidth(final Section s) {
        s.text("One row per message size, as perftest prints it: peak and average bandwidth in MiB/s "
            + "(2^20 bytes per second) and the message rate in millions of messages per second.");
        if (gbits) {
            s.table("bytes", "iterations", "bw_peak_mib_s", "bw_avg_mib_s", "msg_rate_mpps", "bw_peak_gbit_s",
                "bw_avg_gbit_s");
        } else {
            s.table("bytes", "iterations", "bw_peak_mib_s", "bw_avg_mib_s", "msg_rate_mpps");
        }
        for (final BwResult b : bw) {
            if (gbits) {
                s.row(b.bytes(), b.iterations(), b.bwPeakMibS(), b.bwAvgMibS(), b.msgRateMpps(),
                    PerfUnits.toGbits(b.bwPeakMibS()), PerfUnits.toGbits(b.bwAvgMibS()));
            } else {
                s.row(b.bytes(), b.iterations(), b.bwPeakMibS(), b.bwAvgMibS(), b.msgRateMpps());
            }
        }
        final boolean logBw = span(bw.stream().flatMapToDouble(b -> DoubleStream.of(b.bwAvgMibS(), b.bwPeakMibS()))
            .toArray());
        final LineChart bwc = s.lineChart("Bandwidth vs message size", "message size [bytes]", "MiB/s").log2X();
        final boolean logRate = span(bw.stream().mapToDouble(BwResult::msgRateMpps).toArray());
        final LineChart rate = s.lineChart("Message rate vs message size", "message size [bytes]", "Mpps").log2X();
        if (logBw) {
            bwc.logY();
        }
        if (logRate) {
            rate.logY();
        }
        for (final BwResult b : bw) {
            point(bwc, "BW average", b.bytes(), b.bwAvgMibS());
            point(bwc, "BW peak", b.bytes(), b.bwPeakMibS());
            point(rate, "message rate", b.bytes(), b.msgRateMpps());
        }
    }

    private void latency(final Section s, final PerfKind test) {
        s.text("One row per message size, in microseconds, " + (test.halfRoundTrip() ? "one way (half the round trip)"
            : "round trip") + ", as perftest reports " + test.id() + "; t_typical is the median. The chart leaves "
            + "out t_max, a single outlier that would flatten the other curves.");
        s.table("bytes", "iterations", "t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "p99_us",
            "p999_us");
        for (final LatResult l : lat) {
            s.row(l.bytes(), l.iterations(), l.tMinUs(), l.tMaxUs(), l.tTypicalUs(), l.tAvgUs(), l.tStdevUs(),
                l.p99Us(), l.p999Us());
        }
        final LineChart c = s.lineChart("Latency percentiles vs message size", "message size [bytes]",
            "latency [usec]").log2X();
        final boolean log = span(lat.stream().flatMapToDouble(l -> DoubleStream.of(l.tMinUs(), l.tTypicalUs(),
            l.tAvgUs(), l.p99Us(), l.p999Us())).toArray());
        if (log) {
            c.logY();
        }
        for (final LatResult l : lat) {
            point(c, "min", l.bytes(), l.tMinUs());
            point(c, "median (t_typical)", l.bytes(), l.tTypicalUs());
            point(c, "average", l.bytes(), l.tAvgUs());
            point(c, "p99", l.bytes(), l.p99Us());
            point(c, "p99.9", l.bytes(), l.p999Us());
        }
    }

    /**
     * Only measured points: a non-finite value is left out rather than drawn. (A log axis is only chosen by
     * {@link #span} when every value is positive.)
     */
    private static void point(final LineChart c, final String series, final double x, final double y) {
        if (Double.isFinite(y)) {
            c.point(series, x, y);
        }
    }

    /** True when all values are positive and the largest is more than {@link #LOG_Y_SPAN} times the smallest. */
    private static boolean span(final double[] v) {
        double min = Double.POSITIVE_INFINITY;
        double max = 0;
        for (final double d : v) {
            if (!(d > 0) || !Double.isFinite(d)) {
                return false;
            }
            min = Math.min(min, d);
            max = Math.max(max, d);
        }
        return v.length > 1 && max / min > LOG_Y_SPAN;
    }
}
