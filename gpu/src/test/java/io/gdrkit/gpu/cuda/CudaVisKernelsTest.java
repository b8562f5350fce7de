/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.VisKernels;
import io.gdrkit.gpu.VisKernels.Poll;
import io.gdrkit.gpu.VisKernels.Slot;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntConsumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The visibility kernels of {@code kernels.cu} on a real GPU; skipped where there is none. Prints one {@code VIS}
 * line per configuration (what docs/GPU.md quotes) and asserts what must hold: vis_verify's exact counts, and that
 * the volatile and acquire consumers see every round that the NIC stand-in delivered before the flag.
 */
class CudaVisKernelsTest {
    private static final int SEED = 4242;
    private static final Duration WAIT = Duration.ofSeconds(60);

    private static CudaGpu open(final int ordinal) {
        final CudaProbe p = CudaGpu.probe();
        Assumptions.assumeTrue(p.found(), () -> "no CUDA here: " + p.evidence());
        Assumptions.assumeTrue(p.deviceCount() > ordinal, () -> "needs CUDA device " + ordinal + ": " + p.evidence());
        return CudaGpu.open(ordinal);
    }

    private static MemorySegment pattern(final Arena a, final long n, final int round) {
        final MemorySegment s = a.allocate(n, 64);
        Pattern.fill(s, 0, n, 0, round, SEED);
        return s;
    }

    @Test
    void visVerifyCountsExactlyOnAnyGridAndAlignment() {
        try (CudaGpu gpu = open(0); Arena a = Arena.ofConfined()) {
            final long n = (1L << 20) + 5; // a tail that does not fill a word
            final long k = 300_001;
            final int round = 9;
            final DeviceBuffer buf = gpu.alloc(n + 8);
            final DeviceBuffer result = gpu.alloc(VisKernels.VERIFY_BYTES);
            final MemorySegment host = gpu.allocHost(Math.max(n + 8, VisKernels.VERIFY_BYTES));
            final GpuStream s = gpu.createStream();
            // {name, first byte of this round, bytes of this round from there to n (the rest the round before),
            //  expected bad, first, last, prev}
            final long[][] cases = {
                {0, 0, n, 0, -1, n, 0},
                {1, 0, 0, n, 0, 0, n},
                {2, 0, k, n - k, k, k, n - k},
                {3, k, n - k, k, 0, n, k},
            };
            final String[] names = {"ok", "stale", "partial", "reordered"};
            for (final int shift : new int[] {0, 1}) { // shift 1: an unaligned pointer takes the byte path
                for (final long[] c : cases) {
                    Pattern.fill(host, shift, n, 0, round - 1, SEED);
                    Pattern.fill(host, shift + c[1], c[2], c[1], round, SEED);
                    gpu.copyHtoD(buf, 0, host, 0, n + shift);
                    for (final int[] geo : new int[][] {{1, 256}, {132, 1024}, {264, 96}}) {
                        VisKernels.resetVerify(host, 0);
                        gpu.copyHtoD(result, 0, host, 0, VisKernels.VERIFY_BYTES);
                        gpu.launch(gpu.function("kernels", VisKernels.VERIFY), Dim3.of(geo[0]), Dim3.of(geo[1]), s,
                            new KernelArgs(5).u64(buf.address() + shift).u64(n).u32(round).u32(SEED).ptr(result));
                        gpu.synchronize(s, WAIT);
                        gpu.copyDtoH(host, 0, result, 0, VisKernels.VERIFY_BYTES);
                        final Slot got = VisKernels.readVerify(host, 0, round);
                        final String what = names[(int) c[0]] + " shift " + shift + " grid " + geo[0] + "x" + geo[1];
                        assertEquals(List.of(c[3], c[4], c[5], c[6]),
                            List.of(got.bad(), got.first(), got.last(), got.prev()), what);
                        assertEquals(names[(int) c[0]], got.what(n), what);
                    }
                }
            }
            System.out.println("VIS verify: vis_verify exact on ok/stale/partial/reordered, n = " + n
                + ", aligned and unaligned, grids 1x256 132x1024 264x96 (" + gpu.moduleSource("kernels") + ")");
            gpu.destroyStream(s);
            gpu.free(buf);
            gpu.free(result);
            gpu.freeHost(host);
        }
    }

