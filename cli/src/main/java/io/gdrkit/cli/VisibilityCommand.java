/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.report.ExperimentReports;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gdrkit.labs.visibility.VisConfig;
import io.gdrkit.labs.visibility.VisConfig.Consumer;
import io.gdrkit.labs.visibility.VisConfig.Flag;
import io.gdrkit.labs.visibility.VisConfig.Injection;
import io.gdrkit.labs.visibility.VisConfig.Poll;
import io.gdrkit.labs.visibility.VisConfig.Readback;
import io.gdrkit.labs.visibility.VisConfig.Source;
import io.gdrkit.labs.visibility.VisResult;
import io.gdrkit.labs.visibility.VisibilityLab;
import io.gdrkit.labs.report.Progress;
import io.gdrkit.labs.report.Report;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code gdrkit visibility}: is data an RDMA WRITE put into GPU memory visible to the GPU's consumer? This process
 * is the receiver; the senders run in other processes (or threads, or hosts). One line (or one JSON object) per
 * configuration of the matrix; every list option multiplies the matrix.
 */
@Command(name = "visibility", mixinStandardHelpOptions = true,
    description = {"Visibility experiment: senders RDMA-WRITE into GPU memory, the receiver does readback "
        + "off/on/flush, a launched or persistent kernel verifies every byte on the device.",
        "The NIC is a software NIC (simulated); the GPU is simulated (sim:*) or real (cuda:N). Every line says which."})
