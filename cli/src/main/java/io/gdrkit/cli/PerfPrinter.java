/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.perf.PerfListener;
import io.gdrkit.labs.perf.PerfUnits;

import io.gdrkit.labs.perf.BwResult;
import io.gdrkit.labs.perf.LatResult;
import io.gdrkit.labs.perf.PerfConfig;
import io.gdrkit.labs.perf.PerfReport;
import io.gdrkit.labs.perf.PerfKind;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** Prints perf results as perftest's table (its exact column headers) or as one JSON object per row. */
final class PerfPrinter implements PerfListener {
    /**
     * perftest's column headers, spacing included (its RESULT_FMT and RESULT_FMT_G); every value of a row starts
     * under its header's first character, so the table stays aligned for 7-digit sizes and large figures.
     */
    static final String BW_HEADER = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   "
        + "MsgRate[Mpps]";
    static final String BW_HEADER_GBITS = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
        + "MsgRate[Mpps]";
    /**
     * perftest's RESULT_FMT_LAT with one more space after #bytes: perftest's own leaves 7 characters for the size,
     * so its 7-digit sizes (-a reaches 8388608) run into #iterations.
     */
    static final String LAT_HEADER = " #bytes  #iterations    t_min[usec]    t_max[usec]  t_typical[usec]"
        + "    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]";
    private static final String[] BW_COLS = {"#bytes", "#iterations", "BW peak[", "BW average[", "MsgRate[Mpps]"};
    private static final String[] LAT_COLS = {"#bytes", "#iterations", "t_min[usec]", "t_max[usec]",
        "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]"};

    private static final ObjectMapper JSON = new ObjectMapper();

    private final PrintWriter out;
    private final boolean json;
    private final boolean gbits;
    /** With --report: gets every result row and comment line as well. */
    private PerfReport collector;

    PerfPrinter(final PrintWriter out, final boolean json, final boolean gbits) {
        this.out = out;
        this.json = json;
        this.gbits = gbits;
    }

    boolean json() {
        return json;
    }

    /** Also hands every result and comment to {@code r}, which --report turns into a report folder. */
    PerfPrinter collect(final PerfReport r) {
        collector = r;
        return this;
    }

    /** The header printed and the table not yet ended: notes wait in {@link #deferred} so the rows stay together. */
    private String tableHeader;
    private final java.util.List<String> deferred = new java.util.ArrayList<>();

    /**
     * A comment line ('#'); JSON output carries the same facts in its fields instead. Before the column header it
     * is printed at once; once the header is out it waits until {@link #endTable}, so nothing sits between the
     * header and the rows or between two rows (perftest parsers read a contiguous table).
     */
    void comment(final String line) {
        if (collector != null) {
            collector.note(line);
        }
        if (tableHeader != null && !json) {
            deferred.add(line);
        } else {
            printLine(line);
        }
    }

    /** The column header: a table line, not a note for the report. */
    void header(final PerfKind test) {
        tableHeader = test.bandwidth ? (gbits ? BW_HEADER_GBITS : BW_HEADER) : LAT_HEADER;
        printLine(tableHeader);
    }

    /** Ends the table: the notes that came while it was printed follow it. Idempotent. */
    void endTable() {
        tableHeader = null;
        for (final String l : deferred) {
            printLine(l);
        }
        deferred.clear();
    }

    private void printLine(final String line) {
        if (!json) {
            out.println(line);
            out.flush();
        }
    }

    @Override
    public void bw(final PerfConfig cfg, final BwResult r) {
        if (collector != null) {
            collector.bw(r);
        }
        if (json) {
            final Map<String, Object> m = base(cfg);
            m.put("bytes", r.bytes());
            m.put("iterations", r.iterations());
            m.put("bw_peak_mib_s", round(r.bwPeakMibS()));
            m.put("bw_avg_mib_s", round(r.bwAvgMibS()));
            m.put("msg_rate_mpps", round(r.msgRateMpps()));
            if (gbits) {
                m.put("bw_peak_gbit_s", round(toGbits(r.bwPeakMibS())));
                m.put("bw_avg_gbit_s", round(toGbits(r.bwAvgMibS())));
            }
            print(m);
        } else {
            final double peak = gbits ? toGbits(r.bwPeakMibS()) : r.bwPeakMibS();
            final double avg = gbits ? toGbits(r.bwAvgMibS()) : r.bwAvgMibS();
            row(BW_COLS, Long.toString(r.bytes()), Long.toString(r.iterations()), fmt(peak), fmt(avg),
                String.format(Locale.ROOT, "%.6f", r.msgRateMpps()));
        }
    }

