/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.WorldEnvironment;
import io.gdrkit.comm.bootstrap.UniqueId;
import io.gdrkit.comm.CollContext;
import io.gdrkit.comm.CollLocal;
import io.gdrkit.comm.CollOp;
import io.gdrkit.comm.CollResult;
import io.gdrkit.comm.CollRun;
import io.gdrkit.comm.CollWorld;
import io.gdrkit.comm.Fabric;
import io.gdrkit.comm.WorldContext;
import io.gdrkit.comm.DataType;
import io.gdrkit.comm.RedOp;
import io.gdrkit.comm.launch.Launcher;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code gdrkit coll OP}: nccl-tests for gdrkit's collectives over the NetTransport seam, with nccl-tests' columns.
 */
@Command(name = "coll", mixinStandardHelpOptions = true,
    description = {"Collectives over the NetTransport seam with nccl-tests' output: allreduce, allgather, "
        + "reduce-scatter, broadcast, reduce, alltoall, sendrecv. Every element is checked on every size; #wrong "
        + "counts the bad ones on all ranks.",
        "--fabric injvm runs the ranks as threads of this JVM; shm and tcp start --np processes (or, under "
            + "`gdrkit launch`, or without --np under mpirun/srun (PMIx), torchrun/Kubernetes (RANK, WORLD_SIZE, "
            + "MASTER_ADDR, MASTER_PORT) or Slurm, this process is one rank; docs/LAUNCHING.md). Software NICs "
            + "(simulated) for --transport ib.",
        "--bind route binds the address this host uses to reach the bootstrap root (ranks on other hosts, "
            + "`gdrkit launch --hosts`).",
        "When every rank is on one host, every collective of host buffers goes through shared memory (path shm, no "
            + "NIC); ranks on several hosts with as many on each run allreduce, allgather, reduce-scatter and "
            + "broadcast through shared memory within each host and the transport between hosts (path shm+net, algo "
            + "hier); a tuning table picks algo (direct, rsag, hier, ring, tree) and proto (LL, Simple) per size, and "
            + "each row says algo, proto and path. NCCL_ALGO=ring or --set gdrkit.coll.shm.direct=false keeps the "
            + "transport (path net).",
        "Honours NCCL_BUFFSIZE, NCCL_STEPS, NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, NCCL_ALGO, NCCL_PROTO, NCCL_IB_*, "
            + "NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD."})
