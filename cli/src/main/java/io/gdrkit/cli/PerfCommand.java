/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.labs.perf.BaselineResult;

import io.gdrkit.labs.perf.Baseline;
import io.gdrkit.labs.perf.BwResult;
import io.gdrkit.labs.perf.BwRun;
import io.gdrkit.labs.perf.LatResult;
import io.gdrkit.labs.perf.LatRun;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.labs.perf.PerfConfig;
import io.gdrkit.labs.perf.PerfReport;
import io.gdrkit.labs.perf.PerfKind;
import io.gdrkit.labs.perf.RemotePerf;
import io.gdrkit.labs.perf.StripedBwRun;
import io.gdrkit.labs.perf.DataCheck;
import io.gdrkit.labs.perf.TrialStats;
import io.gdrkit.labs.provider.ProviderKind;
import io.gdrkit.labs.provider.Providers;

import io.gdrkit.softnic.fabric.FaultInjector;
import io.gdrkit.softnic.SoftNicContext;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code perf}: perftest's ib_*_bw / ib_*_lat on two software NICs in this JVM. */
@Command(name = "perf", mixinStandardHelpOptions = true,
    description = {"perftest-style bandwidth and latency tests between two software NICs (simulated) on the "
        + "in-JVM fabric.", "Tests: write_bw write_lat read_bw read_lat send_bw send_lat atomic_lat",
        "--fabric shm or tcp puts the NICs in a server and a client process (shm: a private shared-memory directory "
            + "the server names; tcp: the server's fabric port handed over by the connection manager); without "
            + "--fabric both NICs are in this JVM."})
