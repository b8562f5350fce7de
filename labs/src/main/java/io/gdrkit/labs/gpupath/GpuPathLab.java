/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.gpupath;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.NicWriteCounters;
import io.gdrkit.labs.perf.Deadline;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * GDR versus host bounce: RDMA WRITEs from host memory into GPU memory over two software NICs, by the GDR path
 * (the NIC writes the GPU's memory itself, an MR over {@link GpuDmaMemory}) and by the host-bounce path (the NIC
 * writes a pinned staging buffer, then a GPU copy), each checked byte by byte with a copy back, and timed; with a
 * source GPU, also GPU to GPU. Returns records; the CLI prints them.
 */
public final class GpuPathLab {
    /** Seed of the source bytes. */
    private static final long SEED = 0x5eed;
    /**
     * The pipelined bounce cuts a message into pieces of this size: the NIC lands piece k+1 in pinned memory while
     * the copy engine copies piece k (an asynchronous copy on a stream), as NCCL's host-staged path pipelines.
     */
    public static final int BOUNCE_PIECE = 256 << 10;
    /** Pieces in flight at once (below the loopback's send queue depth of 128). */
    private static final int WINDOW = 64;

    private GpuPathLab() {
    }

    /**
     * One path's run.
     *
     * @param path       "gdr", "bounce" (WRITE into pinned memory, then a synchronous copy), "bounce-pipelined"
     *                   (the same, cut into {@link #BOUNCE_PIECE} pieces whose copies overlap the next piece's
     *                   WRITE), "pinned" (the link's limit: a host-to-device copy from pinned memory) or
     *                   "gpu->gpu"
     * @param bytes      bytes per WRITE
     * @param iters      WRITEs
     * @param nanos      time for all of them (and the bounce's copies)
     * @param mismatch   the first byte that differs after the copy back, -1 when byte-exact
     * @param nicWrites  how the NIC moved what it wrote into the GPU during the run (the GDR rows, where the GPU
     *                   counts it: a CUDA GPU), else null
     */
    public record PathRun(String path, int bytes, int iters, long nanos, long mismatch, NicWriteCounters nicWrites) {
        /** A row without NIC write counts. */
        public PathRun(final String path, final int bytes, final int iters, final long nanos, final long mismatch) {
            this(path, bytes, iters, nanos, mismatch, null);
        }

        public boolean byteExact() {
            return mismatch == -1;
        }

        public double mibPerSecond() {
            return (double) bytes * iters / (nanos / 1e9) / (1 << 20);
        }
    }

    /**
     * @param gpu       the target GPU as it describes itself
     * @param simulated the target GPU is simulated
     * @param source    the source GPU's description, or null when the source is host memory only
     * @param runs      each path in order
     */
    public record Result(String gpu, boolean simulated, String source, List<PathRun> runs) {
        public boolean allByteExact() {
            return runs.stream().allMatch(PathRun::byteExact);
        }
    }

    /**
     * @param gpu    the GPU written to
     * @param source a GPU to send from as well (the NIC reads it), or null
     * @throws IllegalArgumentException for a size outside 1 .. 256 MiB, iterations below 1, or no path
     */
    public static Result run(final GpuDevice gpu, final GpuDevice source, final int size, final int iters,
                             final boolean gdr, final boolean bounce) {
        if (size < 1 || size > (256 << 20)) {
            throw new IllegalArgumentException("size must be 1 .. 268435456, not " + size);
        }
        if (iters < 1) {
            throw new IllegalArgumentException("iterations must be >= 1, not " + iters);
        }
        final List<PathRun> runs = new ArrayList<>();
        // the NICs' host MRs pinned for the target GPU, as a GPUDirect stack pins what a NIC registers: the GDR row's
        // copy engine reads the source where it lies (unpinned, the NIC staged every byte through a CPU copy first,
        // and GDR measured 0.44x the bounce at 1 MiB on the H200 host)
        try (Loopback lb = Loopback.hostPinnedFor(gpu, SoftNicContext.ProgressMode.INVOKER, 1, 2L * size, 128, 128, 0,
            4096)) {
            fill(lb.a.buf.asSlice(0, size));
            if (gdr) {
                runs.add(toGpu(gpu, lb, size, iters, true));
            }
            if (bounce) {
                runs.add(toGpu(gpu, lb, size, iters, false));
                runs.add(bouncePipelined(gpu, lb, size, iters));
            }
            runs.add(pinnedCopy(gpu, lb, size, iters));
            if (source != null) {
                runs.add(fromGpu(source, gpu, lb, size, iters));
            }
        }
        return new Result(gpu.describe(), gpu.isSimulated(), source == null ? null : source.describe(),
            List.copyOf(runs));
    }