public final class CollCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Parameters(index = "0", paramLabel = "OP", converter = Choices.CollOpConverter.class,
        completionCandidates = Choices.CollOpConverter.class, description = "${COMPLETION-CANDIDATES}")
    CollOp op;

    @Option(names = "--np", defaultValue = "2", description = "Ranks, 1 or more (default ${DEFAULT-VALUE}).")
    int np;

    @Option(names = "--transport", defaultValue = "ib", converter = Choices.TransportConverter.class,
        completionCandidates = Choices.TransportConverter.class, description = "${COMPLETION-CANDIDATES} (default "
        + "${DEFAULT-VALUE}).")
    CollWorld.TransportKind transport;

    @CommandLine.Mixin
    Mixins.Fabric fabricOption;

    @CommandLine.Mixin
    Mixins.Mem memOption;

    @CommandLine.Mixin
    Mixins.Gpu gpuOption;

    @Option(names = {"-b", "--minbytes"}, defaultValue = "32M", converter = Sizes.Converter.class,
        description = "Smallest size, bytes with K, M or G (default ${DEFAULT-VALUE}).")
    long minBytes;

    @Option(names = {"-e", "--maxbytes"}, defaultValue = "32M", converter = Sizes.Converter.class,
        description = "Largest size (default ${DEFAULT-VALUE}).")
    long maxBytes;

    @Option(names = {"-f", "--stepfactor"}, defaultValue = "2", description = "Size factor (default ${DEFAULT-VALUE}).")
    double factor;

    @Option(names = {"-i", "--stepbytes"}, defaultValue = "0", converter = Sizes.Converter.class,
        description = "Size increment instead of -f.")
    long stepBytes;

    @Option(names = {"-n", "--iters"}, defaultValue = "20", description = "Timed iterations (default ${DEFAULT-VALUE}).")
    int iters;

    @Option(names = {"-w", "--warmup_iters"}, defaultValue = "5", description = "Warm-up iterations (default "
        + "${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--jit-warmup-ms", defaultValue = "20000", description = "Before timing, run every size (64 "
        + "at most) until the JIT stops compiling on every rank, then the sweep untimed (again while it still makes a "
        + "rank compile, 4 times at most), at most this long (default ${DEFAULT-VALUE}; 0: off). -w warm-up "
        + "iterations still run per size.")
    long jitWarmupMs;

    @Option(names = {"-c", "--check"}, defaultValue = "1", description = "Check the results: 1 (default) or 0.")
    int check;

    @Option(names = {"-d", "--datatype"}, defaultValue = "float", converter = Choices.DataTypeConverter.class,
        completionCandidates = Choices.DataTypeConverter.class, description = "${COMPLETION-CANDIDATES} (default "
        + "${DEFAULT-VALUE}).")
    DataType type;

    @Option(names = {"-o", "--op"}, defaultValue = "sum", converter = Choices.RedOpConverter.class,
        completionCandidates = Choices.RedOpConverter.class, description = "${COMPLETION-CANDIDATES} (default "
        + "${DEFAULT-VALUE}).")
    RedOp redop;

    @Option(names = {"-r", "--root"}, defaultValue = "0", description = "Root of broadcast and reduce.")
    int root;

    @Option(names = "--timeout-ms", defaultValue = "60000", description = "Longest wait for a peer (default "
        + "${DEFAULT-VALUE}).")
    long timeoutMs;

    @CommandLine.Mixin
    Mixins.Provider providerOption;

    @CommandLine.Mixin
    Mixins.Endpoint endpoint;

    @CommandLine.Mixin
    Mixins.Json jsonOption;

    @CommandLine.Mixin
    Mixins.Report reportOption;

    @CommandLine.Mixin
    Mixins.SetValues set;

    private String fabric;
    private boolean gpuMem;
    private String bind;
    private boolean json;
    private Path reportDir;

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /**
     * Rank 0 of a torchrun or Slurm world serves the bootstrap root on MASTER_ADDR: beyond loopback without a token,
     * anyone who reaches the port during the join can take a rank. Warned, or refused with --strict, as for --bind.
     */
    private void exposure(final WorldEnvironment.World w) {
        if (!w.servesRoot() || w.id() == null || !w.token().isEmpty()) {
            return;
        }
        try {
            if (InetAddress.getByName(w.id().host()).isLoopbackAddress()) {
                return;
            }
        } catch (final java.net.UnknownHostException e) {
            return; // resolving the world names it
        }
        final String why = "serving the bootstrap root on " + w.id().host() + ":" + w.id().port() + " without a "
            + "token: anyone who reaches it during the join can take a rank (set GDRKIT_TOKEN on every rank; "
            + "docs/LAUNCHING.md)";
        if (endpoint.strict) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--strict: " + why);
        }
        spec.commandLine().getErr().println("gdrkit coll: warning: " + why);
        spec.commandLine().getErr().flush();
    }

    /** Every check on the command line, before any output or work: a bad one is a usage error (exit 2). */
    private CollRun.Config validate(final int ranks, final boolean launched) {
        final CommandLine cl = spec.commandLine();
        fabric = fabricOption.require(cl, List.of(Choices.Fabric.INJVM, Choices.Fabric.SHM, Choices.Fabric.TCP))
            .label();
        gpuMem = memOption.hostOrGpu(cl).gpu();
        bind = endpoint.bind;
        endpoint.checkExposure(spec.commandLine());
        json = jsonOption.json;
        reportDir = reportOption.dir;
        if (np < 1) {
            throw new CommandLine.ParameterException(cl, "--np must be >= 1, not " + np);
        }
        if (gpuMem == (gpuOption.spec == null)) {
            throw new CommandLine.ParameterException(cl, gpuMem
                ? "--mem gpu needs --gpu SPEC (sim:h200, cuda:0, cuda:rank)" : "--gpu needs --mem gpu");
        }
        if (minBytes > maxBytes) {
            throw new CommandLine.ParameterException(cl, "-b " + minBytes + " is more than -e " + maxBytes
                + " (bytes)");
        }
        if (!(factor > 1) && stepBytes <= 0) {
            throw new CommandLine.ParameterException(cl, "-f must be more than 1 (or give -i BYTES)");
        }
        if (iters < 1 || warmup < 0 || jitWarmupMs < 0 || timeoutMs < 1) {
            throw new CommandLine.ParameterException(cl, iters < 1 ? "-n must be >= 1, not " + iters : warmup < 0
                ? "-w must be >= 0, not " + warmup : jitWarmupMs < 0 ? "--jit-warmup-ms must be >= 0" : "--timeout-ms "
                + "must be >= 1");
        }
        Counts.atMost(cl, "-n/--iters", iters, Counts.MAX_ITERS);
        Counts.atMost(cl, "-w/--warmup_iters", warmup, Counts.MAX_ITERS);
        Counts.atMost(cl, "--jit-warmup-ms", jitWarmupMs, Counts.MAX_SECONDS * 1000);
        if (check != 0 && check != 1) {
            throw new CommandLine.ParameterException(cl, "-c must be 1 or 0, not " + check);
        }
        if (root < 0 || root >= ranks) {
            throw new CommandLine.ParameterException(cl, "--root " + root + " outside 0.." + (ranks - 1));
        }
        if (launched && fabric.equals("injvm")) {
            throw new CommandLine.ParameterException(cl, "--fabric injvm joins threads of one JVM; launched ranks "
                + "need shm or tcp");
        }
        if (!bind.equals("route")) {
            try {
                InetAddress.getByName(bind);
            } catch (final java.net.UnknownHostException e) {
                throw new CommandLine.ParameterException(cl, "--bind " + bind + ": not an address");
            }
        }
        reportOption.check(cl);
        final CollRun.Config cfg;
        try {
            cfg = new CollRun.Config(op, type, redop, root, minBytes, maxBytes, factor, stepBytes, iters, warmup,
                check != 0, transport.name().toLowerCase(Locale.ROOT), fabric,
                transport == CollWorld.TransportKind.IB, jitWarmupMs);
        } catch (final IllegalArgumentException e) {
            throw new CommandLine.ParameterException(cl, e.getMessage());
        }
        if (gpuMem) {
            gpuOption.spec.requirePresent("--gpu");
        }
        return cfg;
    }

    @Override
    public Integer call() throws Exception {
        final Map<String, String> env = System.getenv();
        // one rank of a world: started by gdrkit launch (GDRKIT_ID), or, over shm or tcp without --np, by
        // mpirun/srun (PMIx), torchrun/Kubernetes (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or srun (SLURM_PROCID
        // and an address); injvm keeps its threads in this JVM (a Slurm batch script carries SLURM_PROCID too)
        final boolean foreignWorld = !BootstrapContext.launched(env) && WorldEnvironment.present(env)
            && !spec.commandLine().getParseResult().hasMatchedOption("--np");
        final boolean overProcesses = fabricOption.require(spec.commandLine(), List.of(Choices.Fabric.INJVM,
            Choices.Fabric.SHM, Choices.Fabric.TCP)) != Choices.Fabric.INJVM;
        final boolean launched = BootstrapContext.launched(env) || (foreignWorld && overProcesses);
        if (foreignWorld && !launched) {
            spec.commandLine().getErr().println("# gdrkit coll: " + WorldEnvironment.sourceOf(env).label()
                + " variables are set, but --fabric injvm runs every rank as a thread here; give --fabric shm or tcp "
                + "to be one rank of that world");
            spec.commandLine().getErr().flush();
        }
        if (providerOption.require(spec.commandLine(), java.util.EnumSet.of(Choices.Provider.SOFT,
            Choices.Provider.NATIVE)) == Choices.Provider.NATIVE) {
            if (gpuOption.spec != null && !gpuOption.spec.cuda()) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--provider native registers real GPU "
                    + "memory: give --gpu cuda:N, not " + gpuOption.spec);
            }
            return NativeOnly.run(spec.commandLine(), "coll", gpuOption.spec == null ? null
                : gpuOption.spec.toString());
        }
        if (launched && !overProcesses) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--fabric injvm joins threads of one JVM; "
                + "launched ranks need shm or tcp");
        }
        if (launched) {
            exposure(WorldEnvironment.detect(env));
        }
        final WorldEnvironment.Resolved world = launched
            ? WorldEnvironment.resolve(env, Duration.ofMillis(Math.max(1, timeoutMs))) : null;
        final int ranks = launched ? world.world().size() : np;
        final CollRun.Config cfg;
        try {
            cfg = validate(ranks, launched);
        } catch (final RuntimeException e) {
            if (world != null) {
                world.finish(Duration.ZERO);
            }
            throw e;
        }
        final PrintWriter out = spec.commandLine().getOut();
        final PrintWriter err = spec.commandLine().getErr();
        final CollWorld.TransportKind kind = transport;
        final String gpuSpec = gpuMem ? gpuOption.spec.toString() : null;
        final Duration timeout = Duration.ofMillis(timeoutMs);
        final SettingsReader settings = SettingsReader.ofProcess();
        final CollContext coll = new CollContext().settings(settings).timeout(timeout).bind(bindAddress(world));
        final List<CollResult> rows = new ArrayList<>();
        if (!launched && !fabric.equals("injvm")) {
            return selfLaunch(err);
        }
        final boolean printer = !launched || world.world().rank() == 0;
        final String worldSource = launched ? world.world().source().label() : null;
        if (printer && !json) {
            header(out, cfg, ranks, kind, coll);
            if (launched) {
                out.println("# world: " + world.world().describe());
                out.flush();
            }
        }
        final Consumer<CollResult> row = r -> {
            rows.add(r);
            if (printer) {
                out.println(json ? json(r, worldSource) : line(r));
                out.flush();
            }
        };
        if (launched) {
            try {
                final Bootstrap b = Bootstrap.init(world.context(timeout));
                try (CollWorld w = CollWorld.open(b, new WorldContext().fabric(Fabric.parse(fabric)).transport(kind)
                    .coll(coll).settings(settings).timeout(timeout).gpu(gpuSpec))) {
                    CollRun.run(w.communicator(), cfg, row);
                } catch (final RuntimeException e) {
                    b.abort(String.valueOf(e.getMessage()));
                    throw e;
                }
                b.close();
            } finally {
                world.finish(timeout); // rank 0 of a torchrun/Slurm world serves the root until the others leave
            }
        } else {
            CollLocal.run(np, kind, cfg, coll, settings, timeout, row, (r, c) -> { }, gpuSpec);
        }
        long wrong = 0;
        double bus = 0;
        for (final CollResult r : rows) {
            wrong += r.wrong() + r.inPlaceWrong();
            bus += r.busBwGbs() + r.inPlaceBusBwGbs();
        }
        if (printer && !json) {
            if (!rows.isEmpty() && rows.get(rows.size() - 1).placement().gdr() != null) {
                for (final String l : gdrLines(rows.get(rows.size() - 1).placement())) {
                    out.println(l);
                }
            }
            if (!rows.isEmpty()) {
                out.println("# NIC progress (rank 0): " + rows.get(rows.size() - 1).nicProgress());
                out.println("# NIC MTU (rank 0): " + rows.get(rows.size() - 1).nicMtu());
                out.println("# NICs x channels (rank 0): " + rows.get(rows.size() - 1).nics() + " x "
                    + rows.get(rows.size() - 1).channels());
                out.println("# direct rounds (rank 0): " + rows.get(rows.size() - 1).directPath());
                out.println("# paths used (rank 0): " + rows.stream().map(x -> x.tuning().path()).distinct()
                    .collect(java.util.stream.Collectors.joining(", ")));
                String last = null;
                for (final CollResult x : rows) {
                    final String k = x.tuning().algo() + "/" + x.tuning().proto() + "/" + x.tuning().path() + ": "
                        + x.tuning().why();
                    if (!k.equals(last)) {
                        out.println("# from " + x.bytes() + " B (rank 0): " + k);
                        last = k;
                    }
                }
                out.println("# rank thread (rank 0): " + rows.get(rows.size() - 1).binding());
                out.println("# Reduce threads (rank 0): " + rows.get(rows.size() - 1).reduceThreads().describe());
                for (final String l : sharingLines(rows.get(rows.size() - 1).placement())) {
                    out.println(l);
                }
            }
            out.println("# Out of bounds values : " + wrong + (wrong == 0 ? " OK" : " FAILED"));
            out.printf(Locale.ROOT, "# Avg bus bandwidth    : %.4f %n", rows.isEmpty() ? 0 : bus / (2 * rows.size()));
            out.println("#");
            out.flush();
        }
        if (printer && reportDir != null) {
            writeReport(rows, out);
        }
        return wrong == 0 ? 0 : Main.EXIT_FAILURE;
    }

    /** Starts --np processes of this same command under a launcher; rank 0 prints. */
    private int selfLaunch(final PrintWriter err) throws Exception {
        // the ranks see the gdrkit.* properties this process was given (NIC progress, timeouts ...)
        final List<String> cmd = ForwardedProperties.gdrkitCommand();
        cmd.add("coll");
        cmd.addAll(spec.commandLine().getParseResult().originalArgs().subList(1,
            spec.commandLine().getParseResult().originalArgs().size()));
        // the settings of this command line (--set) are in those arguments; the ones of an enclosing in-process
        // caller are handed on too
        cmd.addAll(Settings.childArgs());
        final Launcher.Result r = Launcher.run(new Launcher.Spec(np, 0, np, null, new InetSocketAddress(
            InetAddress.getLoopbackAddress(), 0), cmd, endpoint.token != null ? endpoint.token : System.getenv("GDRKIT_TOKEN"), Duration.ofMillis(timeoutMs),
            Duration.ofMillis(timeoutMs), Map.of()), new Launcher.Listener() {
                @Override
                public void started(final UniqueId id) {
                }

                @Override
                public void rankFailed(final int rank, final int exitCode) {
                    err.println("# gdrkit coll: rank " + rank + " exited with " + exitCode);
                    err.flush();
                }
            });
        if (r.exitCode() != 0 && r.rootFailure() != null) {
            err.println("gdrkit coll: error: " + r.rootFailure());
            err.flush();
        }
        return r.exitCode();
    }

    /** --bind's address; 'route': the local address of the route to the bootstrap root (no packet is sent). */
    private InetAddress bindAddress(final WorldEnvironment.Resolved world) throws java.io.IOException {
        if (!bind.equals("route")) {
            return InetAddress.getByName(bind);
        }
        if (world == null) {
            return InetAddress.getLoopbackAddress(); // every rank is on this host
        }
        try (java.net.DatagramSocket probe = new java.net.DatagramSocket()) {
            probe.connect(world.id().address());
            return probe.getLocalAddress();
        }
    }

    private void header(final PrintWriter out, final CollRun.Config c, final int n,
                        final CollWorld.TransportKind kind, final CollContext coll) {
        out.printf(Locale.ROOT, "# gdrkit coll %s: nranks %d minBytes %d maxBytes %d step: %s warmup iters: %d "
                + "iters: %d validation: %d%n", c.op().testName(), n, c.minBytes(), c.maxBytes(),
            c.stepBytes() > 0 ? c.stepBytes() + "(bytes)" : c.factor() + "(factor)", c.warmup(), c.iters(),
            c.check() ? 1 : 0);
        out.println("# paths: shm (shared memory between the ranks of one host, no NIC; host buffers), shm+net "
            + "(shared memory within each host, the transport between hosts), net ("
            + (kind == CollWorld.TransportKind.IB ? "NET/IB over software NICs (simulated), " + fabric + " fabric"
            : "NET/Socket over TCP") + "); each row's algo, proto and path, the paths used and why below the table; "
            + (gpuMem ? "buffers on GPU "
            + gpuOption.spec + (gpuOption.spec.simulated() ? " (simulated; reductions on its SM workers)" : " (reductions in the "
            + "coll_reduce kernel)") + "; GDR or host bounce as the gates decide (summary below the table)"
            : "buffers in host memory"));
        out.println("#");
        out.println("#                                                              out-of-place                       "
            + "in-place          ");
        out.println("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
            + "algbw   busbw #wrong    algo  proto path");
        out.println("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  "
            + "(GB/s)  (GB/s)                           ");
        out.flush();
    }

    /** One row in nccl-tests' format. */
    static String line(final CollResult r) {
        return String.format(Locale.ROOT, "%12d  %12d  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5d  %7s  %6.2f  %6.2f  %5d"
            + "  %6s %6s %4s", r.bytes(), r.count(), r.type().ncclName(), r.redop(), r.root(), time(r.timeUs()),
            r.algBwGbs(), r.busBwGbs(), r.wrong(), time(r.inPlaceTimeUs()), r.inPlaceAlgBwGbs(), r.inPlaceBusBwGbs(),
            r.inPlaceWrong(), r.tuning().algo(), r.tuning().proto(), r.tuning().path());
    }

    private static String time(final double us) {
        return us >= 10_000 ? String.format(Locale.ROOT, "%7.0f", us) : us >= 100 ? String.format(Locale.ROOT,
            "%7.1f", us) : String.format(Locale.ROOT, "%7.2f", us);
    }

    static String json(final CollResult r) {
        return json(r, null);
    }

    /** One row as JSON; {@code world}: where a launched rank's world came from (pmix, torchrun, ...), or null. */
    static String json(final CollResult r, final String world) {
        final ObjectNode o = MAPPER.createObjectNode();
        if (world != null) {
            o.put("world", world);
        }
        o.put("op", r.op().testName());
        o.put("bytes", r.bytes());
        o.put("count", r.count());
        o.put("type", r.type().ncclName());
        o.put("redop", r.redop());
        o.put("root", r.root());
        o.put("time_us", r.timeUs());
        o.put("algbw_gbs", r.algBwGbs());
        o.put("busbw_gbs", r.busBwGbs());
        o.put("wrong", r.wrong());
        o.put("inplace_time_us", r.inPlaceTimeUs());
        o.put("inplace_algbw_gbs", r.inPlaceAlgBwGbs());
        o.put("inplace_busbw_gbs", r.inPlaceBusBwGbs());
        o.put("inplace_wrong", r.inPlaceWrong());
        o.put("np", r.np());
        o.put("transport", r.transport());
        o.put("fabric", r.fabric());
        o.put("simulated", r.simulated());
        o.put("nic_progress", r.nicProgress());
        o.put("nic_mtu", r.nicMtu());
        o.put("nics", r.nics());
        o.put("channels", r.channels());
        o.put("direct_path", r.directPath());
        o.put("algo", r.tuning().algo());
        o.put("proto", r.tuning().proto());
        o.put("path", r.tuning().path());
        o.put("algo_why", r.tuning().why());
        o.put("binding", r.binding());
        o.put("reduce_threads", r.reduceThreads().threads());
        o.put("reduce_parallel_bytes", r.reduceThreads().minBytes());
        o.put("reduce_threads_why", r.reduceThreads().reason());
        final CollResult.Placement p = r.placement();
        o.put("mem", p.mem());
        if (p.gpu() != null) {
            o.put("gpu", p.gpu());
            o.put("gpu_simulated", p.gpuSimulated());
        }
        o.put("reduce_on", p.reduceOn());
        o.put("data_path", p.dataPath());
        final io.gdrkit.comm.CollGdr g = p.gdr();
        o.put("gdr", g != null && g.on());
        if (g != null) {
            o.put("gdr_send", g.sendOn());
            o.put("gdr_reason", g.reason());
            o.put("gdr_gate", g.gate());
            o.put("gdr_mechanism", g.mechanism().label());
            g.evidence().forEach(o.putArray("gdr_evidence")::add);
            g.settings().forEach(o.putArray("gdr_settings")::add);
            o.put("flush", g.flush());
            o.put("flush_evidence", g.flushEvidence());
            o.put("nic_mr", p.nicMr());
            o.put("bounced_bytes_rank0", p.bouncedBytes());
            o.put("flushes_rank0", p.flushes());
        }
        if (p.gpu() != null) {
            o.put("kernel_launches_rank0", p.kernelLaunches());
        }
        final io.gdrkit.comm.GpuSharing sh = p.sharing();
        if (sh != null) {
            // rank 0's view: rank processes on its GPU, and MPS over them (true/false/"unknown")
            if (sh.sharedBy() == null) {
                o.put("gpu_shared_by", "not applicable");
                o.put("mps", "not applicable");
            } else {
                o.put("gpu_shared_by", sh.sharedBy());
                switch (sh.mps()) {
                    case ON -> o.put("mps", true);
                    case OFF -> o.put("mps", false);
                    default -> o.put("mps", "unknown");
                }
                o.put("gpu_bus_id", sh.busId());
                sh.ranks().forEach(o.putArray("gpu_ranks")::add);
                sh.mpsByRank().forEach(o.putArray("mps_attr133_by_rank")::add);
            }
            o.put("gpu_sharing", sh.verdict().label());
            o.put("gpu_sharing_evidence", sh.summary());
            if (sh.note() != null) {
                o.put("gpu_sharing_note", sh.note());
            }
        }
        return o.toString();
    }

    /** The text output's GDR lines: rank 0's decision, its settings and what the data path counted. */
    static List<String> gdrLines(final CollResult.Placement p) {
        final io.gdrkit.comm.CollGdr g = p.gdr();
        final List<String> l = new ArrayList<>();
        l.add("# GDR (rank 0): " + (g.on() ? "on" : "off") + " -- " + g.summary());
        l.add("#   settings: " + String.join(", ", g.settings()));
        l.add(String.format(Locale.ROOT, "#   data path %s: NIC registrations over %s memory, %d bytes bounced "
            + "device<->host, %d flush READs (rank 0, whole sweep)", p.dataPath(), p.nicMr(), p.bouncedBytes(),
            p.flushes()));
        return l;
    }

    /**
     * The text output's GPU sharing lines (none in host memory): rank 0's view, and a {@code # note:} when rank
     * processes share its GPU and MPS is not known to be on.
     */
    static List<String> sharingLines(final CollResult.Placement p) {
        final io.gdrkit.comm.GpuSharing sh = p.sharing();
        if (sh == null) {
            return List.of();
        }
        final List<String> l = new ArrayList<>();
        l.add("# GPU sharing (rank 0): " + sh.summary());
        if (sh.note() != null) {
            l.add("# note: " + sh.note());
        }
        return l;
    }

    private void writeReport(final List<CollResult> rows, final PrintWriter out) throws java.io.IOException {
        Files.createDirectories(reportDir);
        final StringBuilder js = new StringBuilder();
        final StringBuilder md = new StringBuilder("# gdrkit coll\n\n| size | type | redop | time (us) | algbw | busbw "
            + "| #wrong | in-place time | busbw | #wrong |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for (final CollResult r : rows) {
            js.append(json(r)).append('\n');
            md.append(String.format(Locale.ROOT, "| %d | %s | %s | %.2f | %.2f | %.2f | %d | %.2f | %.2f | %d |%n",
                r.bytes(), r.type().ncclName(), r.redop(), r.timeUs(), r.algBwGbs(), r.busBwGbs(), r.wrong(),
                r.inPlaceTimeUs(), r.inPlaceBusBwGbs(), r.inPlaceWrong()));
        }
        if (!rows.isEmpty()) {
            md.append("\n").append(rows.get(0).simulated() ? "Software NICs (simulated).\n" : "No simulated NIC.\n");
        }
        Files.writeString(reportDir.resolve("coll.json"), js);
        Files.writeString(reportDir.resolve("coll.md"), md);
        out.println("# report: " + reportDir.resolve("coll.md"));
    }
}
