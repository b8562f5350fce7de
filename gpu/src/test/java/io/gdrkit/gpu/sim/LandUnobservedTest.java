/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.NicMapping;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link SimGpuConfig#landUnobserved}: a NIC write lands at once only when nothing can observe it in flight; while a
 * kernel runs, or where a peer GPU can read the memory, it is posted with its delays as before. Drain delays here
 * are 10-20 s, so a posted chunk stays posted for the whole test unless the model's events land it.
 */
class LandUnobservedTest {
    private static final int N = 3 * 4096 + 100; // 4 chunks of 4 KiB, the last partial

    private static SimGpuConfig config() {
        return SimGpuConfig.throughput(3).minDrainNanos(10_000_000_000L).maxDrainNanos(20_000_000_000L);
    }

    private static MemorySegment bytes(final Arena a, final int n, final int seed) {
        final MemorySegment s = a.allocate(n);
        for (int i = 0; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed * 7 + (i >> 8)));
        }
        return s;
    }

    @Test
    void anUnobservedWriteLandsAtOnceByteExactAndIsCounted() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H200, config()); Arena a = Arena.ofShared()) {
            final DeviceBuffer buf = gpu.alloc(N + 8);
            final NicMapping map = gpu.mapForNic(buf);
            final MemorySegment src = bytes(a, N, 1);
            map.write(8, src, 0, N);
            final MemorySegment mem = ((SimDeviceBuffer) buf).memory();
            assertEquals(-1, src.mismatch(mem.asSlice(8, N)), "in device memory when the write returns");
            assertEquals(0, mem.get(ValueLayout.JAVA_LONG, 0), "nothing before the written range");
            assertEquals(0, gpu.postedWrites().pendingLanding());
            assertEquals(0, gpu.postedWrites().pendingRetire());
            assertEquals("posted=4 landed=4 retired=4 forced=0 landedAtOnce=4 (simulated)", gpu.postedWrites().stats());
        }
    }

    @Test
    void whileAKernelRunsWritesArePostedAndLandInOrderAfterwards() throws Exception {
        try (SimGpu gpu = SimGpu.create(SimPreset.H200, config()); Arena a = Arena.ofShared()) {
            final DeviceBuffer buf = gpu.alloc(N);
            final MemorySegment mem = ((SimDeviceBuffer) buf).memory();
            final NicMapping map = gpu.mapForNic(buf);
            final CountDownLatch running = new CountDownLatch(1);
            final CountDownLatch release = new CountDownLatch(1);
            gpu.register(new SimFunction("hold", ctx -> {
                running.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (final InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
            final GpuStream s = gpu.createStream();
            gpu.launch(gpu.function("m", "hold"), Dim3.of(1), Dim3.of(1), s, new KernelArgs(1));
            assertTrue(running.await(30, TimeUnit.SECONDS), "the kernel started");
            final MemorySegment first = bytes(a, N, 2);
            map.write(0, first, 0, N);
            // posted: a running kernel (the only one who could look) sees the old bytes until the chunks land
            assertEquals(4, gpu.postedWrites().pendingLanding());
            assertEquals(0, mem.get(ValueLayout.JAVA_LONG, 0), "not landed while the kernel runs");
            release.countDown();
            SimTestSupport.awaitIdleNoSync(gpu, s, "the hold kernel to end");
            // nothing runs now: the next write to the same range lands at once, after the posted one (last wins)
            final MemorySegment second = bytes(a, 4096, 3);
            map.write(0, second, 0, 4096);
            assertEquals(0, gpu.postedWrites().pendingLanding());
            assertEquals(-1, second.mismatch(mem.asSlice(0, 4096)), "the later write wins");
            assertEquals(-1, first.asSlice(4096).mismatch(mem.asSlice(4096, N - 4096)), "the posted write landed");
            assertEquals("posted=5 landed=5 retired=1 forced=0 landedAtOnce=1 (simulated)",
                gpu.postedWrites().stats());
        }
    }

    @Test
    void aGpuThatPeersCanReadAlwaysPosts() {
        try (SimGpuSystem system = SimGpuSystem.create(config(), SimPreset.H200, SimPreset.H200);
             Arena a = Arena.ofShared()) {
            final SimGpu gpu = system.gpu(0);
            final DeviceBuffer buf = gpu.alloc(N);
            final MemorySegment src = bytes(a, N, 4);
            gpu.mapForNic(buf).write(0, src, 0, N);
            assertEquals(4, gpu.postedWrites().pendingLanding());
            assertEquals(0, ((SimDeviceBuffer) buf).memory().get(ValueLayout.JAVA_LONG, 0));
            // a NIC read on the path lands them, as before
            final MemorySegment back = a.allocate(N);
            gpu.nicRead(gpu.mapForNic(buf), 0, back, 0, N);
            assertEquals(-1, src.mismatch(back));
            assertEquals("posted=4 landed=4 retired=0 forced=0 landedAtOnce=0 (simulated)", gpu.postedWrites().stats());
        }
    }

    @Test
    void offByDefaultAndInDeterministicRuns() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H200, SimGpuConfig.defaults(1).minDrainNanos(10_000_000_000L)
            .maxDrainNanos(20_000_000_000L)); Arena a = Arena.ofShared()) {
            final DeviceBuffer buf = gpu.alloc(N);
            gpu.mapForNic(buf).write(0, bytes(a, N, 5), 0, N);
            assertEquals(N / 256 + 1, gpu.postedWrites().pendingLanding(), "256-byte chunks, all posted");
        }
    }
}
