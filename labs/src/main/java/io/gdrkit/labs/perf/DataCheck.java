/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.VisKernels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * perftest's data validation for a bandwidth run on the in-JVM fabric: before the run each source region gets a
 * seeded pattern and each destination region is zeroed; after it every destination's first {@code size} bytes must
 * hold the pattern. WRITE and SEND move A's region to B's, READ B's to A's; with {@code -b} the second direction
 * uses the upper half of both buffers (B to A, or A's read into B).
 *
 * <p>Host memory is compared by the CPU. GPU memory is checked on the GPU by the {@code vis_verify} kernel (the
 * visibility experiment's checker, {@link VisKernels}; on a simulated GPU its SM worker threads run it, on CUDA the
 * PTX in {@code kernels.cu}): the source gets {@link Pattern} round 1, and the kernel counts the bytes that differ
 * and the first one. The upper half is copied device-to-device into a scratch buffer first (a kernel argument is a
 * buffer's start).
 */
public final class DataCheck {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int ROUND = 1;

    private DataCheck() {
    }

    /**
     * What was compared and where the first difference is (-1: none).
     *
     * @param checkBy who compared: the CPU over host memory, or the kernel and the GPU that ran it
     */
    public record Result(boolean byteExact, long mismatchAt, long bytes, String evidence, String checkBy) {
    }

    /** One direction's source and destination regions. */
    private record Region(Loopback.Side src, Loopback.Side dst, long offset, String name) {
    }

    private static List<Region> regions(final Loopback lb, final PerfConfig cfg) {
        final boolean read = cfg.test().opcode == io.gdrkit.verbs.WrOpcode.RDMA_READ;
        final List<Region> out = new ArrayList<>();
        out.add(read ? new Region(lb.b, lb.a, 0, "B -> A") : new Region(lb.a, lb.b, 0, "A -> B"));
        if (cfg.bidirectional()) {
            final long half = cfg.bufferBytes();
            out.add(read ? new Region(lb.a, lb.b, half, "A -> B (upper half)")
                : new Region(lb.b, lb.a, half, "B -> A (upper half)"));
        }
        return out;
    }

    private static int seedOf(final long seed, final int region) {
        return (int) (seed * 0x9E3779B97F4A7C15L >>> 32) + region;
    }

    /** The seed of region 0 for a run's {@code seed}: the pattern both processes of a --fabric run agree on. */
    public static int remoteSeed(final long seed) {
        return seedOf(seed, 0);
    }

    /** Fills {@code [0, size)} of host memory with the pattern of {@link #remoteSeed}'s value. */
    public static void fillHost(final MemorySegment buf, final int size, final int patternSeed) {
        Pattern.fill(buf, 0, size, 0, ROUND, patternSeed);
    }

    /** The first byte of {@code [0, size)} that differs from the pattern, or -1. */
    public static long firstMismatchHost(final MemorySegment buf, final int size, final int patternSeed) {
        return Pattern.firstMismatch(buf, 0, size, 0, ROUND, patternSeed);
    }

    /** Fills each source region with the pattern of {@code seed} and zeroes each destination region. */
    public static void prepare(final Loopback lb, final PerfConfig cfg, final long seed) {
        final int size = cfg.size();
        final List<Region> rs = regions(lb, cfg);
        for (int i = 0; i < rs.size(); i++) {
            final Region r = rs.get(i);
            final int s = seedOf(seed, i);
            // each side on its own: one may be host memory and the other GPU memory (perf --client-mem host)
            try (Arena arena = Arena.ofConfined()) {
                final MemorySegment host = arena.allocate(size, 64);
                if (r.src.gpuBuffer == null) {
                    Pattern.fill(r.src.buf, r.offset, size, 0, ROUND, s);
                } else {
                    Pattern.fill(host, 0, size, 0, ROUND, s);
                    r.src.gpuBuffer.device().copyHtoD(r.src.gpuBuffer, r.offset, host, 0, size);
                }
                if (r.dst.gpuBuffer == null) {
                    r.dst.buf.asSlice(r.offset, size).fill((byte) 0);
                } else {
                    host.fill((byte) 0);
                    r.dst.gpuBuffer.device().copyHtoD(r.dst.gpuBuffer, r.offset, host, 0, size);
                }
            }
        }
    }

    /** Compares each destination with the pattern after the run; the first failing region's result, else all. */
    public static Result verify(final Loopback lb, final PerfConfig cfg, final long seed) {
        final int size = cfg.size();
        final List<Region> rs = regions(lb, cfg);
        final StringBuilder ev = new StringBuilder();
        String by = null;
        for (int i = 0; i < rs.size(); i++) {
            final Region r = rs.get(i);
            final int s = seedOf(seed, i);
            final long at;
            if (r.dst.gpuBuffer == null) {
                at = Pattern.firstMismatch(r.dst.buf, r.offset, size, 0, ROUND, s);
                by = "CPU: host memory compared byte by byte";
            } else {
                final GpuDevice gpu = r.dst.gpuBuffer.device();
                at = verifyOnGpu(gpu, r.dst.gpuBuffer, r.offset, size, s);
                by = "GPU kernel " + VisKernels.VERIFY + " on " + gpu.describe() + (gpu.isSimulated()
                    ? " (the simulated GPU's SM worker threads)" : "");
            }
            if (ev.length() > 0) {
                ev.append("; ");
            }
            ev.append(r.name).append(at == -1 ? " byte-exact" : " first bad byte " + at);
            if (at != -1) {
                return new Result(false, at, (long) size * rs.size(), "MISMATCH: " + ev + ": " + size + " bytes per "
                    + "direction compared after the run, seeded pattern", by);
            }
        }
        return new Result(true, -1, (long) size * rs.size(), "byte-exact: " + ev + ": " + size + " bytes per "
            + "direction compared after the run, seeded pattern", by);
    }

    /** vis_verify over {@code [offset, offset + n)} of {@code buf}; the first bad position or -1. */
    private static long verifyOnGpu(final GpuDevice gpu, final DeviceBuffer buf, final long offset, final long n,
                                    final int seed) {
        DeviceBuffer scratch = null;
        final DeviceBuffer result = gpu.alloc(VisKernels.VERIFY_BYTES);
        final GpuStream stream = gpu.createStream();
        try (Arena arena = Arena.ofConfined()) {
            DeviceBuffer target = buf;
            if (offset != 0) {
                scratch = gpu.alloc(n);
                gpu.copyDtoD(scratch, 0, buf, offset, n);
                target = scratch;
            }
            final MemorySegment host = arena.allocate(VisKernels.VERIFY_BYTES, 8);
            VisKernels.resetVerify(host, 0);
            gpu.copyHtoD(result, 0, host, 0, VisKernels.VERIFY_BYTES);
            gpu.launch(gpu.function("kernels", VisKernels.VERIFY), Dim3.of(64), Dim3.of(256), stream,
                new KernelArgs(5).ptr(target).u64(n).u32(ROUND).u32(seed).ptr(result));
            gpu.synchronize(stream, TIMEOUT);
            gpu.copyDtoH(host, 0, result, 0, VisKernels.VERIFY_BYTES);
            final VisKernels.Slot slot = VisKernels.readVerify(host, 0, ROUND);
            if (slot.bad() == 0) {
                return -1;
            }
            return slot.first();
        } finally {
            gpu.destroyStream(stream);
            gpu.free(result);
            if (scratch != null) {
                gpu.free(scratch);
            }
        }
    }
}
