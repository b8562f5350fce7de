/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.labs.perf.Deadline;
import io.gdrkit.labs.perf.Loopback;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code gpu-path}: RDMA WRITEs from host memory into GPU memory over two software NICs, by the GDR path (the NIC
 * writes the GPU's memory itself, an MR over {@link GpuDmaMemory}) and by the host-bounce path (the NIC writes a
 * pinned staging buffer, then a GPU copy), each checked byte by byte with a copy back, and timed.
 */
@Command(name = "gpu-path", mixinStandardHelpOptions = true,
    description = "GPUDirect (NIC writes GPU memory) versus host bounce (pinned staging + GPU copy), byte-checked "
        + "and timed, on a simulated GPU (sim:h200, sim:v100, ...) or a real one (cuda:N).")
final class GpuPathCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--gpu", defaultValue = "sim:h200", description = "sim:<v100|h100|h200|all-devices> or cuda:N.")
    String gpuSpec;

    @Option(names = "--path", defaultValue = "both", description = "gdr, bounce or both.")
    String path;

    @Option(names = "--source-gpu", description = "Also send from this GPU's memory (the NIC reads it): sim:<preset> "
        + "or cuda:N, e.g. cuda:1 with --gpu cuda:0 for a GPU-to-GPU source (B6); compared with the host source.")
    String sourceGpu;

    @Option(names = {"-s", "--size"}, defaultValue = "4194304", description = "Bytes per WRITE.")
    int size;

    @Option(names = {"-n", "--iters"}, defaultValue = "200", description = "WRITEs per path.")
    int iters;

    @Override
    public Integer call() {
        final PrintWriter out = spec.commandLine().getOut();
        if (size < 1 || size > (256 << 20)) {
            throw new ParameterException(spec.commandLine(), "-s must be 1 .. 268435456");
        }
        if (iters < 1) {
            throw new ParameterException(spec.commandLine(), "-n must be >= 1");
        }
        if (!path.equals("gdr") && !path.equals("bounce") && !path.equals("both")) {
            throw new ParameterException(spec.commandLine(), "--path must be gdr, bounce or both, not '" + path + "'");
        }
        try (GpuDevice gpu = open(gpuSpec); Loopback lb = new Loopback(SoftNicContext.ProgressMode.INVOKER, 1,
            2L * size, 128, 128, 0, 4096)) {
            out.println(Loopback.SIMULATED_HEADER + "; GPU: " + gpu.describe());
            if (!gpu.isSimulated()) {
                out.println("# no verbs device reaches this GPU: the software NIC's engine moves the bytes with the "
                    + "GPU's copy engine (cuMemcpy through FFM)");
            }
            Fixture.fill(lb.a.buf.asSlice(0, size), 0x5eed);
            out.println("#path   bytes      iters  MiB/s      check");
            if (!path.equals("bounce")) {
                run(out, gpu, lb, true);
            }
            if (!path.equals("gdr")) {
                run(out, gpu, lb, false);
            }
            if (sourceGpu != null) {
                try (GpuDevice src = open(sourceGpu)) {
                    out.println("# source: " + src.describe());
                    runFromGpu(out, src, gpu, lb);
                }
            }
            return 0;
        }
    }

    private void run(final PrintWriter out, final GpuDevice gpu, final Loopback lb, final boolean gdr) {
        final DeviceBuffer target = gpu.alloc(size);
        final MemorySegment staging = gdr ? null : gpu.allocHost(size);
        GpuDmaMemory dma = null;
        try {
            final MemoryRegion mr;
            if (gdr) {
                dma = new GpuDmaMemory(gpu, target);
                mr = lb.b.pd.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            } else {
                mr = lb.b.pd.registerMr(staging, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            }
            final long nanos = timeWrites(lb, lb.a.mr, mr, gdr ? null : () -> gpu.copyHtoD(target, 0, staging, 0, size));
            final MemorySegment back = lb.b.buf.asSlice(0, size);
            gpu.copyDtoH(back, 0, target, 0, size);
            final long mismatch = lb.a.buf.asSlice(0, size).mismatch(back);
            final double mibs = (double) size * iters / (nanos / 1e9) / (1 << 20);
            out.println(String.format(Locale.ROOT, "%-7s %-10d %-6d %-10.1f %s", gdr ? "gdr" : "bounce", size, iters,
                mibs, mismatch == -1 ? "byte-exact" : "MISMATCH at byte " + mismatch));
            mr.deregister();
            if (mismatch != -1) {
                throw new IllegalStateException((gdr ? "GDR" : "bounce") + " path delivered wrong bytes at " + mismatch);
            }
        } finally {
            if (dma != null) {
                dma.close();
            }
            if (staging != null) {
                gpu.freeHost(staging);
            }
            gpu.free(target);
        }
    }

    /** GDR into {@code gpu} with the source SGE in {@code src}'s memory: the NIC reads one GPU and writes another. */
    private void runFromGpu(final PrintWriter out, final GpuDevice src, final GpuDevice gpu, final Loopback lb) {
        final DeviceBuffer from = src.alloc(size);
        final DeviceBuffer target = gpu.alloc(size);
        try (GpuDmaMemory srcMem = new GpuDmaMemory(src, from); GpuDmaMemory dstMem = new GpuDmaMemory(gpu, target)) {
            src.copyHtoD(from, 0, lb.a.buf, 0, size);
            final MemoryRegion srcMr = lb.a.pd.registerMr(srcMem, AccessFlags.LOCAL_WRITE);
            final MemoryRegion dstMr = lb.b.pd.registerMr(dstMem, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            final long nanos = timeWrites(lb, srcMr, dstMr, null);
            final MemorySegment back = lb.b.buf.asSlice(0, size);
            gpu.copyDtoH(back, 0, target, 0, size);
            final long mismatch = lb.a.buf.asSlice(0, size).mismatch(back);
            out.println(String.format(Locale.ROOT, "%-7s %-10d %-6d %-10.1f %s", "gpu->gpu", size, iters,
                (double) size * iters / (nanos / 1e9) / (1 << 20), mismatch == -1 ? "byte-exact"
                    : "MISMATCH at byte " + mismatch));
            srcMr.deregister();
            dstMr.deregister();
            if (mismatch != -1) {
                throw new IllegalStateException("GPU-to-GPU path delivered wrong bytes at " + mismatch);
            }
        } finally {
            src.free(from);
            gpu.free(target);
        }
    }

    /**
     * Posts {@code iters} signaled WRITEs of {@code size} bytes from {@code src} to {@code dst}, one at a time, each
     * followed by {@code afterEach} (the bounce's GPU copy) when given; returns the nanoseconds taken.
     */
    private long timeWrites(final Loopback lb, final MemoryRegion src, final MemoryRegion dst, final Runnable afterEach) {
        final SendWorkRequest wr = new SendWorkRequest(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .sge(src, 0, size).remote(dst.address(), dst.rkey());
        final WorkCompletion[] wc = {new WorkCompletion()};
        final Deadline deadline = new Deadline();
        final long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            lb.a.qps[0].postSend(wr);
            deadline.rearm();
            while (lb.a.scq.poll(wc) == 0) {
                deadline.check("the WRITE completion", i, iters);
            }
            if (wc[0].status != WcStatus.SUCCESS) {
                throw new IllegalStateException("WRITE failed: " + wc[0]);
            }
            if (afterEach != null) {
                afterEach.run();
            }
        }
        return System.nanoTime() - t0;
    }

    private GpuDevice open(final String spec) {
        try {
            return GpuDevices.open(spec);
        } catch (final IllegalArgumentException e) {
            throw new ParameterException(this.spec.commandLine(), e.getMessage());
        }
    }

    /** Deterministic bytes (no test dependency here). */
    private static final class Fixture {
        static void fill(final MemorySegment seg, final long seed) {
            long x = seed;
            for (long i = 0; i < seg.byteSize(); i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                seg.set(ValueLayout.JAVA_BYTE, i, (byte) (x >>> 56));
            }
        }
    }
}