    /** Outcome counts of one persistent run, by {@link Slot#what}. */
    private record Run(Map<String, Integer> kinds, long polls, long slots, int rounds, long nanos) {
        int count(final String what) {
            return kinds.getOrDefault(what, 0);
        }

        String line(final String config) {
            return String.format("VIS %-58s %s; polls/slot %.1f; %.1f us/round", config, kinds, polls / (double) slots,
                nanos / 1e3 / rounds);
        }
    }

    /**
     * One persistent consumer on {@code consumer} over {@code senders} device buffers (its own or a peer's), flags
     * and results in pinned host memory. Per round: each sender's data goes in by {@code deliver}, then the CPU stores
     * the flags; {@code between} runs once per round before the flags (readback, flush, ...).
     */
    private static Run persistent(final CudaGpu consumer, final Poll poll, final int senders, final long n,
                                  final int rounds, final long timeoutNs, final GpuStream stream,
                                  final DeviceBuffer[] data, final Delivery deliver, final IntConsumer between) {
        return persistent(consumer, poll, senders, n, rounds, timeoutNs, stream, data, deliver, between, false);
    }

    /** As above; {@code deviceFlags}: the flags live in the consumer's device memory, written by the NIC stand-in. */
    private static Run persistent(final CudaGpu consumer, final Poll poll, final int senders, final long n,
                                  final int rounds, final long timeoutNs, final GpuStream stream,
                                  final DeviceBuffer[] data, final Delivery deliver, final IntConsumer between,
                                  final boolean deviceFlags) {
        final MemorySegment flags = consumer.allocHost(4L * senders);
        final DeviceBuffer flagsDev = deviceFlags ? consumer.alloc(4L * senders) : null;
        final NicMapping flagsNic = deviceFlags ? consumer.mapForNic(flagsDev) : null;
        final MemorySegment res = consumer.allocHost(VisKernels.resultBytes(rounds, senders));
        final MemorySegment addrs = consumer.allocHost(8L * senders);
        flags.fill((byte) 0);
        res.fill((byte) 0);
        for (int s = 0; s < senders; s++) {
            addrs.setAtIndex(ValueLayout.JAVA_LONG, s, data[s].address());
        }
        final DeviceBuffer bufs = consumer.alloc(8L * senders);
        consumer.copyHtoD(bufs, 0, addrs, 0, 8L * senders); // from pinned memory: complete on return
        assertEquals(flags.address(), consumer.devicePointer(flags), "UVA: pinned memory has its host address");
        if (deviceFlags) {
            flagsNic.write(0, flags, 0, 4L * senders);
        }
        consumer.launch(consumer.function("kernels", poll.kernel()), Dim3.of(senders), Dim3.of(1024), stream,
            new KernelArgs(8).u64(deviceFlags ? flagsDev.address() : consumer.devicePointer(flags)).ptr(bufs).u32(senders).u64(n).u32(rounds).u32(SEED)
                .u64(timeoutNs).u64(consumer.devicePointer(res)));
        final Map<String, Integer> kinds = new TreeMap<>();
        long polls = 0;
        final long t0 = System.nanoTime();
        for (int r = 1; r <= rounds; r++) {
            for (int s = 0; s < senders; s++) {
                deliver.deliver(s, r);
            }
            between.accept(r);
            for (int s = 0; s < senders; s++) {
                VisKernels.publish(flags, s, r);
                if (deviceFlags) {
                    flagsNic.write(4L * s, flags, 4L * s, 4); // the NIC's flag WRITE after the data
                }
            }
            for (int s = 0; s < senders; s++) {
                final Slot slot = VisKernels.await(res, r, s, senders, WAIT);
                kinds.merge(slot.what(n), 1, Integer::sum);
                polls += slot.polls();
            }
        }
        final long nanos = System.nanoTime() - t0;
        consumer.synchronize(stream, WAIT);
        consumer.free(bufs);
        if (deviceFlags) {
            flagsNic.close();
            consumer.free(flagsDev);
        }
        consumer.freeHost(flags);
        consumer.freeHost(res);
        consumer.freeHost(addrs);
        return new Run(kinds, polls, (long) rounds * senders, rounds, nanos);
    }

    @FunctionalInterface
    private interface Delivery {
        void deliver(int sender, int round);
    }

