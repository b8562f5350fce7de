/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.ordering.OrderingExperiment;
import io.gdrkit.labs.report.ExperimentReports;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gdrkit.labs.ordering.OrderingExperiment.Config;
import io.gdrkit.labs.ordering.OrderingExperiment.Result;
import io.gdrkit.labs.ordering.OrderingExperiment.Variant;
import io.gdrkit.labs.ordering.OrderingExperiment.Verdict;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code gdrkit ordering}: put-then-flag under adaptive-routing-like reordering. One line (or one JSON object)
 * per variant with the corrupted reads the receiver measured.
 */
@Command(name = "ordering", mixinStandardHelpOptions = true,
    description = {"Ordering lab: RDMA WRITE of data, then a flag; the receiver polls the flag, reads the data "
        + "and counts corrupted reads. Variants: two QPs, one QP, WRITE_WITH_IMM, fences, completion-ordered.",
        "Software NICs (simulated) on an in-JVM fabric that reorders packets between QPs; seeded, on virtual time."})
public final class OrderingCommand implements Callable<Integer> {
    /** Appended to every result line. */
    static final String SIM = "[software NIC (simulated), in-JVM fabric]";

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--variants", split = ",",
        defaultValue = "two-qp,one-qp,imm,fence,fence-two-qp,read-fence,completion",
        description = "Variants to run, in order (default ${DEFAULT-VALUE}).")
    List<String> variants;

    @Option(names = "--trials", description = "Trials per variant (default " + Config.DEFAULT_TRIALS + ").")
    Integer trials;

    @Option(names = "--size", converter = Sizes.IntConverter.class,
        description = "Data bytes per trial (K, M or G allowed), 1.." + OrderingExperiment.MAX_SIZE + " (default " + Config.DEFAULT_SIZE
            + "; MTU 4096).")
    Integer size;

    @Option(names = "--reorder",
        description = "Probability that a packet is held so packets of other QPs pass it (default "
            + Config.DEFAULT_REORDER + ").")
    Double reorder;

    @Option(names = "--reorder-us",
        description = "Longest hold of a reordered packet, microseconds of virtual time (default "
            + Config.DEFAULT_REORDER_MICROS + ").")
    Double reorderMicros;

    @Option(names = "--reorder-within-qp",
        description = "Let packets of one QP pass each other too (a multi-path QP); RC's PSN check then NAKs and "
            + "retransmits.")
    boolean reorderWithinQp;

    @Option(names = "--seed",
        description = "Seed of the fabric's reordering, the agents' interleaving and the pattern (default "
            + Config.DEFAULT_SEED + ").")
    Long seed;

    @Option(names = "--expect", paramLabel = "VARIANT=corrupt|clean,...", split = ",",
        description = "The outcome each variant must have, e.g. two-qp=corrupt,one-qp=clean (corrupt: at least one "
            + "corrupted read; clean: none): a variant that differs makes the exit code 1 (for CI); without it the "
            + "exit code is 1 only when an ordered variant read corrupted data.")
    List<String> expect;

    /** report.html with corrupted reads per variant. */
    @CommandLine.Mixin
    Mixins.Report reportOption;

    /**
     * native: a real RDMA device found and opened; the experiment itself runs on software NICs only, so it then
     * ends named NOT_BUILT.
     */
    @CommandLine.Mixin
    Mixins.Provider providerOption;

    @CommandLine.Mixin
    Mixins.Json jsonOption;

    @CommandLine.Mixin
    Mixins.SetValues set;

    private java.nio.file.Path reportDir;
    private boolean json;

    @Override
    public Integer call() {
        reportDir = reportOption.dir;
        json = jsonOption.json;
        if (!NativeOnly.soft(spec.commandLine(), providerOption)) {
            return NativeOnly.run(spec.commandLine(), "ordering", null);
        }
        reportOption.check(spec.commandLine());
        final PrintWriter out = spec.commandLine().getOut();
        final List<Config> configs = new ArrayList<>();
        try {
            for (final String v : variants) {
                // the picocli fields only feed the lab's Context, which owns the defaults and the validation
                final Config c = new Config(Variant.parse(v)).reorderWithinQp(reorderWithinQp);
                if (trials != null) {
                    c.trials(trials);
                }
                if (size != null) {
                    c.size(size);
                }
                if (reorder != null) {
                    c.reorder(reorder);
                }
                if (reorderMicros != null) {
                    c.reorderMicros(reorderMicros);
                }
                if (seed != null) {
                    c.seed(seed);
                }
                configs.add(c.conclude());
            }
        } catch (final IllegalArgumentException e) {
            // a bad option is a usage error (exit 2), said in one line before anything runs
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        final java.util.Map<Variant, Boolean> expected = expectations(spec.commandLine(), expect);
        final ObjectMapper mapper = new ObjectMapper();
        if (!json) {
            final Config c = configs.get(0); // every variant has the same values
            out.println(String.format(Locale.ROOT, "# ordering: put-then-flag, %d trials of %d bytes per variant, "
                    + "reorder=%s reorder-us=%s reorder-within-qp=%s seed=%d %s", c.trials(), c.size(),
                num(c.reorder()), num(c.reorderMicros()), c.reorderWithinQp(), c.seed(), SIM));
        }
        boolean failed = false;
        final List<Result> results = new ArrayList<>();
        final io.gdrkit.labs.report.Progress progress = StderrProgress.open("ordering variants",
            configs.size(), !json && StderrProgress.terminal());
        for (final Config c : configs) {
            final Result r = OrderingExperiment.run(c);
            progress.step();
            results.add(r);
            failed |= r.verdict() == Verdict.FAIL;
            out.println(json ? toJson(mapper, r).toString() : line(r));
            out.flush();
        }
        progress.close();
        if (reportDir != null) {
            final io.gdrkit.labs.report.Report report = ReportOutput.forCommand("gdrkit ordering", spec)
                .simulated(true, "software NICs (simulated) on the in-JVM fabric, virtual time");
            ExperimentReports.ordering(report, results);
            ReportOutput.writeAndPrint(report, reportDir, json, out);
        }
        if (failed) {
            spec.commandLine().getErr().println("gdrkit ordering: a variant that orders the flag after the data "
                + "read corrupted data (verdict FAIL): the software NIC broke an ordering it must keep");
        }
        final List<String> unmet = unmet(expected, results);
        if (!unmet.isEmpty()) {
            spec.commandLine().getErr().println("gdrkit ordering: --expect not met: " + String.join("; ", unmet));
        }
        return failed || !unmet.isEmpty() ? Main.EXIT_FAILURE : 0;
    }

    /** {@code --expect two-qp=corrupt,one-qp=clean} as a map (true: corrupt); a malformed pair is a usage error. */
    static java.util.Map<Variant, Boolean> expectations(final CommandLine cl, final List<String> pairs) {
        final java.util.Map<Variant, Boolean> m = new java.util.EnumMap<>(Variant.class);
        if (pairs == null) {
            return m;
        }
        for (final String p : pairs) {
            final int eq = p.indexOf('=');
            final Variant v;
            try {
                v = Variant.parse(eq < 0 ? p : p.substring(0, eq));
            } catch (final IllegalArgumentException e) {
                throw new CommandLine.ParameterException(cl, "--expect '" + p + "': VARIANT=corrupt|clean with "
                    + "VARIANT one of " + Variant.labels());
            }
            final String want = eq < 0 ? "" : p.substring(eq + 1).trim().toLowerCase(Locale.ROOT);
            if (!want.equals("corrupt") && !want.equals("clean")) {
                throw new CommandLine.ParameterException(cl, "--expect '" + p + "': the outcome is corrupt or clean");
            }
            m.put(v, want.equals("corrupt"));
        }
        return m;
    }

    /** The variants whose outcome differs from what --expect says, and expected variants that did not run. */
    static List<String> unmet(final java.util.Map<Variant, Boolean> expected, final List<Result> results) {
        final List<String> out = new ArrayList<>();
        for (final Result r : results) {
            final Boolean corrupt = expected.get(r.config().variant());
            if (corrupt != null && corrupt != (r.corruptedReads() > 0)) {
                out.add(r.config().variant().label() + " expected " + (corrupt ? "corrupt" : "clean") + ", got "
                    + (r.corruptedReads() > 0 ? "corrupt (" + r.corruptedReads() + " corrupted reads)"
                    : "clean (0 corrupted reads in " + r.config().trials() + " trials)"));
            }
        }
        for (final Variant v : expected.keySet()) {
            if (results.stream().noneMatch(x -> x.config().variant() == v)) {
                out.add(v.label() + " expected but not run (add it to --variants)");
            }
        }
        return out;
    }

    static String line(final Result r) {
        final Config c = r.config();
        return String.format(Locale.ROOT, "variant=%-12s trials=%d corrupted_reads=%d first_corrupted_trial=%s "
                + "stale=%d partial=%d reorder=%s reordered_packets=%d verdict=%s (%s) %s",
            c.variant().label(), c.trials(), r.corruptedReads(),
            r.firstCorruptedTrial() < 0 ? "none" : String.valueOf(r.firstCorruptedTrial()), r.staleReads(),
            r.partialReads(), num(c.reorder()), r.reorderedPackets(), r.verdict(), c.variant().why(), SIM);
    }

    static ObjectNode toJson(final ObjectMapper m, final Result r) {
        final Config c = r.config();
        final ObjectNode o = m.createObjectNode();
        o.put("variant", c.variant().label()).put("how", c.variant().how()).put("trials", c.trials())
            .put("corrupted_reads", r.corruptedReads()).put("first_corrupted_trial", r.firstCorruptedTrial())
            .put("first_bad_offset", r.firstBadOffset()).put("stale_reads", r.staleReads())
            .put("partial_reads", r.partialReads()).put("other_reads", r.otherReads())
            .put("size", c.size()).put("reorder", c.reorder()).put("reorder_us", c.reorderMicros())
            .put("reorder_within_qp", c.reorderWithinQp()).put("reordered_packets", r.reorderedPackets())
            .put("seed", c.seed()).put("runner_steps", r.runnerSteps()).put("ordered", c.variant().ordered())
            .put("verdict", r.verdict().name()).put("why", c.variant().why()).put("simulated", true)
            .put("nic", "software NIC (simulated), in-JVM fabric");
        return o;
    }

    private static String num(final double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }
}