final class PerfCommand implements Callable<Integer> {
    private static final int MAX_ALL_EXP = 23;
    private static final long MIN_WARMUP = 50_000;
    /** Round trips per ping-pong batch: about 50 ms on a quiet machine, seconds when the cores are shared. */
    private static final int PING_PONG_ROUNDS = 100_000;

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", arity = "0..1", paramLabel = "TEST", description = "write_bw|write_lat|read_bw|"
        + "read_lat|send_bw|send_lat|atomic_lat|atomic_bw (optional with --baseline)")
    String testName;

    @Parameters(index = "1", arity = "0..1", paramLabel = "HOST", description = "With --fabric: the server to "
        + "connect to (the client side). Without HOST and without --loopback this process is the server.")
    String host;

    @Option(names = "--loopback", description = "Without --fabric: both NICs in this JVM on the in-JVM fabric. With "
        + "--fabric: start the server process on this host, then run the client against it.")
    boolean loopback;

    /** --fabric shm or tcp: a server and a client process; without it both NICs are in this JVM. */
    @picocli.CommandLine.Mixin
    Mixins.Fabric fabricOption;

    private String fabric;

    @Option(names = {"-p", "--port"}, description = "TCP port of the connection manager (default 18515, like "
        + "perftest; with --loopback any free port).")
    Integer port;

    /** --bind (the server's address) and --token (checked on the connection manager's and the fabric's hellos). */
    @picocli.CommandLine.Mixin
    Mixins.Endpoint endpoint;

    private String bind;
    private String token;

    @Option(names = "--link-crc", description = "Turn the link CRC on (--faults corrupt= does too); both sides "
        + "must agree, or the fabric hello is refused with the mismatch named.")
    boolean linkCrc;

    /** The connection manager's port a client run used (for the report). */
    private int usedPort;

    @Option(names = "--max-buffer", converter = Sizes.Converter.class, description = "Server: the largest buffer "
        + "a client may make it register, bytes with K, M or G (default 256M).")
    Long maxBuffer;

    @Option(names = "--stripe", description = "write_bw only: cut every message into one chunk per QP (-q) and "
        + "count it when all chunks completed (io.gdrkit.verbs.cm.Striper), instead of whole messages round-robin.")
    boolean stripe;

    /** --mem gpu or gpu:N: both sides' buffers in GPU memory that the NICs read and write (perftest's --use_cuda). */
    @picocli.CommandLine.Mixin
    Mixins.Mem memOption;

    @picocli.CommandLine.Mixin
    Mixins.Gpu gpuOption;

    private String mem;
    private String gpuSpec;

    @Option(names = "--client-mem", paramLabel = "host|gpu", description = "With --mem gpu on the in-JVM fabric: "
        + "where the requester's (client's) buffer is. host: only the responder's buffer is GPU memory (perftest "
        + "with --use_cuda on the server only), the client's host buffer pinned for the GPU as GPUDirect stacks pin "
        + "registered memory, so WRITEs into the GPU are read from it by the copy engine (default: gpu, both).")
    String clientMem;

    @Option(names = "--faults", description = "Fault injection on the links this process sends on, e.g. "
        + "'drop=0.01,dup=0.01,reorder=0.02,corrupt=0.001,delay=0.01,delay-us=100,seed=7' (rates 0..1, seeded).")
    String faults;

    @Option(names = "--server-timeout", defaultValue = "600", description = "Seconds a server waits for a client.")
    long serverTimeout;

    @Option(names = {"-s", "--size"}, converter = Sizes.IntConverter.class, description = "Message size, bytes "
        + "with K, M or G (default 64K bw, 2 lat, 8 atomic).")
    Integer size;

    @Option(names = {"-a", "--all"}, description = "Run sizes 2, 4, .. 2^23 (8 for atomics).")
    boolean all;

    @Option(names = {"-n", "--iters"}, description = "Iterations (default 5000 bw, 1000 lat).")
    Long iters;

    @Option(names = "--warmup", description = "Unreported warm-up iterations before each size "
        + "(default: max(-n, 50000), at most 16 GiB of data). Given alone, exactly this many: no --warmup-ms.")
    Long warmup;

    /** What --warmup-ms is when neither it nor --warmup is given. */
    static final long DEFAULT_WARMUP_MS = 300;

    @Option(names = "--warmup-ms", description = "Before each size, repeat the warm-up (rounds of --warmup "
        + "iterations, the same test) until this many milliseconds have passed, so the JIT has compiled the loop "
        + "before measuring (default " + DEFAULT_WARMUP_MS + "; 0: off; with --warmup alone: off). The header says "
        + "which warm-up ran.")
    Long warmupMs;

    @Option(names = {"-q", "--qp"}, description = "Number of QPs; messages go round-robin (default "
        + PerfConfig.DEFAULT_QPS + ").")
    Integer qps;

    @Option(names = {"-t", "--tx-depth"}, description = "Outstanding sends per QP (default "
        + PerfConfig.DEFAULT_TX_DEPTH + ").")
    Integer txDepth;

    @Option(names = {"-r", "--rx-depth"}, description = "Receives posted per QP (send; default "
        + PerfConfig.DEFAULT_RX_DEPTH + ").")
    Integer rxDepth;

    @Option(names = {"-Q", "--cq-mod"}, description = "Signal every N-th send (<= tx-depth; default "
        + PerfConfig.DEFAULT_CQ_MOD + ").")
    Integer cqMod;

    @Option(names = "--mtu", converter = Sizes.IntConverter.class, description = "Path MTU 256..4096, or a "
        + "software MTU up to 1M (powers of two, bytes with K or M; default " + PerfConfig.DEFAULT_MTU + ").")
    Integer mtu;

    @Option(names = {"-I", "--inline_size"}, converter = Sizes.IntConverter.class, description = "Max inline "
        + "bytes (default 220 lat, 0 bw).")
    Integer inlineSize;

    @Option(names = {"-D", "--duration"}, description = "Run each size for this many seconds instead of -n.")
    Double duration;

    @Option(names = "--check", description = "Bandwidth tests: validate the data after every run, as perftest's "
        + "--data_validation (seeded pattern in the source, destination compared; in GPU memory by the vis_verify "
        + "kernel on the GPU). With --fabric shm|tcp the server process checks what the client wrote or sent and the "
        + "client what it read.")
    boolean check;

    @Option(names = {"-b", "--bidirectional"}, description = "write_bw, read_bw, send_bw on the in-JVM fabric: both "
        + "sides post at once (perftest's -b); prints each direction and their sum.")
    boolean bidirectional;

    @Option(names = "--trials", defaultValue = "1", description = "Bandwidth tests on the in-JVM fabric: repeat "
        + "each size K times (a fresh pair of NICs each) and print min/median/max and the coefficient of variation "
        + "of the average bandwidth.")
    int trials;

    @Option(names = "--buffer", converter = Sizes.Converter.class, description = "Registered buffer per side, bytes "
        + "with K, M or G (default 8M).")
    Long buffer;

    @Option(names = "--report_gbits", description = "Report bandwidth in Gb/s.")
    boolean gbits;

    @Option(names = {"-e", "--events"}, description = "send_lat: wait for receive completions with completion events "
        + "(reqNotifyCq, getCqEvent, ackCqEvents) instead of polling the CQ, as perftest's -e.")
    boolean events;

    @Option(names = {"-c", "--connection"}, paramLabel = "RC|UC|UD", description = "Connection type, as perftest's "
        + "-c (default RC). UD: send_bw between the software NICs in this JVM (datagrams of at most one MTU, "
        + "bandwidth counted at the receiver); UC is refused by name (the software NIC creates RC and UD QPs only).")
    String connection = "RC";

    /** -c UD was given and accepted. */
    private boolean ud;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEVICE", description = "The RDMA device, as perftest's -d: "
        + "with --provider native a device libibverbs lists (default: the first); with the software NICs the "
        + "in-JVM pair's soft0 or soft1, or perf-server / perf-client with --fabric. Another name is an error that "
        + "lists the devices.")
    String ibDev;

    @Option(names = {"-i", "--ib-port"}, paramLabel = "PORT", description = "The device's port, as perftest's -i "
        + "(default 1). The software NICs have port 1 only; a native device's ports are checked against its "
        + "phys_port_cnt, and the loopback runs on port 1.")
    int ibPort = 1;

    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    private boolean json;

    /** --provider native: the first RDMA device libibverbs lists, a loopback pair of two contexts on its port 1. */
    @picocli.CommandLine.Mixin
    Mixins.Provider providerOption;

    private String provider;

    @Option(names = {"-R", "--rdma_cm"}, description = "Connect the QPs through a connection manager, as perftest's "
        + "-R: with --provider soft gdrkit's own (io.gdrkit.verbs.cm; between processes it is always used), with "
        + "--provider native librdmacm (address and route resolution, connect/accept with the buffer address and "
        + "rkey in the private data), on --bind's address.")
    boolean rdmaCm;

    @Option(names = "--progress", description = "invoker (one thread polls and advances both NICs), own-device "
        + "(the test thread drives NIC a, a server thread drives NIC b, like perftest's two processes; in this mode "
        + "a NIC moves only while someone polls its CQs, so a single thread must poll both sides in turn) or "
        + "dedicated (a thread per NIC with a backoff idle strategy); default invoker.")
    String progress;

    @picocli.CommandLine.Mixin
    Mixins.Report reportOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    private java.nio.file.Path reportDir;

    @Option(names = "--baseline", description = "First measure MemorySegment.copy bandwidth and the cache-line "
        + "ping-pong RTT in this JVM, and print the test's ratio to them.")
    boolean baseline;

    /** The run is on a native device (its JSON says "simulated": false). */
    private boolean onNative;

    /** With --mem gpu: what the buffers were, in the words the report's simulated statement uses. */
    private String gpuMemory;

    @Override
    public Integer call() {
        final PrintWriter out = spec.commandLine().getOut();
        final PerfKind test = testName == null ? null : PerfKind.parse(testName.toLowerCase(Locale.ROOT));
        if (testName != null && test == null) {
            throw usage("unknown test '" + testName + "' (valid: " + PerfKind.valid() + ")");
        }
        if (test == null && !baseline) {
            throw usage("name a test (" + PerfKind.valid() + ") or give --baseline");
        }
        final Choices.Fabric f = fabricOption.require(spec.commandLine(), List.of(Choices.Fabric.SHM,
            Choices.Fabric.TCP));
        fabric = f == null ? null : f.label();
        bind = endpoint.bind;
        token = endpoint.token;
        endpoint.checkExposure(spec.commandLine());
        mem = memOption.mem.toString();
        gpuSpec = gpuOption.spec.toString();
        json = jsonOption.json;
        reportDir = reportOption.dir;
        provider = providerOption.require(spec.commandLine(), java.util.EnumSet.of(Choices.Provider.SOFT,
            Choices.Provider.NATIVE)).toString();
        if (reportDir != null && fabric != null && host == null && !loopback) {
            throw usage("--report is written by the side that measures: the client (HOST) or --loopback, not the "
                + "server");
        }
        reportOption.check(spec.commandLine());
        final ProviderKind kind = ProviderKind.parse(provider);
        connectionChecks(kind, test);
        // every check before any output or work: a bad value is a usage error, absent hardware exit code 3
        PerfConfig first = null;
        int[] sizes = null;
        FaultInjector.Config faultConfig = null;
        if (test != null) {
            first = validate(test);
            sizes = sizes(test, first.size());
            if (ud) {
                final int mtu = first.mtu();
                if (!all && size == null) {
                    // perftest's UD without -s: the MTU (the bandwidth default, 64 KiB, is no datagram)
                    first = first.withSize(mtu, first.warmup());
                    sizes = new int[] {mtu};
                } else if (!all && first.size() > mtu) {
                    throw usage("-c UD: a datagram is one packet: -s must be at most the MTU (" + mtu + "), not "
                        + first.size());
                }
                // -a: sizes up to the MTU, as perftest's UD
                sizes = java.util.Arrays.stream(sizes).filter(x -> x <= mtu).toArray();
            }
            try {
                faultConfig = faults == null ? null : FaultInjector.Config.parse(faults);
            } catch (final IllegalArgumentException e) {
                throw usage("--faults: " + e.getMessage());
            }
            if (fabric != null && events) {
                throw usage("-e/--events runs on the in-JVM fabric only (not --fabric " + fabric + ")");
            }
            if (kind == ProviderKind.NATIVE) {
                nativeChecks();
            }
            checkGpu(test, kind);
            if (fabric != null) {
                remoteChecks();
            }
        }
        final PerfPrinter printer = new PerfPrinter(out, json, gbits);
        final PerfReport collected = reportDir == null ? null : new PerfReport(gbits);
        printer.collect(collected);
        try {
            return measure(test, first, sizes, faultConfig, kind, printer, collected, out);
        } finally {
            printer.endTable(); // notes that came after the column header follow the table
        }
    }

    private int measure(final PerfKind test, final PerfConfig first, final int[] sizes,
                        final FaultInjector.Config faultConfig, final ProviderKind kind, final PerfPrinter printer,
                        final PerfReport collected, final PrintWriter out) {
        BaselineResult base = null;
        if (baseline) {
            base = runBaseline(printer, out);
        }
        if (test == null) {
            writeReport(collected, printer, null, null, base);
            return 0;
        }
        if (ud) {
            return udRun(first, sizes, printer);
        }
        if (kind == ProviderKind.NATIVE) {
            final int rc = nativeRun(test, first, sizes, printer);
            writeReport(collected, printer, test, first, base);
            return rc;
        }
        if (fabric != null) {
            final int rc = remote(test, first, sizes, printer, out, faultConfig);
            writeReport(collected, printer, test, first, base);
            return rc;
        }
        printer.comment(Loopback.SIMULATED_HEADER);
        if (faultConfig != null) {
            printer.comment("# faults: " + faults);
        }
        printer.comment("# test: " + test.id() + (test.bandwidth ? "" : test.halfRoundTrip()
            ? " (one-way latency = RTT/2)" : " (round-trip latency)") + "  qps: " + first.numQps()
            + "  tx-depth: " + first.txDepth() + "  cq-mod: " + Math.min(first.cqMod(), first.txDepth())
            + "  mtu: " + first.mtu() + "  progress: " + first.progress().name().toLowerCase(Locale.ROOT)
            + "  inline: " + first.inlineSize() + (first.events() ? "  completions: events" : "")
            + (first.bidirectional() ? "  bidirectional (-b)" : "")
            + (first.timed() ? "  duration: " + first.durationSeconds() + " s" : "  iterations: " + first.iters())
            + warmupWords());
        final io.gdrkit.gpu.GpuDevice gpu = openGpu(test);
        if (gpu != null) {
            printer.comment("# memory: GPU " + gpu.describe() + (gpu.isSimulated() ? ""
                : "; no verbs device reaches this GPU: the software NIC moves bytes with the GPU's copy engine"));
        }
        printer.header(test);
        if (gpu != null && clientOnHost()) {
            printer.comment("# memory: the client's buffer in host memory, pinned for the GPU; the server's on the GPU");
        }
        gpuMemory = gpu == null ? null : (clientOnHost() ? "the client's buffer in pinned host memory, the server's "
            : "") + (gpu.isSimulated() ? "buffers in simulated GPU memory ("
            + gpu.describe() + ")" : "buffers in real GPU memory (" + gpu.describe() + "), which the software NIC "
            + "reaches through the GPU's copy engine because no verbs device reaches the GPU");
        try {
            runSizes(test, first, sizes, printer, base, faultConfig, gpu);
        } finally {
            if (gpu != null) {
                gpu.close();
            }
        }
        writeReport(collected, printer, test, first, base);
        return 0;
    }

    /**
     * --report: writes the folder and prints where report.html is (a comment line, or a JSON object with --json).
     * Called after the run, so a run that failed leaves no report that looks complete.
     */
    private void writeReport(final PerfReport collected, final PerfPrinter printer, final PerfKind test,
                             final PerfConfig cfg, final BaselineResult base) {
        printer.endTable();
        if (collected == null) {
            return;
        }
        final Map<String, Object> facts = new LinkedHashMap<>();
        String simulated = null;
        if (test != null) {
            final String where = fabric == null ? "the in-JVM fabric (both NICs in this JVM)"
                : "the " + fabric + " fabric between processes";
            simulated = "software NICs (simulated) on " + where + "; "
                + (gpuMemory != null ? gpuMemory : "buffers in host memory");
            facts.put("test", test.id());
            facts.put("fabric", fabric == null ? "injvm" : fabric);
            if (fabric != null) {
                facts.put("server", loopback ? "127.0.0.1:" + usedPort + " (started by --loopback)" : host + ":" + usedPort);
            }
            facts.put("memory", (mem.equals("host") ? "host" : mem + (mem.equals("gpu") ? " " + gpuSpec : ""))
                + ("host".equals(clientMem) ? " (server; the client's buffer in pinned host memory)" : ""));
            facts.put("qps", cfg.numQps());
            facts.put("mtu", cfg.mtu());
            facts.put("tx_depth", cfg.txDepth());
            facts.put("cq_mod", Math.min(cfg.cqMod(), cfg.txDepth()));
            facts.put("inline", cfg.inlineSize());
            if (fabric == null) {
                // between processes each side drives its own NIC; --progress is for the in-JVM pair
                facts.put("progress", cfg.progress().name().toLowerCase(Locale.ROOT));
                facts.put("events", Boolean.toString(cfg.events()));
            }
            if (cfg.timed()) {
                facts.put("duration_s", cfg.durationSeconds());
            } else {
                facts.put("iterations", cfg.iters());
            }
            if (stripe) {
                facts.put("stripe", true);
            }
            if (faults != null) {
                facts.put("faults", faults);
            }
        }
        final io.gdrkit.labs.report.ReportFiles files;
        try {
            files = collected.build(test, spec.commandLine().getParseResult().originalArgs(), simulated, facts, base)
                .write(reportDir);
        } catch (final java.io.IOException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
        final String html = files.html().toAbsolutePath().toString();
        printer.collect(null);
        printer.comment("# report: " + html);
        printer.jsonObject(Map.of("report", html));
    }

    /** The GPU the buffers are on: --gpu with --mem gpu, CUDA device N with --mem gpu:N (perftest's --use_cuda=N). */
    private GpuSpec bufferGpu() {
        final MemSpec m = memOption.mem;
        return !m.gpu() ? null : m.cudaOrdinal() ? GpuSpec.parse("cuda:" + m.ordinal()) : gpuOption.spec;
    }

    /** --mem and --gpu, checked before any output: the combination, then that a CUDA GPU is there. */
    private void checkGpu(final PerfKind test, final ProviderKind kind) {
        final GpuSpec gpu = bufferGpu();
        if (gpu == null) {
            return;
        }
        if (gpu.kind() == GpuSpec.Kind.CUDA_RANK) {
            throw usage("--gpu cuda:rank is for coll's ranks; perf takes cuda:N");
        }
        if (test == PerfKind.WRITE_LAT) {
            throw usage("write_lat --mem gpu: the ping-pong polls the buffer from the CPU, which cannot read GPU "
                + "memory; use send_lat, read_lat or atomic_lat");
        }
        if (kind == ProviderKind.NATIVE && clientOnHost()) {
            throw usage("--client-mem host is for the software NICs' loopback (the native pair registers both "
                + "buffers on the GPU)");
        }
        if (kind == ProviderKind.NATIVE && !memOption.mem.cudaOrdinal()) {
            throw usage("--provider native registers real GPU memory with a real NIC: give --mem gpu:N (a CUDA GPU), "
                + "not a simulated GPU");
        }
        if (kind == ProviderKind.NATIVE) {
            // the RDMA device first: without one the run ends NO_RDMA_DEVICE whatever the GPU
            Providers.requireNative("perf " + test.id());
        }
        if (memOption.mem.cudaOrdinal()) {
            gpu.requirePresent("--mem", memOption.mem.toString());
        } else {
            gpu.requirePresent("--gpu");
        }
    }

    private io.gdrkit.gpu.GpuDevice openGpu(final PerfKind test) {
        final GpuSpec gpu = bufferGpu();
        return gpu == null ? null : GpuDevices.open(gpu.toString());
    }

    private void runSizes(final PerfKind test, final PerfConfig first, final int[] sizes, final PerfPrinter printer,
                          final BaselineResult base, final FaultInjector.Config faultConfig,
                          final io.gdrkit.gpu.GpuDevice gpu) {
        // sizes done and ETA on stderr for long runs (-a), only on a terminal: stdout stays perftest's table
        try (io.gdrkit.labs.report.Progress progress = StderrProgress.open("perf sizes",
            sizes.length, sizes.length > 1 && StderrProgress.terminal())) {
            for (final int s : sizes) {
                runSize(test, first, s, printer, base, faultConfig, gpu);
                progress.step();
            }
        }
    }

    private void runSize(final PerfKind test, final PerfConfig first, final int s, final PerfPrinter printer,
                         final BaselineResult base, final FaultInjector.Config faultConfig,
                         final io.gdrkit.gpu.GpuDevice gpu) {
        final PerfConfig cfg = first.withSize(s, warmupFor(s, first.iters()));
        final FaultInjector injector = faultConfig == null ? null
            : new FaultInjector(faultConfig, io.gdrkit.core.agent.NanoClock.SYSTEM);
        try (io.gdrkit.labs.perf.CmConnector cm = rdmaCm ? new io.gdrkit.labs.perf.CmConnector(cmToken(),
                java.time.Duration.ofSeconds(30)) : null;
             Loopback lb = new Loopback(cfg, injector, gpu, cm != null ? cm : Loopback::connectDirect,
                 clientOnHost())) {
            if (cm != null) {
                printer.comment("# -R: " + cm.evidence());
            }
            if (test.bandwidth) {
                if (check) {
                    DataCheck.prepare(lb, cfg, 0x5eedL + s);
                }
                final io.gdrkit.gpu.NicWriteCounters before = gpu == null ? null : gpu.dmaTarget().nicWriteCounters();
                final BwResult r = bwRun(printer, cfg, lb);
                nicWrites(printer, cfg, gpu, before);
                if (check) {
                    check(printer, cfg, lb, 0x5eedL + s);
                }
                if (cm != null) {
                    cm.close(); // disconnect while the QPs exist
                }
                if (trials > 1) {
                    trials(test, cfg, r, printer, faultConfig, gpu);
                }
                faultCounters(printer, injector);
                if (base != null) {
                    ratio(printer, cfg, "bw_avg_over_memcpy", r.bwAvgMibS(), base.memcpyAt(s), "memcpy "
                        + PerfPrinter.fmt(base.memcpyAt(s)) + " MiB/s at " + s + " B");
                }
            } else {
                final LatResult r = new LatRun(lb, cfg).run();
                printer.lat(cfg, r);
                if (cm != null) {
                    cm.close();
                }
                faultCounters(printer, injector);
                if (base != null) {
                    ratio(printer, cfg, "t_typical_over_pingpong_rtt", r.tTypicalUs() * 1e3, base.rttNs(),
                        "cache-line ping-pong RTT " + PerfPrinter.fmt(base.rttNs()) + " ns");
                }
            }
        }
    }

    /** --trials: K - 1 more runs of the size, each on fresh NICs, then their spread. */
    private void trials(final PerfKind test, final PerfConfig cfg, final BwResult first, final PerfPrinter printer,
                        final FaultInjector.Config faultConfig, final io.gdrkit.gpu.GpuDevice gpu) {
        final double[] avg = new double[trials];
        avg[0] = first.bwAvgMibS();
        for (int t = 1; t < trials; t++) {
            final FaultInjector injector = faultConfig == null ? null
                : new FaultInjector(faultConfig, io.gdrkit.core.agent.NanoClock.SYSTEM);
            try (Loopback lb = new Loopback(cfg, injector, gpu, Loopback::connectDirect, clientOnHost())) {
                if (check) {
                    DataCheck.prepare(lb, cfg, 0x5eedL + cfg.size() + t);
                }
                final BwResult r = bwRun(printer, cfg, lb);
                if (check) {
                    check(printer, cfg, lb, 0x5eedL + cfg.size() + t);
                }
                avg[t] = r.bwAvgMibS();
            }
        }
        final TrialStats st = TrialStats.of(avg);
        printer.comment(String.format(Locale.ROOT, "# trials %d: bw_avg MiB/s min %.1f median %.1f max %.1f, cv %.3f",
            st.trials(), st.min(), st.median(), st.max(), st.cv()));
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("trials", st.trials());
        m.put("test", test.id());
        m.put("bytes", cfg.size());
        m.put("bw_avg_min_mib_s", round(st.min()));
        m.put("bw_avg_median_mib_s", round(st.median()));
        m.put("bw_avg_max_mib_s", round(st.max()));
        m.put("bw_avg_cv", Math.round(st.cv() * 10000) / 10000.0);
        m.put("simulated", true);
        m.put("fabric", "injvm");
        printer.jsonObject(m);
    }

    /** One bandwidth run, printed: with -b each direction as a note (a JSON object) and the sum as the row. */
    private BwResult bwRun(final PerfPrinter printer, final PerfConfig cfg, final Loopback lb) {
        if (stripe) {
            final BwResult r = new StripedBwRun(lb.a, lb.b.mr.address(), lb.b.mr.rkey(), cfg).run();
            printer.bw(cfg, r);
            return r;
        }
        final BwRun.Bidirectional both = new BwRun(lb, cfg).runBoth();
        if (cfg.bidirectional()) {
            for (final String dir : new String[] {"a_to_b", "b_to_a"}) {
                final BwResult d = dir.equals("a_to_b") ? both.aToB() : both.bToA();
                printer.comment(String.format(Locale.ROOT, "# -b %s: %d messages, BW average %s MiB/s, peak %s "
                    + "MiB/s, %.6f Mpps", dir.replace('_', ' '), d.iterations(), PerfPrinter.fmt(d.bwAvgMibS()),
                    PerfPrinter.fmt(d.bwPeakMibS()), d.msgRateMpps()));
                final Map<String, Object> m = new LinkedHashMap<>();
                m.put("direction", dir);
                m.put("test", cfg.test().id());
                m.put("bytes", d.bytes());
                m.put("iterations", d.iterations());
                m.put("bw_peak_mib_s", round(d.bwPeakMibS()));
                m.put("bw_avg_mib_s", round(d.bwAvgMibS()));
                m.put("msg_rate_mpps", round(d.msgRateMpps()));
                m.put("simulated", true);
                m.put("fabric", "injvm");
                printer.jsonObject(m);
            }
            printer.comment("# -b: the table's row is the sum of both directions (perftest's -b figure)");
        }
        printer.bw(cfg, both.sum());
        return both.sum();
    }

    /** --check: the run's data compared; a mismatch ends the command with the evidence. */
    private void check(final PerfPrinter printer, final PerfConfig cfg, final Loopback lb, final long seed) {
        final DataCheck.Result c = DataCheck.verify(lb, cfg, seed);
        printer.comment("# check: " + c.evidence() + " (by " + c.checkBy() + ")");
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("check", c.byteExact() ? "byte-exact" : "mismatch");
        m.put("test", cfg.test().id());
        m.put("bytes", cfg.size());
        m.put("mismatch_at", c.mismatchAt());
        m.put("evidence", c.evidence());
        m.put("check_by", c.checkBy());
        m.put("bidirectional", cfg.bidirectional());
        m.put("simulated", !onNative);
        printer.jsonObject(m);
        if (!c.byteExact()) {
            throw new IllegalStateException("--check failed: " + c.evidence());
        }
    }

    private static double round(final double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    /** Server, client, or both (--loopback) over a fabric between processes. */
    /** --client-mem host: the requester's buffer stays in host memory, the responder's is on the GPU. */
    private boolean clientOnHost() {
        return "host".equals(clientMem);
    }

    /**
     * How the NIC moved the bytes it wrote into the GPU during this size's run (warm-up included), where the GPU
     * counts them (CUDA): direct (the copy engine read the client's pinned memory, no CPU copy) or staged (a CPU
     * copy into pinned staging first). Both cross PCIe host-to-device; a note and a JSON object.
     */
    private static void nicWrites(final PerfPrinter printer, final PerfConfig cfg, final io.gdrkit.gpu.GpuDevice gpu,
                                  final io.gdrkit.gpu.NicWriteCounters before) {
        if (gpu == null || before == null) {
            return;
        }
        final io.gdrkit.gpu.NicWriteCounters c = gpu.dmaTarget().nicWriteCounters().since(before);
        if (c.stagedBytes() + c.directBytes() == 0) {
            return;
        }
        printer.comment("# NIC writes into the GPU (warm-up included): " + c.directBytes() + " B direct (the copy "
            + "engine reading pinned host memory, no CPU copy: the client's, or the NIC's ring holding what it read "
            + "from a GPU source) in " + c.directSpans() + " copies, "
            + c.stagedBytes() + " B staged (a CPU copy into pinned staging, then the copy engine); host to device "
            + "over PCIe either way" + (c.pinsRefused() > 0 ? "; pins refused " + c.pinsRefused() + ": "
            + c.pinNote() : ""));
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("nic_writes", "host_to_device");
        m.put("test", cfg.test().id());
        m.put("bytes", cfg.size());
        m.put("direct_bytes", c.directBytes());
        m.put("direct_copies", c.directSpans());
        m.put("staged_bytes", c.stagedBytes());
        m.put("pins_refused", c.pinsRefused());
        if (c.pinsRefused() > 0) {
            m.put("pin_note", c.pinNote());
        }
        m.put("simulated", true);
        m.put("fabric", "injvm");
        printer.jsonObject(m);
    }

    private static void faultCounters(final PerfPrinter printer, final FaultInjector injector) {
        if (injector != null) {
            printer.comment("# faults injected: " + injector.counters());
        }
    }

    /** Between processes: the token, the server's address and --max-buffer, before any output. */
    private void remoteChecks() {
        cmToken();
        if (host == null && !loopback) {
            try {
                java.net.InetAddress.getByName(bind);
            } catch (final java.net.UnknownHostException e) {
                throw usage("--bind " + bind + ": not an address of this host (" + e.getMessage() + ")");
            }
            final long max = maxBuffer != null ? maxBuffer : RemotePerf.DEFAULT_MAX_SERVER_BUFFER;
            if (max < 64 || max > (1L << 31)) {
                throw usage("--max-buffer " + max + " must be 64 .. 2147483648 bytes");
            }
        }
    }

    private int remote(final PerfKind test, final PerfConfig first, final int[] sizes, final PerfPrinter printer,
                       final PrintWriter out, final FaultInjector.Config faultConfig) {
        printer.fabric(fabric);
        final int linkCapacity = Integer.highestOneBit(Math.max(4 << 20, first.mtu() * 4 + 4096) * 2 - 1);
        final io.gdrkit.core.auth.Token secret = cmToken();
        final boolean crc = linkCrc || faultConfig != null && faultConfig.corrupt() > 0;
        if (host == null && !loopback) {
            final java.net.InetAddress addr;
            try {
                addr = java.net.InetAddress.getByName(bind);
            } catch (final java.net.UnknownHostException e) {
                throw usage("--bind " + bind + ": not an address of this host (" + e.getMessage() + ")");
            }
            final long max = maxBuffer != null ? maxBuffer : RemotePerf.DEFAULT_MAX_SERVER_BUFFER;
            RemotePerf.serve(fabric, new java.net.InetSocketAddress(addr, port != null ? port : RemotePerf.DEFAULT_PORT),
                linkCapacity, out, serverTimeout * 1000, faultConfig, crc, max, secret);
            return 0;
        }
        int cmPort = port != null ? port : RemotePerf.DEFAULT_PORT;
        Process server = null;
        try {
            if (loopback) {
                final int[] bound = {0};
                server = startServer(test, port != null ? port : 0, crc, secret, first, bound);
                cmPort = bound[0];
            }
            usedPort = cmPort;
            printer.comment(RemotePerf.header(fabric));
            printer.comment("# test: " + test.id() + "  server: " + (loopback ? "127.0.0.1 (started by --loopback)"
                : host) + ":" + cmPort + "  qps: " + first.numQps() + "  mtu: " + first.mtu()
                + (first.timed() ? "  duration: " + first.durationSeconds() + " s" : "  iterations: " + first.iters())
                + warmupWords());
            if (faultConfig != null) {
                printer.comment("# faults (client's sending links): " + faults);
            }
            printer.header(test);
            RemotePerf.runClient(loopback ? "127.0.0.1" : host, cmPort, fabric, linkCapacity, first, sizes,
                s -> warmupFor((int) s, first.iters()), printer, true, faultConfig, crc, stripe, secret);
            if (server != null && !server.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
                throw new IllegalStateException("the server process did not exit within 30 s after QUIT");
            }
            return 0;
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the server process", e);
        } finally {
            if (server != null && server.isAlive()) {
                server.destroyForcibly();
            }
        }
    }

    /**
     * Starts {@code gdrkit perf TEST --fabric F --port P} as a child process (port 0: any free one) and waits until
     * it listens; {@code bound[0]} gets the port it listens on. The token goes to the child in its environment,
     * never on its command line (which other users can read).
     */
    private Process startServer(final PerfKind test, final int cmPort, final boolean crc,
                                final io.gdrkit.core.auth.Token secret, final PerfConfig first, final int[] bound) {
        final String javaBin = java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final int port = cmPort;
        try {
            final java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(javaBin,
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                Main.class.getName(), "perf", test.id(), "--fabric", fabric, "--port", Integer.toString(port),
                "--server-timeout", "60", "--mtu", Integer.toString(first.mtu()),
                "--max-buffer", Long.toString(Math.max(RemotePerf.DEFAULT_MAX_SERVER_BUFFER, 2 * first.bufferBytes()))));
            if (crc) {
                cmd.add("--link-crc");
            }
            cmd.addAll(Settings.childArgs()); // this command line's --set values hold in the server too
            // the NIC's and the TCP fabric's own settings (gdrkit.nic.*: one copy, cma, window ...; gdrkit.tcp.*:
            // socket buffers, parking) apply to both processes
            cmd.addAll(1, ForwardedProperties.flags("gdrkit.nic.", "gdrkit.tcp."));
            cmd.addAll(1, ForwardedProperties.JVM_WARNINGS_TO_STDERR); // the server's stdout carries its port line
            final ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
            if (token != null) {
                pb.environment().put(io.gdrkit.core.auth.Token.ENV, token);
            }
            final Process p = pb.start();
            final java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(
                p.getInputStream(), java.nio.charset.StandardCharsets.UTF_8));
            final java.util.concurrent.CompletableFuture<Boolean> ready = java.util.concurrent.CompletableFuture
                .supplyAsync(() -> {
                    try {
                        for (String line; (line = r.readLine()) != null; ) {
                            if (line.startsWith("# server: waiting for clients on port ")) {
                                bound[0] = Integer.parseInt(line.substring(line.lastIndexOf(' ') + 1).trim());
                                return true;
                            }
                        }
                        return false;
                    } catch (final java.io.IOException e) {
                        return false;
                    }
                });
            final Boolean ok = ready.get(30, java.util.concurrent.TimeUnit.SECONDS);
            if (!Boolean.TRUE.equals(ok)) {
                p.destroyForcibly();
                throw new IllegalStateException("the server process ended before listening on port " + port);
            }
            // keep draining its output so it never blocks on a full pipe
            Thread.ofPlatform().daemon(true).start(() -> {
                try {
                    while (r.readLine() != null) {
                        // discard
                    }
                } catch (final java.io.IOException ignored) {
                    // the process ended
                }
            });
            return p;
        } catch (final java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("timed out after 30 s waiting for the server process to listen on port "
                + port, e);
        } catch (final java.io.IOException | java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("cannot start the server process: " + e.getMessage(), e);
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted starting the server process", e);
        }
    }

    private boolean timedRun() {
        return duration != null && duration > 0;
    }

    private void ratio(final PerfPrinter printer, final PerfConfig cfg, final String name, final double value,
                       final double reference, final String what) {
        final double ratio = value / reference;
        printer.comment("# ratio " + name + " = " + String.format(Locale.ROOT, "%.3f", ratio) + " (" + what
            + ", same run)");
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("ratio", name);
        m.put("test", cfg.test().id());
        m.put("bytes", cfg.size());
        m.put("value", Math.round(ratio * 1000) / 1000.0);
        m.put("simulated", true);
        m.put("fabric", "injvm");
        printer.jsonObject(m);
    }


    private BaselineResult runBaseline(final PerfPrinter printer, final PrintWriter out) {
        printer.comment("# baseline: physical limits of this machine, measured in this JVM (no NIC involved)");
        printer.comment("#bytes memcpy[MiB/sec]  (MemorySegment.copy native->native, single thread)");
        final Map<Integer, Double> memcpy = new LinkedHashMap<>();
        final int[] baseSizes = size != null && !all ? new int[] {64, 4096, 65536, 1 << 20, 1 << 22, size}
            : new int[] {64, 4096, 65536, 1 << 20, 1 << 22};
        for (final int s : baseSizes) {
            if (s <= 0 || memcpy.containsKey(s)) {
                continue;
            }
            final double bw = Baseline.memcpyMibPerSec(s, 300);
            memcpy.put(s, bw);
            printer.comment(s + " " + PerfPrinter.fmt(bw));
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("baseline", "memcpy");
            m.put("bytes", s);
            m.put("bw_mib_s", Math.round(bw * 1000) / 1000.0);
            printer.jsonObject(m);
        }
        final double[] rtts = Baseline.pingPongRttNs(PING_PONG_ROUNDS, 5);
        final double median = rtts[rtts.length / 2];
        printer.comment("# cache-line ping-pong RTT[nsec] (2 threads, VarHandle release/acquire on a native "
            + "segment): min " + PerfPrinter.fmt(rtts[0]) + " median " + PerfPrinter.fmt(median) + " max "
            + PerfPrinter.fmt(rtts[rtts.length - 1]));
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("baseline", "cacheline_pingpong");
        m.put("rtt_min_ns", Math.round(rtts[0] * 10) / 10.0);
        m.put("rtt_median_ns", Math.round(median * 10) / 10.0);
        m.put("rtt_max_ns", Math.round(rtts[rtts.length - 1] * 10) / 10.0);
        printer.jsonObject(m);
        return new BaselineResult(memcpy, median);
    }

    private PerfConfig validate(final PerfKind test) {
        if (!loopback && fabric == null) {
            throw usage("give --loopback (both NICs in this JVM) or --fabric shm|tcp (a server and a client process)");
        }
        if (fabric != null && !fabric.equals("shm") && !fabric.equals("tcp")) {
            throw usage("--fabric must be shm or tcp, not '" + fabric + "'");
        }
        if (check && test.isAtomic()) {
            throw usage("--check validates moved bytes; atomic_bw moves none (it adds to one word)");
        }
        if (check && !test.bandwidth) {
            throw usage("--check works with bandwidth tests (write_bw, send_bw, read_bw)");
        }
        if (bidirectional && fabric != null) {
            throw usage("-b/--bidirectional runs on the in-JVM fabric (--loopback without --fabric) for now");
        }
        if (bidirectional && stripe) {
            throw usage("-b/--bidirectional and --stripe cannot be combined");
        }
        if (bidirectional && !"soft".equals(provider)) {
            throw usage("-b/--bidirectional runs on the software NICs (--provider soft) for now");
        }
        if (iters != null) {
            Counts.atMost(spec.commandLine(), "-n/--iters", iters, Counts.MAX_ITERS);
        }
        if (warmup != null) {
            Counts.atMost(spec.commandLine(), "--warmup", warmup, Counts.MAX_ITERS);
        }
        if (duration != null) {
            Counts.atMost(spec.commandLine(), "-D/--duration", duration, Counts.MAX_SECONDS);
        }
        if (warmupMs != null) {
            Counts.atMost(spec.commandLine(), "--warmup-ms", warmupMs, Counts.MAX_SECONDS * 1000);
        }
        if (trials < 1 || trials > 1000) {
            throw usage("--trials must be 1 .. 1000, not " + trials);
        }
        if (trials > 1 && (fabric != null || !test.bandwidth)) {
            throw usage("--trials works with bandwidth tests on the in-JVM fabric (--loopback without --fabric)");
        }
        if (stripe && test != PerfKind.WRITE_BW) {
            throw usage("--stripe works with write_bw only");
        }
        if (stripe && timedRun()) {
            throw usage("--stripe counts messages: use -n, not -D");
        }
        if (fabric != null && !"host".equals(mem)) {
            throw usage("--mem gpu works on the in-JVM fabric (--loopback without --fabric) for now");
        }
        if (clientMem != null && !clientMem.equals("host") && !clientMem.equals("gpu")) {
            throw usage("--client-mem takes host or gpu, not '" + clientMem + "'");
        }
        if ("host".equals(clientMem) && "host".equals(mem)) {
            throw usage("--client-mem host goes with --mem gpu (the server's buffer on the GPU)");
        }
        if (host != null && fabric == null) {
            throw usage("a HOST needs --fabric");
        }
        if (host != null && loopback) {
            throw usage("--loopback starts its own server: do not name a HOST");
        }
        if (port != null && (port < 0 || port > 65535)) {
            throw usage("--port " + port + " outside 0..65535 (0: any free port)");
        }
        // the picocli fields only feed the engine's Context, which owns the defaults and the validation
        final PerfConfig cfg = new PerfConfig(test);
        if (progress != null) {
            cfg.progress(switch (progress.toLowerCase(Locale.ROOT)) {
                case "invoker" -> SoftNicContext.ProgressMode.INVOKER;
                case "own-device" -> SoftNicContext.ProgressMode.OWN_DEVICE;
                case "dedicated" -> SoftNicContext.ProgressMode.DEDICATED;
                default -> throw usage("--progress must be invoker, own-device or dedicated, not '" + progress
                    + "'");
            });
        }
        if (qps != null) {
            cfg.numQps(qps);
        }
        if (txDepth != null) {
            cfg.txDepth(txDepth);
        }
        if (rxDepth != null) {
            cfg.rxDepth(rxDepth);
        }
        if (cqMod != null) {
            cfg.cqMod(cqMod);
        }
        if (mtu != null) {
            cfg.mtu(mtu);
        }
        if (buffer != null) {
            cfg.bufferBytes(buffer);
        }
        if (size != null) {
            cfg.size(size);
        }
        if (iters != null) {
            cfg.iters(iters);
        }
        if (warmup != null) {
            cfg.warmup(warmup);
        }
        cfg.warmupMs(warmupMsOrDefault());
        cfg.check(check && fabric != null); // across processes RemotePerf checks; in this JVM the command does
        if (inlineSize != null) {
            cfg.inlineSize(inlineSize);
        }
        if (duration != null) {
            cfg.durationSeconds(duration);
        }
        cfg.events(events);
        cfg.bidirectional(bidirectional);
        try {
            cfg.conclude();
        } catch (final IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
        if (all && cfg.bufferBytes() < (1L << MAX_ALL_EXP) && !test.isAtomic()) {
            throw usage("-a/--all needs a buffer of at least " + (1L << MAX_ALL_EXP) + " bytes (--buffer "
                + cfg.bufferBytes() + ")");
        }
        return cfg;
    }

    private int[] sizes(final PerfKind test, final int single) {
        if (!all || test.isAtomic()) {
            return new int[] {single};
        }
        final int[] s = new int[MAX_ALL_EXP];
        for (int e = 1; e <= MAX_ALL_EXP; e++) {
            s[e - 1] = 1 << e;
        }
        return s;
    }

    /**
     * Default warm-up: the JIT needs tens of thousands of iterations before the loop and the NIC run compiled,
     * so at least {@value #MIN_WARMUP} (or -n if larger), but no more than 16 GiB of data
     * (a short run without enough warm-up measures about a third of the warm bandwidth at 1 MiB).
     */
    /** --warmup-ms, or its default when neither it nor --warmup is given, or 0 with --warmup alone. */
    private long warmupMsOrDefault() {
        return warmupMs != null ? warmupMs : warmup != null ? 0 : DEFAULT_WARMUP_MS;
    }

    /** The header's words for the warm-up every size gets. */
    private String warmupWords() {
        final long ms = warmupMsOrDefault();
        final String count = warmup != null ? warmup + " iterations" : "max(-n, 50000) iterations (<= 16 GiB)";
        if (ms > 0) {
            return "  warm-up: >= " + ms + " ms per size (rounds of " + (warmup != null
                ? Math.max(io.gdrkit.labs.perf.Warmup.MIN_ROUND, warmup) + " iterations" : count) + ", unreported)";
        }
        return "  warm-up: " + (warmup != null && warmup == 0 ? "none" : count + " per size, unreported");
    }

    private long warmupFor(final int s, final long n) {
        if (warmup != null) {
            return warmup;
        }
        return io.gdrkit.labs.perf.ShmLoopbackPerf.defaultWarmup(s, n);
    }

    private io.gdrkit.core.auth.Token cmToken() {
        try {
            return token != null ? io.gdrkit.core.auth.Token.of(token) : io.gdrkit.core.auth.Token.fromProcess();
        } catch (final IllegalArgumentException e) {
            throw usage("--token: " + e.getMessage());
        }
    }

    /**
     * --provider native: the first native device, or the named early end ({@link io.gdrkit.labs.provider.NoDeviceException}, from the lab,
     * before anything else is opened); then a loopback pair of two contexts on it per size, in host memory or GPU
     * memory (--mem gpu:N, registered through DMA-BUF, else peermem, with the reason), measured as on the
     * software NICs. The JSON says "simulated": false.
     */
    /**
     * -c, -d and -i, as perftest takes them, before any output: RC runs; UC and UD are named refusals; a device or
     * port this run does not have is a usage error naming those it has (a native device's name and ports are
     * checked where the device is found, in {@link #nativeDevice}).
     */
    private void connectionChecks(final ProviderKind kind, final PerfKind test) {
        final String c = connection.toUpperCase(Locale.ROOT);
        switch (c) {
            case "RC" -> { }
            case "UC" -> throw usage("-c UC: the software NIC creates RC and UD QPs only (ibv_create_qp with "
                + "IBV_QPT_UC fails with EOPNOTSUPP); perf runs RC");
            case "UD" -> {
                // send_bw over UD on the in-JVM pair; everything else with UD is refused by name
                if (test != PerfKind.SEND_BW || kind != ProviderKind.SOFT || fabric != null || bidirectional
                    || (qps != null && qps != 1) || !"host".equals(mem) || faults != null || events || trials > 1
                    || stripe || duration != null || loopbackOnlyOptionsForUd()) {
                    throw usage("-c UD runs send_bw between the software NICs in this JVM, one QP, host memory "
                        + "(no -b, -q, -D, --fabric, --mem gpu, --faults, -e, --trials, --stripe, --provider native)");
                }
                ud = true;
            }
            default -> throw usage("-c must be RC, UC or UD, not '" + connection + "'");
        }
        if (ibPort < 1) {
            throw usage("-i must be a port number from 1, not " + ibPort);
        }
        if (kind == ProviderKind.NATIVE) {
            return;
        }
        final List<String> devices = fabric == null ? List.of("soft0", "soft1") : List.of("perf-server",
            "perf-client");
        if (ibDev != null && !devices.contains(ibDev)) {
            throw usage("-d " + ibDev + ": no such device in this run (the software NICs here are "
                + String.join(", ", devices) + ")");
        }
        if (ibPort != 1) {
            throw usage("-i " + ibPort + ": the software NIC " + (ibDev != null ? ibDev : devices.get(0))
                + " has port 1 only (phys_port_cnt 1)");
        }
    }

    /** Options -c UD does not take that the check above does not list by field. */
    private boolean loopbackOnlyOptionsForUd() {
        return reportDir != null || baseline;
    }

    /**
     * send_bw -c UD: per size a fresh pair of UD QPs (software NICs, this JVM), the warm-up, then the measured run;
     * with --check every datagram is compared with what was sent.
     */
    private int udRun(final PerfConfig first, final int[] sizes, final PerfPrinter printer) {
        printer.connection("UD");
        printer.comment(Loopback.SIMULATED_HEADER);
        printer.comment("# test: send_bw  connection: UD (one UD QP per side, an address handle, Q_Key 0x"
            + Integer.toHexString(io.gdrkit.labs.perf.UdSendBw.QKEY) + "; counted at the receiver, at most "
            + "min(tx-depth, rx-depth) datagrams ahead)  tx-depth: " + first.txDepth() + "  rx-depth: "
            + first.rxDepth() + "  mtu: " + first.mtu() + "  iterations: " + first.iters() + warmupWords());
        boolean header = false;
        for (final int s : sizes) {
            final PerfConfig cfg = first.withSize(s, warmupFor(s, first.iters()));
            final io.gdrkit.labs.perf.UdSendBw pair = new io.gdrkit.labs.perf.UdSendBw(s, cfg.txDepth(),
                cfg.rxDepth(), cfg.mtu());
            try {
                final long ms = warmupMsOrDefault();
                final long start = System.nanoTime();
                if (cfg.warmup() > 0) {
                    do {
                        pair.run(cfg.warmup(), false);
                    } while ((System.nanoTime() - start) / 1_000_000 < ms);
                }
                final io.gdrkit.labs.perf.UdSendBw.Result r = pair.run(cfg.iters(), check);
                if (!header) {
                    printer.header(PerfKind.SEND_BW);
                    header = true;
                }
                printer.bw(cfg, r.bw());
                if (check) {
                    final String evidence = r.checked() + " datagrams of " + s + " B compared byte for byte behind "
                        + "the GRH area, " + r.bad() + " differed";
                    printer.comment("# check: " + evidence + " (by the receiving JVM)");
                    final Map<String, Object> m = new LinkedHashMap<>();
                    m.put("check", r.bad() == 0 ? "byte-exact" : "mismatch");
                    m.put("test", "send_bw");
                    m.put("connection", "UD");
                    m.put("bytes", s);
                    m.put("evidence", evidence);
                    m.put("simulated", true);
                    printer.jsonObject(m);
                    if (r.bad() != 0) {
                        throw new IllegalStateException("--check failed: " + evidence);
                    }
                }
            } finally {
                pair.close();
            }
        }
        return 0;
    }

    /** --provider native: the device -d names (default the first), with -i checked against its ports. */
    private io.gdrkit.verbs.Device nativeDevice(final String what) {
        final io.gdrkit.verbs.Device device;
        try {
            device = Providers.requireNative(what, ibDev);
        } catch (final Providers.UnknownDeviceException e) {
            throw usage("-d " + ibDev + ": " + e.getMessage());
        }
        if (ibPort != 1) {
            final int ports;
            try (io.gdrkit.verbs.VerbsContext ctx = device.open()) {
                ports = ctx.queryDevice().physPortCnt();
            }
            throw usage("-i " + ibPort + ": " + (ibPort > ports ? "device " + device.name() + " has ports 1.."
                + ports : "the native loopback pair runs on port 1 only; port " + ibPort + " of "
                + device.name() + " is not supported here"));
        }
        return device;
    }

    /** --provider native's limits, before any output. */
    private void nativeChecks() {
        if (fabric != null || faults != null || progress != null || events || trials > 1 || stripe) {
            throw usage("--provider native runs a loopback pair on one device (--loopback); --fabric, --faults, "
                + "--progress, -e, --trials and --stripe are for the software NICs");
        }
        if (reportDir != null) {
            throw usage("--report describes software-NIC runs; with --provider native it is not written (the "
                + "table or --json is the record)");
        }
    }

    private int nativeRun(final PerfKind test, final PerfConfig first, final int[] sizes, final PerfPrinter printer) {
        final io.gdrkit.verbs.Device device = nativeDevice("perf " + test.id()); // ends here without one
        onNative = true;
        printer.simulated(false).fabric("native");
        printer.comment("# native provider (libibverbs through FFM): device " + device.name() + " guid 0x"
            + Long.toHexString(device.guid()) + "; loopback: two contexts on port 1"
            + (rdmaCm ? "; -R: librdmacm on " + bind : "") + ";" + warmupWords().substring(1));
        final io.gdrkit.gpu.GpuDevice gpu = openGpu(test);
        boolean header = false;
        try {
            for (final int s : sizes) {
                final PerfConfig cfg = first.withSize(s, warmupFor(s, first.iters()));
                try (io.gdrkit.labs.perf.NativeCmConnector cm = rdmaCm
                        ? io.gdrkit.labs.perf.NativeCmConnector.on(bind) : null;
                     Loopback lb = Loopback.overNative(device, cfg, gpu, cm != null ? cm : Loopback::connectDirect)) {
                    if (cm != null) {
                        printer.comment("# -R: " + String.join(", ", cm.calls()));
                    }
                    if (lb.gpuRegistration() != null) {
                        printer.comment("# GPU memory: " + lb.gpuRegistration().path() + ": "
                            + lb.gpuRegistration().evidence());
                    }
                    if (!header) {
                        printer.header(test);
                        header = true;
                    }
                    if (test.bandwidth) {
                        if (check) {
                            DataCheck.prepare(lb, cfg, 0x5eedL + s);
                        }
                        printer.bw(cfg, new BwRun(lb, cfg).run());
                        if (check) {
                            check(printer, cfg, lb, 0x5eedL + s);
                        }
                    } else {
                        printer.lat(cfg, new LatRun(lb, cfg).run());
                    }
                }
            }
        } finally {
            if (gpu != null) {
                gpu.close();
            }
        }
        return 0;
    }

    private ParameterException usage(final String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