    @Test
    void persistentConsumersSeeEveryRoundTheNicDeliveredBeforeAPinnedHostFlag() {
        try (CudaGpu gpu = open(0); Arena a = Arena.ofShared()) {
            final int rounds = 20;
            final List<String> lines = new ArrayList<>();
            for (final int senders : new int[] {1, 64}) {
                final long n = senders == 1 ? 4L << 20 : 256L << 10;
                final DeviceBuffer[] data = new DeviceBuffer[senders];
                final NicMapping[] nic = new NicMapping[senders];
                final MemorySegment[] src = new MemorySegment[rounds + 1];
                for (int r = 0; r <= rounds; r++) {
                    src[r] = pattern(a, n, r); // pageable memory, like the software NIC's buffers
                }
                for (int s = 0; s < senders; s++) {
                    data[s] = gpu.alloc(n);
                    nic[s] = gpu.mapForNic(data[s]);
                }
                for (final Poll poll : Poll.values()) {
                    for (int s = 0; s < senders; s++) {
                        nic[s].write(0, src[0], 0, n);
                    }
                    // a blocking stream on purpose: the NIC stand-in must not wait for the running kernel
                    final GpuStream stream = gpu.createStream();
                    final long[] flushNs = new long[3];
                    final Run run = persistent(gpu, poll, senders, n, rounds, 200_000_000L, stream, data,
                        (s, r) -> nic[s].write(0, src[r], 0, n), r -> {
                            // while the kernel runs: a flush of each scope and a 1-byte readback, timed
                            if (r == 2) {
                                long t = System.nanoTime();
                                gpu.flushGpuDirectRdmaWrites(FlushScope.TO_OWNER);
                                flushNs[0] = System.nanoTime() - t;
                                t = System.nanoTime();
                                gpu.flushGpuDirectRdmaWrites(FlushScope.TO_ALL_DEVICES);
                                flushNs[1] = System.nanoTime() - t;
                                t = System.nanoTime();
                                nic[0].read(0, a.allocate(1), 0, 1);
                                flushNs[2] = System.nanoTime() - t;
                            }
                        });
                    gpu.destroyStream(stream);
                    final String line = run.line(poll.kernel() + ", " + senders + " sender(s) x " + n + " B, "
                        + rounds + " rounds") + String.format("; during the kernel: flush TO_OWNER %.1f us,"
                        + " TO_ALL_DEVICES %.1f us, 1-byte readback %.1f us", flushNs[0] / 1e3, flushNs[1] / 1e3,
                        flushNs[2] / 1e3);
                    System.out.println(line);
                    lines.add(line);
                    if (poll != Poll.PLAIN) {
                        assertEquals(rounds * senders, run.count("ok"), line);
                    }
                }
                for (int s = 0; s < senders; s++) {
                    nic[s].close();
                    gpu.free(data[s]);
                }
            }
            assertEquals(6, lines.size());
        }
    }

    /** The flag in device memory, written by the NIC stand-in after the data (a sender's flag WRITE). */
    @Test
    void persistentConsumersWithAFlagInDeviceMemoryWrittenByTheNic() {
        try (CudaGpu gpu = open(0); Arena a = Arena.ofShared()) {
            final int rounds = 10;
            final long n = 1L << 20;
            final DeviceBuffer data = gpu.alloc(n);
            final NicMapping nic = gpu.mapForNic(data);
            for (final Poll poll : Poll.values()) {
                nic.write(0, pattern(a, n, 0), 0, n);
                final GpuStream stream = gpu.createStream();
                final Run run = persistent(gpu, poll, 1, n, rounds, 100_000_000L, stream, new DeviceBuffer[] {data},
                    (s, r) -> nic.write(0, pattern(a, n, r), 0, n), r -> { }, true);
                gpu.destroyStream(stream);
                final String line = run.line(poll.kernel() + ", flag in device memory by the NIC, " + n + " B, "
                    + rounds + " rounds");
                System.out.println(line);
                if (poll != Poll.PLAIN) {
                    assertEquals(rounds, run.count("ok"), line);
                }
            }
            nic.close();
            gpu.free(data);
        }
    }