    @Override
    public void lat(final PerfConfig cfg, final LatResult r) {
        if (collector != null) {
            collector.lat(r);
        }
        if (json) {
            final Map<String, Object> m = base(cfg);
            m.put("bytes", r.bytes());
            m.put("iterations", r.iterations());
            m.put("t_min_us", round(r.tMinUs()));
            m.put("t_max_us", round(r.tMaxUs()));
            m.put("t_typical_us", round(r.tTypicalUs()));
            m.put("t_avg_us", round(r.tAvgUs()));
            m.put("t_stdev_us", round(r.tStdevUs()));
            m.put("p99_us", round(r.p99Us()));
            m.put("p999_us", round(r.p999Us()));
            m.put("one_way", cfg.test().halfRoundTrip());
            print(m);
        } else {
            row(LAT_COLS, Long.toString(r.bytes()), Long.toString(r.iterations()), fmt(r.tMinUs()),
                fmt(r.tMaxUs()), fmt(r.tTypicalUs()), fmt(r.tAvgUs()), fmt(r.tStdevUs()), fmt(r.p99Us()),
                fmt(r.p999Us()));
        }
    }

    /** --check's verdict across processes: a note, and its JSON object. */
    @Override
    public void check(final PerfConfig cfg, final io.gdrkit.labs.perf.DataCheck.Result c) {
        comment("# check: " + c.evidence() + " (by " + c.checkBy() + ")");
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("check", c.byteExact() ? "byte-exact" : "mismatch");
        m.put("test", cfg.test().id());
        m.put("bytes", cfg.size());
        m.put("mismatch_at", c.mismatchAt());
        m.put("evidence", c.evidence());
        m.put("check_by", c.checkBy());
        m.put("bidirectional", false);
        m.put("simulated", simulated);
        m.put("fabric", fabric);
        jsonObject(m);
    }

    /** A JSON object (any keys) or, in table mode, nothing: callers print their own table lines. */
    void jsonObject(final Map<String, Object> m) {
        if (json) {
            print(m);
        }
    }

    /** The fabric named in JSON: "injvm", "shm" or "tcp". */
    private String fabric = "injvm";

    PerfPrinter fabric(final String name) {
        fabric = name;
        return this;
    }

    /** Facts the lab reported about the rows (shm_copy_mode ...), in JSON fields; in a table, comment lines. */
    private final Map<String, Object> facts = new LinkedHashMap<>();

    @Override
    public void fact(final String key, final Object value) {
        if (!value.equals(facts.put(key, value))) {
            comment("# " + key + ": " + value);
        }
    }

    /** False for a run on a native device: its JSON then says "simulated": false. */
    private boolean simulated = true;

    /** The QP type the rows ran on (perftest's -c): JSON's "connection" field, said only when not RC. */
    PerfPrinter connection(final String type) {
        connection = type;
        return this;
    }

    private String connection = "RC";

    PerfPrinter simulated(final boolean s) {
        simulated = s;
        return this;
    }

    private Map<String, Object> base(final PerfConfig cfg) {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("test", cfg.test().id());
        m.put("simulated", simulated);
        m.put("fabric", fabric);
        m.put("progress", cfg.progress().name().toLowerCase(Locale.ROOT));
        m.put("qps", cfg.numQps());
        if (!"RC".equals(connection)) {
            m.put("connection", connection);
        }
        m.put("mtu", cfg.mtu());
        m.put("warmup_iters", cfg.warmup()); // per warm-up round
        m.put("warmup_ms", cfg.warmupMs()); // rounds repeated until this long (0: one round)
        if (cfg.bidirectional()) {
            m.put("bidirectional", true); // the row is the sum of both directions, as perftest's -b prints it
        }
        m.putAll(facts);
        return m;
    }

    private void print(final Map<String, Object> m) {
        try {
            out.println(JSON.writeValueAsString(m));
        } catch (final JsonProcessingException e) {
            throw new IllegalStateException("cannot write JSON: " + e.getMessage(), e);
        }
        out.flush();
    }

    /**
     * Values left-aligned under their column's header (each starts where its header does, as perftest's rows
     * do); a value wider than its column still gets one space before the next.
     */
    private void row(final String[] cols, final String... values) {
        final String header = tableHeader != null ? tableHeader : cols.length == BW_COLS.length
            ? (gbits ? BW_HEADER_GBITS : BW_HEADER) : LAT_HEADER;
        out.println(alignRow(header, cols, values));
        out.flush();
    }

    /** {@code values} placed at the start columns of {@code cols} in {@code header}. */
    static String alignRow(final String header, final String[] cols, final String... values) {
        final StringBuilder sb = new StringBuilder();
        int from = 0;
        for (int i = 0; i < values.length; i++) {
            final int at = header.indexOf(cols[i], from);
            from = at + cols[i].length();
            if (sb.length() < at) {
                sb.append(" ".repeat(at - sb.length()));
            } else if (i > 0) {
                sb.append(' ');
            }
            sb.append(values[i]);
        }
        return sb.toString();
    }

    static double toGbits(final double mibPerSec) {
        return PerfUnits.toGbits(mibPerSec);
    }

    static String fmt(final double v) {
        return PerfUnits.fmt(v);
    }

    private static double round(final double v) {
        return Math.round(v * 1000.0) / 1000.0;
    }
}
