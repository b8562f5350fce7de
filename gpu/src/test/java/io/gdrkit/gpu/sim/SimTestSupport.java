/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.Pattern;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

/** Shared helpers: deterministic configs, pattern fill and on-device verification through the built-in kernels. */
final class SimTestSupport {
    static final Duration TIMEOUT = Duration.ofSeconds(20);

    private SimTestSupport() {
    }

    static SimGpuConfig deterministic(final long seed) {
        return SimGpuConfig.deterministic(seed, new ManualClock(0));
    }

    /** Host bytes holding the pattern of {@code round}. */
    static MemorySegment patternHost(final Arena arena, final long len, final int round, final int seed) {
        final MemorySegment s = arena.allocate(len, 64);
        Pattern.fill(s, 0, len, 0, round, seed);
        return s;
    }

    /** Fills a buffer with the pattern of {@code round} on the device (fill_pattern kernel), synchronously. */
    static void fill(final GpuDevice gpu, final DeviceBuffer buf, final int round, final int seed) {
        final GpuStream s = gpu.createStream();
        gpu.launch(gpu.function(SimKernels.MODULE, "fill_pattern"), Dim3.of(4), Dim3.of(128), s,
            new KernelArgs(4).ptr(buf).u64(buf.size()).u32(round).u32(seed));
        gpu.synchronize(s, TIMEOUT);
        gpu.destroyStream(s);
    }

    /** A result buffer on {@code gpu}, reset: mismatches 0, first mismatch -1. */
    static DeviceBuffer resultBuffer(final GpuDevice gpu) {
        final DeviceBuffer r = gpu.alloc(32);
        try (Arena a = Arena.ofShared()) {
            final MemorySegment h = a.allocate(32);
            h.set(ValueLayout.JAVA_LONG, 8, -1L);
            gpu.copyHtoD(r, 0, h, 0, 32);
        }
        return r;
    }

    static long[] readResult(final GpuDevice gpu, final DeviceBuffer result) {
        try (Arena a = Arena.ofShared()) {
            final MemorySegment h = a.allocate(32);
            gpu.copyDtoH(h, 0, result, 0, 32);
            return new long[] {SimKernels.resultWord(h, 0), SimKernels.resultWord(h, 1), SimKernels.resultWord(h, 2),
                SimKernels.resultWord(h, 3)};
        }
    }

    /** Launches verify_pattern on {@code gpu} over {@code buf} (which may belong to a peer); returns mismatches. */
    static long verifyOnDevice(final GpuDevice gpu, final DeviceBuffer buf, final int round, final int seed) {
        final DeviceBuffer result = resultBuffer(gpu);
        final GpuStream s = gpu.createStream();
        gpu.launch(gpu.function(SimKernels.MODULE, "verify_pattern"), Dim3.of(4), Dim3.of(128), s,
            new KernelArgs(5).ptr(buf).u64(buf.size()).u32(round).u32(seed).ptr(result));
        gpu.synchronize(s, TIMEOUT);
        gpu.destroyStream(s);
        final long bad = readResult(gpu, result)[0];
        gpu.free(result);
        return bad;
    }

    /** Waits, without synchronizing (so without making NIC writes visible), until a stream is idle. */
    static void awaitIdleNoSync(final GpuDevice gpu, final GpuStream s, final String what) {
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!gpu.isComplete(s)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + TIMEOUT + " waiting for " + what);
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }
}