    /**
     * Data by the host's own synchronous {@code cuMemcpyHtoD} from pageable memory, then the CPU's flag store: CUDA
     * documents that such a copy may return before its DMA has landed unless SYNC_MEMOPS is set on the range. The
     * consumer runs on a non-blocking stream (on a blocking one the copy would wait for it). Measured, not asserted,
     * except that SYNC_MEMOPS = 1 must see every round.
     */
    @Test
    void pageableCopyThenCpuFlagWithAndWithoutSyncMemops() {
        try (CudaGpu gpu = open(0); Arena a = Arena.ofShared()) {
            final int rounds = 100;
            final long n = 16L << 20;
            final MemorySegment src = a.allocate(n, 64); // pageable; refilled before each round's copy
            for (final boolean syncMemops : new boolean[] {false, true}) {
                final DeviceBuffer data = gpu.alloc(n);
                gpu.setSyncMemops(data, syncMemops);
                gpu.copyHtoD(data, 0, pattern(a, n, 0), 0, n);
                final GpuStream stream = gpu.createNonBlockingStream();
                final Run run = persistent(gpu, Poll.ACQUIRE, 1, n, rounds, 200_000_000L, stream,
                    new DeviceBuffer[] {data}, (s, r) -> {
                        Pattern.fill(src, 0, n, 0, r, SEED);
                        gpu.copyHtoD(data, 0, src, 0, n);
                    }, r -> { });
                gpu.destroyStream(stream);
                final String line = run.line("vis_persistent_acquire, cuMemcpyHtoD pageable " + n + " B, SYNC_MEMOPS "
                    + (syncMemops ? 1 : 0) + ", " + rounds + " rounds");
                System.out.println(line);
                if (syncMemops) {
                    assertEquals(rounds, run.count("ok"), line);
                }
                gpu.free(data);
            }
        }
    }

    /**
     * Issue 7 item 1 on a two-GPU host: the NIC stand-in writes GPU 0's memory, a consumer on GPU 1 reads it through
     * peer access, with the receiver doing nothing, a 1-byte readback, or a flush of either scope on GPU 0.
     */
    @Test
    void aConsumerOnThePeerGpu() {
        try (CudaGpu g0 = open(0); CudaGpu g1 = open(1); Arena a = Arena.ofShared()) {
            final boolean can = g1.canAccessPeer(g0);
            System.out.println("VIS peer: cuDeviceCanAccessPeer(1 -> 0) = " + can + "; " + g0.describe() + "; "
                + g1.describe());
            Assumptions.assumeTrue(can, "GPU 1 cannot access GPU 0's memory");
            g1.enablePeerAccess(g0);
            final int rounds = 10;
            final long n = 4L << 20;
            final MemorySegment[] src = new MemorySegment[rounds + 1];
            for (int r = 0; r <= rounds; r++) {
                src[r] = pattern(a, n, r);
            }
            final DeviceBuffer data = g0.alloc(n);
            final NicMapping nic = g0.mapForNic(data);
            for (final String mode : new String[] {"OFF", "ON", "FLUSH TO_OWNER", "FLUSH TO_ALL_DEVICES"}) {
                nic.write(0, src[0], 0, n);
                final GpuStream stream = g1.createStream();
                final Run run = persistent(g1, Poll.ACQUIRE, 1, n, rounds, 200_000_000L, stream,
                    new DeviceBuffer[] {data}, (s, r) -> nic.write(0, src[r], 0, n), r -> {
                        switch (mode) {
                            case "ON" -> nic.read(n - 1, a.allocate(1), 0, 1);
                            case "FLUSH TO_OWNER" -> g0.flushGpuDirectRdmaWrites(FlushScope.TO_OWNER);
                            case "FLUSH TO_ALL_DEVICES" -> g0.flushGpuDirectRdmaWrites(FlushScope.TO_ALL_DEVICES);
                            default -> { }
                        }
                    });
                g1.destroyStream(stream);
                final String line = run.line("peer: GPU 1 consumes GPU 0, readback " + mode + ", " + n + " B, "
                    + rounds + " rounds");
                System.out.println(line);
                assertTrue(run.count("ok") + run.count("stale") + run.count("partial") + run.count("reordered")
                    + run.count("corrupt") + run.count("timeout") == rounds, line);
            }
            nic.close();
            g0.free(data);
        }
    }
}
