/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.Bar1ExhaustedException;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.FlushResult;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.WritesOrdering;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static io.gdrkit.gpu.sim.SimTestSupport.TIMEOUT;
import static io.gdrkit.gpu.sim.SimTestSupport.deterministic;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The GPUDirect visibility mechanism, driven deterministically: writes land only when the test steps the queue (or
 * the model's events land them), so every outcome below follows from the seed.
 */
class VisibilityModelTest {
    private static final int N = 4096; // 16 chunks of 256 bytes
    private static final int SEED = 31;

    /** Scenario of a persistent consumer: NIC writes data then flag; the kernel was launched before. */
    private record Outcome(long mismatches, long dataChunksPendingWhenFlagLanded) {
    }

    private static Outcome persistentConsumer(final SimPreset preset, final long seed) {
        try (SimGpu gpu = SimGpu.create(preset, deterministic(seed)); Arena a = Arena.ofShared()) {
            final DeviceBuffer data = gpu.alloc(N);
            final DeviceBuffer flag = gpu.alloc(4);
            final DeviceBuffer result = SimTestSupport.resultBuffer(gpu);
            SimTestSupport.fill(gpu, data, 0, SEED); // the previous round
            final GpuStream consumer = gpu.createStream();
            gpu.launch(gpu.function("kernels", "poll_flag_verify"), Dim3.of(1), Dim3.of(128), consumer,
                new KernelArgs(8).ptr(flag).u32(1).u64(Long.MAX_VALUE).ptr(data).u64(N).u32(1).u32(SEED).ptr(result));
            final NicMapping dataMap = gpu.mapForNic(data);
            final NicMapping flagMap = gpu.mapForNic(flag);
            final MemorySegment one = a.allocate(4);
            one.set(ValueLayout.JAVA_INT, 0, 1);
            dataMap.write(0, SimTestSupport.patternHost(a, N, 1, SEED), 0, N);
            flagMap.write(0, one, 0, 4);
            gpu.nicCompletionFence(); // the NIC reports completion
            final SimDeviceBuffer f = (SimDeviceBuffer) flag;
            while (f.memory().get(ValueLayout.JAVA_INT, 0) == 0) {
                assertTrue(gpu.postedWrites().stepLanding(), "flag never landed");
            }
            final long pending = gpu.postedWrites().pendingLanding();
            // wait for the kernel without synchronizing: a synchronize would itself make the writes visible
            SimTestSupport.awaitIdleNoSync(gpu, consumer, "poll_flag_verify to finish");
            final long[] r = SimTestSupport.readResult(gpu, result);
            assertEquals(0, r[2], "the kernel saw the flag");
            return new Outcome(r[0], pending);
        }
    }

    @Test
    void orderingNoneLetsARunningKernelSeeStaleData() {
        final Outcome o = persistentConsumer(SimPreset.V100, 42);
        // the flag overtook data chunks: exactly their bytes are stale (every byte differs between rounds)
        assertTrue(o.dataChunksPendingWhenFlagLanded() > 0, "seed 42 lands the flag before some data");
        assertEquals(o.dataChunksPendingWhenFlagLanded() * 256, o.mismatches());
        // same seed, same outcome
        assertEquals(o, persistentConsumer(SimPreset.V100, 42));
    }

    @Test
    void orderingOwnerGivesTheOwnersRunningKernelTheDataBeforeTheFlag() {
        for (long seed = 1; seed <= 5; seed++) {
            final Outcome o = persistentConsumer(SimPreset.H100, seed);
            assertEquals(0, o.mismatches(), "seed " + seed);
            assertEquals(0, o.dataChunksPendingWhenFlagLanded());
        }
    }

    @Test
    void aKernelLaunchedAfterTheCompletionSeesTheData() {
        for (final SimPreset p : new SimPreset[] {SimPreset.V100, SimPreset.H100, SimPreset.ALL_DEVICES}) {
            for (long seed = 1; seed <= 4; seed++) {
                try (SimGpu gpu = SimGpu.create(p, deterministic(seed)); Arena a = Arena.ofShared()) {
                    final DeviceBuffer data = gpu.alloc(N);
                    final NicMapping m = gpu.mapForNic(data);
                    m.write(0, SimTestSupport.patternHost(a, N, 5, SEED), 0, N);
                    gpu.nicCompletionFence();
                    if (p.writesOrdering() == WritesOrdering.NONE) {
                        assertTrue(gpu.postedWrites().pendingLanding() > 0, "NONE: not landed at completion");
                    } else {
                        assertEquals(0, gpu.postedWrites().pendingLanding(), p + ": landed at completion");
                    }
                    assertEquals(0, SimTestSupport.verifyOnDevice(gpu, data, 5, SEED), p.label() + " seed " + seed);
                }
            }
        }
    }

    @Test
    void noneLandsOutOfOrderAndPartiallyReproducibly() {
        final List<Integer> first = landingOrder(7);
        assertEquals(16, first.size());
        assertNotEquals(sorted(first), first, "NONE lands chunks out of order");
        assertEquals(first, landingOrder(7), "same seed, same order");
        assertNotEquals(first, landingOrder(8), "another seed, another order");
    }

    /** Chunk indices of one 4 KiB NIC write in the order they land, stepping one landing at a time. */
    private static List<Integer> landingOrder(final long seed) {
        try (SimGpu gpu = SimGpu.create(SimPreset.V100, deterministic(seed)); Arena a = Arena.ofShared()) {
            final DeviceBuffer data = gpu.alloc(N);
            final MemorySegment mem = ((SimDeviceBuffer) data).memory();
            gpu.mapForNic(data).write(0, SimTestSupport.patternHost(a, N, 1, SEED), 0, N);
            final List<Integer> order = new ArrayList<>();
            final boolean[] seen = new boolean[16];
            while (gpu.postedWrites().stepLanding()) {
                for (int c = 0; c < 16; c++) {
                    if (!seen[c] && Pattern.firstMismatch(mem, c * 256L, 256, c * 256L, 1, SEED) < 0) {
                        seen[c] = true;
                        order.add(c);
                    }
                }
                // partial: after each step, landed and not-landed chunks coexist until the end
            }
            return order;
        }
    }

    private static List<Integer> sorted(final List<Integer> l) {
        final List<Integer> s = new ArrayList<>(l);
        s.sort(null);
        return s;
    }

    @Test
    void aNicReadOnThePathFlushesEarlierWrites() {
        try (SimGpu gpu = SimGpu.create(SimPreset.V100, deterministic(11)); Arena a = Arena.ofShared()) {
            final DeviceBuffer data = gpu.alloc(N);
            final NicMapping m = gpu.mapForNic(data);
            final MemorySegment src = SimTestSupport.patternHost(a, N, 2, SEED);
            m.write(0, src, 0, N);
            gpu.nicCompletionFence();
            assertEquals(16, gpu.postedWrites().pendingLanding());
            final MemorySegment one = a.allocate(1);
            m.read(N - 1, one, 0, 1); // readback of one byte
            assertEquals(0, gpu.postedWrites().pendingLanding());
            assertEquals(-1, ((SimDeviceBuffer) data).memory().mismatch(src));
            assertEquals(src.get(ValueLayout.JAVA_BYTE, N - 1), one.get(ValueLayout.JAVA_BYTE, 0));
        }
    }

    @Test
    void flushIsANoOpExactlyWhenTheOrderingCoversTheScope() {
        final Object[][] cases = {
            {SimPreset.V100, FlushScope.TO_OWNER, false}, {SimPreset.V100, FlushScope.TO_ALL_DEVICES, false},
            {SimPreset.H100, FlushScope.TO_OWNER, true}, {SimPreset.H100, FlushScope.TO_ALL_DEVICES, false},
            {SimPreset.H200, FlushScope.TO_OWNER, true}, {SimPreset.H200, FlushScope.TO_ALL_DEVICES, false},
            {SimPreset.ALL_DEVICES, FlushScope.TO_OWNER, true}, {SimPreset.ALL_DEVICES, FlushScope.TO_ALL_DEVICES, true},
        };
        for (final Object[] c : cases) {
            final SimPreset p = (SimPreset) c[0];
            final FlushScope scope = (FlushScope) c[1];
            try (SimGpu gpu = SimGpu.create(p, deterministic(12)); Arena a = Arena.ofShared()) {
                final DeviceBuffer data = gpu.alloc(N);
                gpu.mapForNic(data).write(0, SimTestSupport.patternHost(a, N, 1, SEED), 0, N);
                final FlushResult r = gpu.flushGpuDirectRdmaWrites(scope);
                assertEquals(c[2], r.noOp(), p.label() + " " + scope + ": " + r.evidence());
                assertTrue(r.evidence().contains("(118)") && r.evidence().contains("simulated"), r.evidence());
                if (r.noOp()) {
                    assertEquals(0, r.flushed());
                } else {
                    assertTrue(r.flushed() > 0);
                    assertEquals(0, gpu.postedWrites().pendingLanding());
                    assertEquals(scope == FlushScope.TO_ALL_DEVICES ? 0 : 16, gpu.postedWrites().pendingRetire());
                }
            }
        }
        try (SimGpu noFlush = SimGpu.create(SimPreset.NO_GDR, deterministic(12))) {
            assertEquals("CUDA_ERROR_NOT_SUPPORTED", assertThrows(GpuException.class,
                () -> noFlush.flushGpuDirectRdmaWrites(FlushScope.TO_OWNER)).errorName());
        }
    }

    @Test
    void ownerSeesNicWritesAtCompletionButAPeerGpuNeedsAFlushToAllDevices() {
        try (SimGpuSystem sys = SimGpuSystem.create(deterministic(13), SimPreset.H100, SimPreset.H100);
             Arena a = Arena.ofShared()) {
            final SimGpu owner = sys.gpu(0);
            final SimGpu peer = sys.gpu(1);
            final DeviceBuffer data = owner.alloc(N);
            SimTestSupport.fill(owner, data, 0, SEED);
            assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS", assertThrows(GpuException.class,
                () -> SimTestSupport.verifyOnDevice(peer, data, 0, SEED)).errorName(), "no peer access yet");
            sys.enablePeerAccess(1, 0);
            owner.mapForNic(data).write(0, SimTestSupport.patternHost(a, N, 1, SEED), 0, N);
            owner.nicCompletionFence();
            assertEquals(0, SimTestSupport.verifyOnDevice(owner, data, 1, SEED), "owner consumes consistently");
            assertEquals(N, SimTestSupport.verifyOnDevice(peer, data, 1, SEED), "peer still sees the old round");
            assertEquals(0, SimTestSupport.verifyOnDevice(peer, data, 0, SEED));
            // a device-to-device copy by the peer reads the same old bytes
            final DeviceBuffer copy = peer.alloc(N);
            peer.copyDtoD(copy, 0, data, 0, N);
            assertEquals(0, SimTestSupport.verifyOnDevice(peer, copy, 0, SEED));
            final FlushResult toOwner = owner.flushGpuDirectRdmaWrites(FlushScope.TO_OWNER);
            assertTrue(toOwner.noOp());
            assertEquals(N, SimTestSupport.verifyOnDevice(peer, data, 1, SEED), "TO_OWNER does not help the peer");
            final FlushResult toAll = owner.flushGpuDirectRdmaWrites(FlushScope.TO_ALL_DEVICES);
            assertFalse(toAll.noOp());
            assertEquals(0, SimTestSupport.verifyOnDevice(peer, data, 1, SEED), "after TO_ALL_DEVICES the peer sees it");
        }
    }

    @Test
    void orderingAllDevicesIsVisibleToPeersAtCompletion() {
        try (SimGpuSystem sys = SimGpuSystem.create(deterministic(14), SimPreset.ALL_DEVICES, SimPreset.ALL_DEVICES);
             Arena a = Arena.ofShared()) {
            sys.enablePeerAccess(1, 0);
            final DeviceBuffer data = sys.gpu(0).alloc(N);
            sys.gpu(0).mapForNic(data).write(0, SimTestSupport.patternHost(a, N, 1, SEED), 0, N);
            sys.gpu(0).nicCompletionFence();
            assertEquals(0, SimTestSupport.verifyOnDevice(sys.gpu(1), data, 1, SEED));
        }
    }

    @Test
    void bar1ExhaustionIsAClearMappingError() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100.withBar1(1 << 20), deterministic(15))) {
            final NicMapping m1 = gpu.mapForNic(gpu.alloc(512 * 1024));
            gpu.mapForNic(gpu.alloc(500 * 1024)); // rounds up to 512 KiB of aperture
            assertEquals(1 << 20, gpu.bar1MappedBytes());
            final DeviceBuffer third = gpu.alloc(1);
            final Bar1ExhaustedException e = assertThrows(Bar1ExhaustedException.class, () -> gpu.mapForNic(third));
            assertEquals("BAR1_EXHAUSTED", e.errorName());
            assertTrue(e.getMessage().contains("BAR1 aperture of 1048576 bytes"), e.getMessage());
            m1.close();
            gpu.mapForNic(third).close();
            final GpuException closed = assertThrows(GpuException.class, () -> m1.write(0, MemorySegment.ofArray(new byte[1]), 0, 1));
            assertEquals("CUDA_ERROR_INVALID_VALUE", closed.errorName());
        }
        try (SimGpu gpu = SimGpu.create(SimPreset.NO_GDR, deterministic(15))) {
            final DeviceBuffer b = gpu.alloc(4096);
            assertEquals("CUDA_ERROR_NOT_SUPPORTED", assertThrows(GpuException.class, () -> gpu.mapForNic(b)).errorName());
        }
    }

    @Test
    void backPressureForcesOldWritesThroughWithoutLosingBytes() {
        final SimGpuConfig small = SimGpuConfig.deterministic(16, new io.gdrkit.core.agent.ManualClock(0))
            .smWorkers(2).minDrainNanos(1000).maxDrainNanos(5000).stagingBytes(4096).maxInFlight(8)
            .defaultTimeout(TIMEOUT);
        try (SimGpu gpu = SimGpu.create(SimPreset.V100, small); Arena a = Arena.ofShared()) {
            final int n = 64 * 1024;
            final DeviceBuffer data = gpu.alloc(n);
            final MemorySegment src = SimTestSupport.patternHost(a, n, 3, SEED);
            gpu.mapForNic(data).write(0, src, 0, n);
            assertTrue(gpu.postedWrites().stats().contains("forced="), gpu.postedWrites().stats());
            assertFalse(gpu.postedWrites().stats().contains("forced=0 "), gpu.postedWrites().stats());
            gpu.flushGpuDirectRdmaWrites(FlushScope.TO_ALL_DEVICES);
            assertEquals(-1, ((SimDeviceBuffer) data).memory().mismatch(src));
        }
    }

    @Test
    void overlappingWritesKeepTheirOrderUnderNone() {
        try (SimGpu gpu = SimGpu.create(SimPreset.V100, deterministic(17)); Arena a = Arena.ofShared()) {
            final DeviceBuffer data = gpu.alloc(N);
            final NicMapping m = gpu.mapForNic(data);
            for (int round = 1; round <= 5; round++) {
                m.write(0, SimTestSupport.patternHost(a, N, round, SEED), 0, N);
            }
            while (gpu.postedWrites().stepLanding()) {
                // land in the seeded order
            }
            assertEquals(0, SimTestSupport.verifyOnDevice(gpu, data, 5, SEED), "the last write wins");
        }
    }

    @Test
    void aDeterministicRunnerStepsTheDrainAgentOnVirtualTime() {
        final io.gdrkit.core.agent.ManualClock clock = new io.gdrkit.core.agent.ManualClock(0);
        try (SimGpu gpu = SimGpu.create(SimPreset.V100, SimGpuConfig.deterministic(19, clock));
             Arena a = Arena.ofShared()) {
            final DeviceBuffer data = gpu.alloc(N);
            final MemorySegment src = SimTestSupport.patternHost(a, N, 6, SEED);
            gpu.mapForNic(data).write(0, src, 0, N);
            final io.gdrkit.core.agent.DeterministicRunner runner =
                new io.gdrkit.core.agent.DeterministicRunner(19, clock, 1_000, 50_000).add(gpu.system().drainAgent());
            runner.runUntil(() -> gpu.postedWrites().pendingLanding() + gpu.postedWrites().pendingRetire() == 0,
                10_000, "posted writes to land and retire on virtual time");
            assertTrue(clock.nanoTime() >= 2_000, "nothing lands before the minimum drain delay");
            assertEquals(-1, ((SimDeviceBuffer) data).memory().mismatch(src));
        }
    }

    @Test
    void theDrainAgentLandsWritesOnItsOwn() {
        try (SimGpu gpu = SimGpu.create(SimPreset.V100, SimGpuConfig.defaults(18)); Arena a = Arena.ofShared()) {
            final DeviceBuffer data = gpu.alloc(N);
            final MemorySegment src = SimTestSupport.patternHost(a, N, 4, SEED);
            gpu.mapForNic(data).write(0, src, 0, N);
            final long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (gpu.postedWrites().pendingLanding() + gpu.postedWrites().pendingRetire() > 0) {
                assertTrue(System.nanoTime() < deadline, "timed out waiting for the drain agent to land 16 chunks");
                Thread.yield();
            }
            assertEquals(-1, ((SimDeviceBuffer) data).memory().mismatch(src));
        }
    }
}