public final class VisibilityCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--gpu", split = ",", defaultValue = "sim:v100", paramLabel = "SPEC",
        converter = GpuSpec.Converter.class, description = "sim:<v100|h100|h200|all-devices|no-gdr> or cuda:N, a "
        + "list runs each (default ${DEFAULT-VALUE}). A cuda:N this host lacks ends with exit code 3.")
    List<GpuSpec> gpus;

    @Option(names = "--consumer", split = ",", defaultValue = "persistent",
        description = "launch, persistent or a list (default ${DEFAULT-VALUE}).")
    List<String> consumers;

    @Option(names = "--flag", split = ",", defaultValue = "receiver",
        description = "Who publishes the persistent consumer's flag: receiver, sender-same-qp, sender-other-qp, imm.")
    List<String> flags;

    @Option(names = "--readback", split = ",", defaultValue = "off,on,flush",
        description = "off, on (1-byte RDMA READ), flush (cuFlushGPUDirectRDMAWrites TO_OWNER), flush-all "
            + "(TO_ALL_DEVICES), a list.")
    List<String> readbacks;

    @Option(names = "--wr-split", split = ",", defaultValue = "1", description = "1, 16, 256 or a list.")
    List<Integer> wrSplits;

    @Option(names = "--size", split = ",", defaultValue = "64K", converter = Sizes.Converter.class,
        description = "Bytes per round and sender (suffix K, M or G), a list (default ${DEFAULT-VALUE}).")
    List<Long> sizes;

    @Option(names = "--senders", split = ",", defaultValue = "1",
        description = "Senders into the one receiver, each with its own buffer: 1..128, a list.")
    List<Integer> senders;

    @Option(names = "--sync-memops", split = ",", defaultValue = "0",
        description = "CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the receive buffers: 0, 1 or 0,1.")
    List<Integer> syncMemops;

    @Option(names = "--source", split = ",", defaultValue = "host",
        description = "Where the senders' data comes from: host, gpu (another GPU), a list.")
    List<String> sources;

    @Option(names = "--poll", split = ",", defaultValue = "acquire",
        description = "How the persistent kernel loads the flag (cuda:N only): acquire, volatile, plain, a list.")
    List<String> polls;

    @Option(names = "--consumer-gpu", split = ",", defaultValue = "same",
        description = "Where the consumer kernel runs: same (the GPU the NIC writes) or peer (a second GPU reading it "
            + "through peer access), a list.")
    List<String> consumerGpus;

    @Option(names = "--refill", description = "Before each round the receiver refills its buffers with the previous "
        + "round's pattern by a synchronous cuMemcpyHtoD from pageable memory, which the NIC then overwrites: the step "
        + "where --sync-memops 0 can fail (stale).")
    boolean refill;

    @Option(names = "--rounds", description = "Rounds per configuration (default 20).")
    Integer rounds;

    @Option(names = "--seed", description = "Seed of the simulated GPU model and the pattern (default 1).")
    Long seed;

    @Option(names = "--inject", defaultValue = "none",
        description = "Negative control: skip-write@R, bad-rkey@R or bad-launch@R (sender 0, round R).")
    String inject;

    /** Where the senders run: shm (processes on this host), tcp (processes, TCP fabric), injvm (threads here). */
    @CommandLine.Mixin
    Mixins.Fabric fabricOption;

    @Option(names = "--sender-processes", defaultValue = "1",
        description = "Sender processes (or threads) the senders are spread over (default ${DEFAULT-VALUE}).")
    int senderProcesses;

    @Option(names = "--port", defaultValue = "0", description = "Control port (0: any free port).")
    int port;

    @Option(names = "--expect", paramLabel = "READBACK=pass|fail,...", split = ",",
        description = "The outcome each readback mode must have, e.g. off=fail,on=pass: a row that differs makes the "
            + "exit code 1 (for CI); without it the exit code says only whether the run itself worked.")
    List<String> expect;

    @Option(names = "--listen", description = "With --fabric tcp: wait for `gdrkit visibility-sender --connect "
        + "HOST:PORT` started by hand (on another host) instead of starting the senders.")
    boolean listen;

    /** native: a real RDMA device found and opened, then the named end NOT_BUILT (the lab runs on software NICs). */
    @CommandLine.Mixin
    Mixins.Provider providerOption;

    @CommandLine.Mixin
    Mixins.Json jsonOption;

    /** report.html with failures per configuration. */
    @CommandLine.Mixin
    Mixins.Report reportOption;

    @CommandLine.Mixin
    Mixins.SetValues set;

    private boolean json;
    private java.nio.file.Path reportDir;

    @Option(names = "--progress", negatable = true, description = "Rounds done and ETA on stderr (default: on when "
        + "run on a terminal).")
    Boolean progress;

    @Override
    public Integer call() {
        json = jsonOption.json;
        reportDir = reportOption.dir;
        for (final GpuSpec g : gpus) {
            if (g.kind() == GpuSpec.Kind.CUDA_RANK) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--gpu takes sim:<preset> or cuda:N "
                    + "here, not cuda:rank");
            }
        }
        final Choices.Fabric fabric = fabricOption.require(spec.commandLine(), List.of(Choices.Fabric.INJVM,
            Choices.Fabric.SHM, Choices.Fabric.TCP));
        reportOption.check(spec.commandLine());
        if (!NativeOnly.soft(spec.commandLine(), providerOption)) {
            if (gpus.size() != 1) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--provider native takes one --gpu");
            }
            return NativeOnly.run(spec.commandLine(), "visibility", gpus.getFirst().toString());
        }
        final PrintWriter out = spec.commandLine().getOut();
        final List<VisConfig> matrix = new ArrayList<>();
        final Set<String> skipped = new LinkedHashSet<>();
        final VisibilityLab.Transport transport;
        try {
            transport = fabric == Choices.Fabric.INJVM ? VisibilityLab.Transport.JVM
                : VisibilityLab.Transport.parse(fabric.label());
            matrix(matrix, skipped);
        } catch (final IllegalArgumentException e) {
            // a bad option is a usage error (exit 2), said in one line before anything runs
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        final java.util.Map<Readback, Boolean> expected = expectations(spec.commandLine(), expect);
        // a cuda:N this host lacks: exit code 3, before any process starts
        checkCudaDevices(matrix);
        final ObjectMapper mapper = new ObjectMapper();
        // with --listen the lab blocks until the senders come: say on stderr (stdout may be JSON) whom it waits for
        try (VisibilityLab lab = VisibilityLab.start(transport, senderProcesses, port, listen,
            io.gdrkit.core.auth.Token.fromProcess(), l -> {
                System.err.println(listeningLine(l));
                System.err.flush();
            })) {
            if (!json) {
                out.println("# visibility: " + lab.processes() + "; software NIC (simulated); notifications over TCP");
                for (final String s : skipped) {
                    out.println("# skipped: " + s);
                }
                out.flush();
            }
            final long total = matrix.stream().mapToLong(VisConfig::rounds).sum();
            final List<VisResult> results = new ArrayList<>();
            try (Progress p = StderrProgress.open("visibility rounds", total,
                progress != null ? progress : StderrProgress.terminal())) {
                for (final VisConfig c : matrix) {
                    final long before = p.done();
                    final VisResult r = lab.run(c, round -> p.set(before + round));
                    p.set(before + c.rounds());
                    results.add(r);
                    out.println(json ? toJson(mapper, r).toString() : line(r));
                    out.flush();
                }
            }
            if (reportDir != null) {
                final Report report = ReportOutput.forCommand("gdrkit visibility", spec);
                final boolean simGpu = results.stream().anyMatch(VisResult::simulated);
                report.simulated(true, "software NICs (simulated)" + (simGpu ? " and simulated GPUs" : "; the GPU is"
                    + " real (" + results.get(0).gpuName() + "), written through its copy engine"));
                report.fact("processes", lab.processes());
                ExperimentReports.visibility(report, lab.processes(), results);
                ReportOutput.writeAndPrint(report, reportDir, json, out);
            }
            final List<String> unmet = unmet(expected, results);
            if (!unmet.isEmpty()) {
                final PrintWriter err = spec.commandLine().getErr();
                err.println("gdrkit visibility: --expect not met: " + String.join("; ", unmet));
                err.flush();
                return Main.EXIT_FAILURE;
            }
        }
        return 0;
    }

    /** {@code --expect off=fail,on=pass} as a map; a malformed pair is a usage error naming it. */
    static java.util.Map<Readback, Boolean> expectations(final CommandLine cl, final List<String> pairs) {
        final java.util.Map<Readback, Boolean> m = new java.util.EnumMap<>(Readback.class);
        if (pairs == null) {
            return m;
        }
        for (final String p : pairs) {
            final int eq = p.indexOf('=');
            final String mode = eq < 0 ? "" : p.substring(0, eq).trim().toUpperCase(Locale.ROOT).replace('-', '_');
            final String want = eq < 0 ? "" : p.substring(eq + 1).trim().toLowerCase(Locale.ROOT);
            final Readback r;
            try {
                r = Readback.valueOf(mode);
            } catch (final IllegalArgumentException e) {
                throw new CommandLine.ParameterException(cl, "--expect '" + p + "': READBACK=pass|fail with "
                    + "READBACK off, on, flush or flush-all");
            }
            if (!want.equals("pass") && !want.equals("fail")) {
                throw new CommandLine.ParameterException(cl, "--expect '" + p + "': the outcome is pass or fail");
            }
            m.put(r, want.equals("pass"));
        }
        return m;
    }

    /** The rows whose outcome differs from what --expect says for their readback mode. */
    static List<String> unmet(final java.util.Map<Readback, Boolean> expected, final List<VisResult> results) {
        final List<String> out = new ArrayList<>();
        for (final VisResult r : results) {
            final Boolean want = expected.get(r.config().readback());
            if (want != null && want != r.passed()) {
                out.add("readback=" + low(r.config().readback()) + " gpu=" + r.config().gpu() + " expected "
                    + (want ? "pass" : "fail") + ", got " + (r.passed() ? "pass" : "fail (" + r.failures()
                    + " failing rounds)"));
            }
        }
        for (final Readback r : expected.keySet()) {
            if (results.stream().noneMatch(x -> x.config().readback() == r)) {
                out.add("readback=" + low(r) + " expected but not run (add it to --readback)");
            }
        }
        return out;
    }

    private void matrix(final List<VisConfig> matrix, final Set<String> skipped) {
        // every value is parsed before anything runs, so a bad one is a usage error naming its option
        final Injection inj = Injection.parse(inject);
        final List<Consumer> cons = parseAll(Consumer.class, consumers, "--consumer", "launch, persistent");
        final List<Flag> fls = parseAll(Flag.class, flags, "--flag", "receiver, sender-same-qp, sender-other-qp, imm");
        final List<Readback> rbs = parseAll(Readback.class, readbacks, "--readback", "off, on, flush, flush-all");
        final List<Source> srcs = parseAll(Source.class, sources, "--source", "host, gpu");
        final List<Poll> pls = parseAll(Poll.class, polls, "--poll", "acquire, volatile, plain");
        final List<Long> szs = sizes;
        for (final int sm : syncMemops) {
            if (sm != 0 && sm != 1) {
                throw new IllegalArgumentException("--sync-memops must be 0 or 1, not " + sm);
            }
        }
        for (final String cg : consumerGpus) {
            if (!cg.equals("same") && !cg.equals("peer")) {
                throw new IllegalArgumentException("--consumer-gpu must be same or peer, not '" + cg + "'");
            }
        }
        final List<List<?>> dims = List.of(gpus.stream().map(GpuSpec::toString).toList(), cons, fls, rbs, wrSplits, szs, senders, syncMemops, srcs, pls,
            consumerGpus);
        String firstReason = null;
        for (final List<Object> v : cartesian(dims)) {
            try {
                final VisConfig c = new VisConfig().gpu((String) v.get(0)).consumer((Consumer) v.get(1))
                    .flag((Flag) v.get(2)).readback((Readback) v.get(3)).wrSplit((Integer) v.get(4))
                    .size((Long) v.get(5)).senders((Integer) v.get(6)).syncMemops((Integer) v.get(7) == 1)
                    .source((Source) v.get(8)).poll((Poll) v.get(9)).inject(inj)
                    .peerConsumer(v.get(10).equals("peer"));
                if (rounds != null) {
                    c.rounds(rounds);
                }
                c.refill(refill);
                if (seed != null) {
                    c.seed(seed);
                }
                matrix.add(c.conclude());
            } catch (final IllegalArgumentException e) {
                if (!isCombination(e)) {
                    throw e;
                }
                if (firstReason == null) {
                    firstReason = e.getMessage();
                }
                skipped.add(e.getMessage());
            }
        }
        if (matrix.isEmpty()) {
            throw new IllegalArgumentException(firstReason);
        }
    }

    /** A cuda:N that this host does not have is a usage error before any process starts, not a failure later. */
    private static void checkCudaDevices(final List<VisConfig> matrix) {
        io.gdrkit.gpu.cuda.CudaProbe probe = null;
        for (final VisConfig c : matrix) {
            if (c.simulated()) {
                continue;
            }
            if (probe == null) {
                probe = io.gdrkit.gpu.cuda.CudaGpu.probe();
            }
            final int n = Integer.parseInt(c.gpu().substring(5));
            if (!probe.found() || n >= probe.deviceCount()) {
                throw new HardwareAbsentException("--gpu " + c.gpu() + ": this host has " + (probe.found()
                    ? probe.deviceCount() + " CUDA device(s)" : "no CUDA GPU (" + probe + ")"));
            }
            if (c.peerConsumer() && probe.deviceCount() < 2) {
                throw new HardwareAbsentException("--consumer-gpu peer needs a second CUDA GPU; this host has "
                    + probe.deviceCount());
            }
        }
    }

    /** Every combination of one value per dimension, the first dimension varying slowest. */
    static List<List<Object>> cartesian(final List<List<?>> dims) {
        List<List<Object>> out = List.of(List.of());
        for (final List<?> dim : dims) {
            final List<List<Object>> next = new ArrayList<>();
            for (final List<Object> prefix : out) {
                for (final Object value : dim) {
                    final List<Object> row = new ArrayList<>(prefix);
                    row.add(value);
                    next.add(row);
                }
            }
            out = next;
        }
        return out;
    }

    private static <E extends Enum<E>> List<E> parseAll(final Class<E> type, final List<String> values,
                                                        final String opt, final String allowed) {
        return values.stream().map(v -> parse(type, v, opt, allowed)).toList();
    }

    /** Combinations that do not make sense are skipped in a matrix (and said); single bad values are errors. */
    private static boolean isCombination(final IllegalArgumentException e) {
        final String m = e.getMessage();
        return m.startsWith("--consumer launch reads no flag") || m.startsWith("--readback flush is the receiver's")
            || m.startsWith("--poll ");
    }

    static String line(final VisResult r) {
        final VisConfig c = r.config();
        return String.format(Locale.ROOT, "gpu=%s ordering=%s consumer=%s flag=%s readback=%s wr_split=%d size=%d "
                + "senders=%d sync_memops=%d source=%s%s%s rounds=%d failures=%d first_failing_round=%d "
                + "first_failing_position=%d what=%s%s%s round_us=%.1f readback_us=%.1f %s "
                + "[%s; software NIC (simulated); %s]",
            c.gpu(), r.ordering(), low(c.consumer()), low(c.flag()), low(c.readback()), c.wrSplit(), c.size(),
            c.senders(), c.syncMemops() ? 1 : 0, low(c.source()), (c.peerConsumer() ? " consumer_gpu=peer" : "") + (c.refill() ? " refill=1" : ""),
            c.simulated() || c.consumer() == Consumer.LAUNCH ? "" : " poll=" + low(c.poll()),
            r.rounds(), r.failures(), r.firstFailingRound(), r.firstFailingPosition(), r.what(),
            counts(r), r.aborted() == null ? "" : " aborted=\"" + r.aborted() + "\"", r.roundMicrosMedian(),
            r.readbackMicrosMedian(),
            r.passed() ? "PASS" : "FAIL", r.simulated() ? "simulated GPU" : "real GPU " + r.gpuName(), r.processes());
    }

    private static String counts(final VisResult r) {
        final StringBuilder b = new StringBuilder();
        if (r.errorCompletions() > 0) {
            b.append(" error_completions=").append(r.errorCompletions());
        }
        if (r.launchFailures() > 0) {
            b.append(" launch_failures=").append(r.launchFailures());
        }
        if (r.timeouts() > 0) {
            b.append(" timeouts=").append(r.timeouts());
        }
        if (r.failuresToldSenders() > 0) {
            b.append(" told_senders=").append(r.failuresToldSenders());
        }
        return b.toString();
    }

    static ObjectNode toJson(final ObjectMapper m, final VisResult r) {
        final VisConfig c = r.config();
        final ObjectNode o = m.createObjectNode();
        o.put("gpu", c.gpu()).put("gpu_name", r.gpuName()).put("ordering", r.ordering())
            .put("consumer", low(c.consumer())).put("flag", low(c.flag())).put("readback", low(c.readback()))
            .put("wr_split", c.wrSplit()).put("size", c.size()).put("senders", c.senders())
            .put("sync_memops", c.syncMemops() ? 1 : 0).put("refill", c.refill() ? 1 : 0).put("source", low(c.source())).put("poll", low(c.poll()))
            .put("consumer_gpu", c.peerConsumer() ? "peer" : "same")
            .put("rounds", r.rounds()).put("checks", r.checks()).put("seed", c.seed())
            .put("inject", c.inject().toString()).put("failures", r.failures())
            .put("first_failing_round", r.firstFailingRound()).put("first_failing_position", r.firstFailingPosition())
            .put("what", r.what()).put("stale", r.stale()).put("partial", r.partial()).put("reordered", r.reordered())
            .put("corrupt", r.corrupt()).put("timeouts", r.timeouts()).put("error_completions", r.errorCompletions())
            .put("launch_failures", r.launchFailures()).put("failures_told_senders", r.failuresToldSenders())
            .putPOJO("round_us_median", Double.isNaN(r.roundMicrosMedian()) ? null : r.roundMicrosMedian())
            .putPOJO("readback_us_median", Double.isNaN(r.readbackMicrosMedian()) ? null : r.readbackMicrosMedian())
            .put("passed", r.passed()).put("simulated", r.simulated()).put("nic", "software NIC (simulated)")
            .put("processes", r.processes());
        if (r.aborted() != null) {
            o.put("aborted", r.aborted());
        }
        return o;
    }

    private static String low(final Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static <E extends Enum<E>> E parse(final Class<E> type, final String v, final String opt,
                                               final String allowed) {
        try {
            return Enum.valueOf(type, v.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
        } catch (final IllegalArgumentException e) {
            throw new IllegalArgumentException(opt + " must be one of " + allowed + ", not '" + v + "'");
        }
    }

    /** The line said on stderr while the receiver waits for senders started by hand ({@code --listen}). */
    static String listeningLine(final VisibilityLab.Listening l) {
        return "# visibility receiver: waiting for " + l.senderHosts() + " sender(s): run"
            + " `gdrkit visibility-sender --connect THIS_HOST:" + l.port() + "` on the sender host(s)";
    }
}