    /**
     * The limit beside the paths, same size and iterations: {@code cuMemcpyHtoD} from pinned memory (what both paths
     * end with), back to back, then the bytes copied back and compared.
     */
    private static PathRun pinnedCopy(final GpuDevice gpu, final Loopback lb, final int size, final int iters) {
        final DeviceBuffer target = gpu.alloc(size);
        final MemorySegment pinned = gpu.allocHost(size);
        try {
            MemorySegment.copy(lb.a.buf, 0, pinned, 0, size);
            gpu.copyHtoD(target, 0, pinned, 0, size); // warm: first-touch and mapping costs out of the timing
            final long t0 = System.nanoTime();
            for (int i = 0; i < iters; i++) {
                gpu.copyHtoD(target, 0, pinned, 0, size);
            }
            final long nanos = System.nanoTime() - t0;
            final MemorySegment back = lb.b.buf.asSlice(0, size);
            gpu.copyDtoH(back, 0, target, 0, size);
            return new PathRun("pinned", size, iters, nanos, lb.a.buf.asSlice(0, size).mismatch(back));
        } finally {
            gpu.freeHost(pinned);
            gpu.free(target);
        }
    }

    private static PathRun toGpu(final GpuDevice gpu, final Loopback lb, final int size, final int iters,
                                 final boolean gdr) {
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
            final NicWriteCounters before = gdr ? gpu.dmaTarget().nicWriteCounters() : null;
            final Runnable bounceCopy = gdr ? null : () -> gpu.copyHtoD(target, 0, staging, 0, size);
            timeWrites(lb, lb.a.mr, mr, size, warmIters(size), bounceCopy); // untimed: the JIT and first touches
            final long nanos = timeWrites(lb, lb.a.mr, mr, size, iters, bounceCopy);
            final NicWriteCounters writes = before == null ? null : gpu.dmaTarget().nicWriteCounters().since(before);
            final MemorySegment back = lb.b.buf.asSlice(0, size);
            gpu.copyDtoH(back, 0, target, 0, size);
            final long mismatch = lb.a.buf.asSlice(0, size).mismatch(back);
            mr.deregister();
            return new PathRun(gdr ? "gdr" : "bounce", size, iters, nanos, mismatch, writes);
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

    /**
     * The host bounce, pipelined: each message is posted as WRITEs of {@link #BOUNCE_PIECE} bytes into pinned
     * memory; as each completes its piece is copied to the GPU asynchronously on a stream while the NIC lands the
     * next; the message counts as done when the stream has finished (as the other rows: in GPU memory before the
     * next message starts).
     */
    private static PathRun bouncePipelined(final GpuDevice gpu, final Loopback lb, final int size, final int iters) {
        final DeviceBuffer target = gpu.alloc(size);
        final MemorySegment staging = gpu.allocHost(size);
        final GpuStream stream = gpu.createStream();
        try {
            final MemoryRegion mr = lb.b.pd.registerMr(staging, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            final int pieces = (size + BOUNCE_PIECE - 1) / BOUNCE_PIECE;
            final SendWorkRequest[] wrs = new SendWorkRequest[pieces];
            for (int k = 0; k < pieces; k++) {
                final int off = k * BOUNCE_PIECE;
                wrs[k] = new SendWorkRequest(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(k)
                    .sge(lb.a.mr, off, Math.min(BOUNCE_PIECE, size - off)).remote(mr.address() + off, mr.rkey());
            }
            final WorkCompletion[] wc = {new WorkCompletion()};
            final Deadline deadline = new Deadline();
            long t0 = 0;
            final int warm = warmIters(size);
            for (int i = -warm; i < iters; i++) {
                if (i == 0) {
                    t0 = System.nanoTime(); // after the untimed warm-up rounds
                }
                int posted = 0;
                while (posted < Math.min(pieces, WINDOW)) {
                    lb.a.qps[0].postSend(wrs[posted++]);
                }
                for (int k = 0; k < pieces; k++) {
                    deadline.rearm();
                    while (lb.a.scq.poll(wc) == 0) {
                        deadline.check("a bounce piece's WRITE completion", Math.max(i, 0), iters);
                    }
                    if (wc[0].status != WcStatus.SUCCESS) {
                        throw new IllegalStateException("WRITE failed: " + wc[0]);
                    }
                    final int off = (int) wc[0].wrId * BOUNCE_PIECE; // RC completes in order: wrId == k
                    gpu.copyHtoDAsync(target, off, staging, off, Math.min(BOUNCE_PIECE, size - off), stream);
                    if (posted < pieces) {
                        lb.a.qps[0].postSend(wrs[posted++]);
                    }
                }
                gpu.synchronize(stream, java.time.Duration.ofNanos(Deadline.DEFAULT_TIMEOUT_NS));
            }
            final long nanos = System.nanoTime() - t0;
            final MemorySegment back = lb.b.buf.asSlice(0, size);
            gpu.copyDtoH(back, 0, target, 0, size);
            final long mismatch = lb.a.buf.asSlice(0, size).mismatch(back);
            mr.deregister();
            return new PathRun("bounce-pipelined", size, iters, nanos, mismatch);
        } finally {
            gpu.destroyStream(stream);
            gpu.freeHost(staging);
            gpu.free(target);
        }
    }

    /** GDR into {@code gpu} with the source SGE in {@code src}'s memory: the NIC reads one GPU and writes another. */
    private static PathRun fromGpu(final GpuDevice src, final GpuDevice gpu, final Loopback lb, final int size,
                                   final int iters) {
        final DeviceBuffer from = src.alloc(size);
        final DeviceBuffer target = gpu.alloc(size);
        try (GpuDmaMemory srcMem = new GpuDmaMemory(src, from); GpuDmaMemory dstMem = new GpuDmaMemory(gpu, target)) {
            src.copyHtoD(from, 0, lb.a.buf, 0, size);
            final MemoryRegion srcMr = lb.a.pd.registerMr(srcMem, AccessFlags.LOCAL_WRITE);
            final MemoryRegion dstMr = lb.b.pd.registerMr(dstMem, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            timeWrites(lb, srcMr, dstMr, size, warmIters(size), null); // untimed warm-up
            final long nanos = timeWrites(lb, srcMr, dstMr, size, iters, null);
            final MemorySegment back = lb.b.buf.asSlice(0, size);
            gpu.copyDtoH(back, 0, target, 0, size);
            final long mismatch = lb.a.buf.asSlice(0, size).mismatch(back);
            srcMr.deregister();
            dstMr.deregister();
            return new PathRun("gpu->gpu", size, iters, nanos, mismatch);
        } finally {
            src.free(from);
            gpu.free(target);
        }
    }

    /**
     * Untimed rounds before a path's timed ones, as perftest and perf warm up: the NIC's code compiled and every page
     * touched; up to 256 MiB, at least 10 and at most 2000 messages.
     */
    static int warmIters(final int size) {
        return (int) Math.max(10, Math.min(2000, (256L << 20) / Math.max(1, size)));
    }

    /**
     * Posts {@code iters} signaled WRITEs of {@code size} bytes from {@code src} to {@code dst}, one at a time, each
     * followed by {@code afterEach} (the bounce's GPU copy) when given; returns the nanoseconds taken.
     */
    private static long timeWrites(final Loopback lb, final MemoryRegion src, final MemoryRegion dst, final int size,
                                   final int iters, final Runnable afterEach) {
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

    /** Deterministic bytes from {@link #SEED}. */
    private static void fill(final MemorySegment seg) {
        long x = SEED;
        for (long i = 0; i < seg.byteSize(); i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) (x >>> 56));
        }
    }
}
