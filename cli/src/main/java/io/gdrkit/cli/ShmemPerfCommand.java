/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.shmem.CudaShmemPerf;
import io.gdrkit.shmem.ShmemContext;
import io.gdrkit.shmem.ShmemException;
import io.gdrkit.shmem.ShmemMode;
import io.gdrkit.shmem.ShmemPerf;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shmem-perf}: NVSHMEM-perftest-shaped device-API measurements over the IBRC or the IBGDA path. */
@Command(name = "shmem-perf", mixinStandardHelpOptions = true,
    description = "GPU-initiated communication (symmetric heap, device put/get/signal/atomics) over the CPU-proxy "
        + "(ibrc) or GPU-driven (ibgda) path on software NICs, byte-checked, with a per-step time breakdown and, "
        + "per size, a time split (kernel, communication, CPU wait, IBRC proxy) after an untimed warm-up (one pass; "
        + "on CUDA >= 300 ms of them). "
        + "put_signal_lat reports half round trips (half_rtt), its split's communication full ones. "
        + "Simulated kernels on sim:* GPUs (docs/SHMEM.md).")
final class ShmemPerfCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", description = "put_lat, get_lat, put_bw, put_signal_lat, atomic_lat, msg_rate, or "
        + "ring_rtt (CUDA only: a kernel that only rings host memory and polls for the CPU's answer: the floor).")
    String test;

    @Option(names = "--mode", defaultValue = "ibgda", description = "ibrc (CPU proxy) or ibgda (GPU rings the "
        + "doorbell).")
    String mode;

    @Option(names = "--np", defaultValue = "2", description = "PEs (2..8), one thread, software NIC and GPU each.")
    int np;

    /** sim:* runs Java kernels on SM workers; cuda:N the PTX kernels, every PE on that GPU. */
    @picocli.CommandLine.Mixin
    Mixins.Gpu gpuOption;

    @Option(names = "--variant", defaultValue = "thread", description = "put_bw/msg_rate on CUDA: thread, warp "
        + "(put_warp: lane 0 posts the warp's range) or block (put_block).")
    String variant;

    @Option(names = "--threads", defaultValue = "1", description = "GPU threads per block (put_bw, msg_rate).")
    int threads;

    @Option(names = "--blocks", defaultValue = "1", description = "Blocks (put_bw, msg_rate).")
    int blocks;

    @Option(names = "-b", defaultValue = "8", converter = Sizes.Converter.class, description = "Smallest message, "
        + "bytes with K, M or G (default ${DEFAULT-VALUE}).")
    long min;

    @Option(names = "-e", defaultValue = "4096", converter = Sizes.Converter.class, description = "Largest message "
        + "(sizes double; default ${DEFAULT-VALUE}).")
    long max;

    @Option(names = {"-n", "--iters"}, defaultValue = "200", description = "Operations per size.")
    int iters;

    @Option(names = "--no-fence", description = "Negative control: leave out the fence before the doorbell (ibgda).")
    boolean noFence;

    @Option(names = "--warmup-ms", defaultValue = "300", description = "On a CUDA GPU, repeat the untimed warm-up "
        + "pass (the smallest size) until this many milliseconds have gone by, so that the NICs' and the proxy's code "
        + "is compiled before the first reported size, as perf does (default 300; 0: one pass).")
    long warmupMs;

    @Option(names = "--idle", defaultValue = "backoff", description = "Idle strategy of the NIC threads and the "
        + "proxy: spin (for measurements on a host with cores to spare), yield, backoff, sleep:<us>.")
    String idle;

    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    /** The rows, the time breakdown, the doorbell counters. */
    @picocli.CommandLine.Mixin
    Mixins.Report reportOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    private boolean json;
    private java.nio.file.Path reportDir;

    @Override
    public Integer call() throws Exception {
        final PrintWriter out = spec.commandLine().getOut();
        json = jsonOption.json;
        reportDir = reportOption.dir;
        final String gpu = gpuOption.spec.toString();
        final ShmemMode m = switch (mode.toLowerCase(Locale.ROOT)) {
            case "ibrc" -> ShmemMode.IBRC;
            case "ibgda" -> ShmemMode.IBGDA;
            default -> throw new ParameterException(spec.commandLine(), "--mode must be ibrc or ibgda, not '" + mode
                + "'");
        };
        if (np < 2 || np > 8) {
            throw new ParameterException(spec.commandLine(), "--np must be 2..8");
        }
        if (gpuOption.spec.kind() == GpuSpec.Kind.CUDA_RANK) {
            throw new ParameterException(spec.commandLine(), "--gpu takes sim:<preset> or cuda:N here, not cuda:rank");
        }
        final boolean cuda = gpuOption.spec.cuda();
        if (min < 1 || min > max) {
            throw new ParameterException(spec.commandLine(), "-b " + min + " must be 1 .. -e " + max + " (bytes)");
        }
        if (iters < 1 || threads < 1 || blocks < 1) {
            throw new ParameterException(spec.commandLine(), "-n, --threads and --blocks must be >= 1");
        }
        Counts.atMost(spec.commandLine(), "-n/--iters", iters, Counts.MAX_ITERS);
        if (!test.equals("ring_rtt")) {
            try {
                ShmemPerf.Test.byLabel(test);
            } catch (final ShmemException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        reportOption.check(spec.commandLine());
        final int v = switch (variant) {
            case "thread" -> 0;
            case "warp" -> 1;
            case "block" -> 2;
            default -> throw new ParameterException(spec.commandLine(), "--variant must be thread, warp or block");
        };
        if (test.equals("ring_rtt") && !cuda) {
            throw new ParameterException(spec.commandLine(), "ring_rtt needs --gpu cuda:N (it measures PCIe)");
        }
        gpuOption.spec.requirePresent("--gpu");
        if (test.equals("ring_rtt")) {
            final CudaShmemPerf.RingRtt rr;
            try {
                rr = CudaShmemPerf.ringRtt(gpu, iters, Duration.ofSeconds(30));
            } catch (final ShmemException e) {
                out.println(json ? "{\"error\":" + new ObjectMapper().writeValueAsString(e.getMessage())
                    + ",\"reason\":\"" + e.reason() + "\",\"simulated\":false}" : "# FAILED: " + e.getMessage());
                return Main.EXIT_FAILURE;
            }
            if (json) {
                final Map<String, Object> root = new LinkedHashMap<>();
                root.put("simulated", rr.simulatedGpu());
                root.put("real", "the CUDA kernel and PCIe round trips (no NIC involved)");
                root.put("result", rr);
                out.println(new ObjectMapper().writeValueAsString(root));
            } else {
                out.printf(Locale.ROOT, "# ring_rtt on %s: a kernel stores to pinned host memory and spins on the CPU's "
                    + "answer%n#iters  t_min[us]  t_med[us]  t_max[us]%n%-7d %10.2f %10.2f %10.2f%n", gpu, rr.iters(),
                    rr.minUs(), rr.medianUs(), rr.maxUs());
            }
            return 0;
        }
        final ShmemPerf.Test t;
        final ShmemPerf.Result r;
        try {
            t = ShmemPerf.Test.byLabel(test);
            final ShmemContext c = new ShmemContext().nPes(np).gpu(gpu).mode(m).wqeFence(!noFence)
                .idle(idle).timeout(Duration.ofSeconds(30)).warmup(Duration.ofMillis(warmupMs));
            r = cuda ? CudaShmemPerf.run(c, t, min, max, iters, blocks, threads, v)
                : ShmemPerf.run(c, t, min, max, iters, blocks, threads);
        } catch (final ShmemException e) {
            if (e.reason() == ShmemException.Reason.BAD_ARGUMENT) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
            out.println((json ? "{\"error\":" + new ObjectMapper().writeValueAsString(e.getMessage()) + ",\"reason\":\""
                + e.reason() + "\",\"simulated\":true}" : "# FAILED: " + e.getMessage()));
            out.flush();
            return Main.EXIT_FAILURE;
        }
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            root.put("simulated", true);
            root.put("real", r.simulatedGpu() ? "nothing: software NIC (simulated) and simulated GPU kernels; the "
                + "bytes, WQEs, doorbells and CQEs are real memory" : "the GPU: CUDA kernels write the WQEs or proxy "
                + "requests into pinned host memory and poll completions across PCIe; the NIC is the software NIC "
                + "(simulated) on the host, moving bytes to and from GPU memory with the copy engine");
            root.put("warmup_ms", r.simulatedGpu() ? 0 : warmupMs); // the simulator's runs warm up with one pass
            root.put("result", r);
            out.println(new ObjectMapper().writeValueAsString(root));
            report(r, out);
            return 0;
        }
        out.println("# shmem-perf " + r.test() + " --mode " + r.mode().name().toLowerCase(Locale.ROOT) + " --np "
            + r.nPes() + ": software NIC (simulated), GPU " + r.gpu() + (r.simulatedGpu() ? " (simulated kernels)"
            : " (CUDA kernels)")
            + (r.wqeFence() ? "" : ", NO fence before the doorbell")
            + (r.simulatedGpu() ? "; warm-up: one pass" : "; warm-up: >= " + warmupMs + " ms of the smallest size"));
        final boolean halfRtt = ShmemPerf.HALF_RTT.equals(r.rows().get(0).latency());
        out.println(r.rows().get(0).mibPerSec() > 0 ? "#bytes     ops      threads  MiB/s        Mops"
            : halfRtt ? "#bytes     iters    half_rtt_min[us] half_rtt_med[us] half_rtt_max[us]"
            : "#bytes     iters    t_min[us]  t_med[us]  t_max[us]");
        for (final ShmemPerf.Row row : r.rows()) {
            out.println(ShmemPerf.format(row) + (row.verified() ? "" : "  BYTE CHECK FAILED"));
        }
        if (r.rows().get(0).split() != null) {
            out.println("# time split per size, us per operation (total = kernel + comm + cpu-wait"
                + (halfRtt ? "; comm is the full round trip, twice half_rtt" : "") + "):");
            for (final ShmemPerf.Row row : r.rows()) {
                out.println("#   " + ShmemPerf.formatSplit(row));
            }
            out.println("# measured: " + r.rows().get(0).split().method());
        }
        out.println("# device: " + r.device());
        if (r.breakdown().samples() > 0) {
            out.println("# breakdown (" + ShmemPerf.format(r.breakdown()) + ")");
        }
        out.println("# doorbells seen by the NIC on the path's QPs: rung by a CPU " + r.cpuDoorbells() + ", by the GPU "
            + r.gpuDoorbells() + "; stale WQEs refused " + r.staleWqes());
        report(r, out);
        return 0;
    }

    /** --report: the folder from the result record, after the result itself is printed. */
    private void report(final ShmemPerf.Result r, final PrintWriter out) {
        if (reportDir == null) {
            return;
        }
        final io.gdrkit.labs.report.Report report = ReportOutput.forCommand("gdrkit shmem-perf", spec)
            .simulated(true, real(r));
        io.gdrkit.labs.report.ExperimentReports.shmemPerf(report, r);
        ReportOutput.writeAndPrint(report, reportDir, json, out);
    }

    private static String real(final ShmemPerf.Result r) {
        return r.simulatedGpu() ? "software NICs (simulated) and simulated GPU kernels; the bytes, WQEs, doorbells "
            + "and CQEs are real memory" : "software NICs (simulated) on the host; the GPU " + r.gpu() + " and its "
            + "CUDA kernels are real";
    }
}
