/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuEvent;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.NicMapping;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.function.Consumer;

import static io.gdrkit.gpu.sim.SimTestSupport.TIMEOUT;
import static io.gdrkit.gpu.sim.SimTestSupport.deterministic;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** SYNC_MEMOPS: without it a synchronous copy into a NIC-mapped buffer returns before the NIC can see it. */
class SimSyncMemopsTest {
    private static final int LEN = 4096;

    private static byte[] bytes(final int seed) {
        final byte[] b = new byte[LEN];
        for (int i = 0; i < LEN; i++) {
            b[i] = (byte) (i * 31 + seed);
        }
        return b;
    }

    /** What the NIC reads from the whole buffer. */
    private static byte[] nicRead(final NicMapping m) {
        final byte[] out = new byte[LEN];
        m.read(0, MemorySegment.ofArray(out), 0, LEN);
        return out;
    }

    private static void copy(final SimGpu gpu, final DeviceBuffer b, final byte[] data) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment src = a.allocate(LEN);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, src, 0, LEN);
            gpu.copyHtoD(b, 0, src, 0, LEN);
        }
    }

    @Test
    void withoutTheAttributeTheNicSeesTheOldBytesUntilTheGpuSynchronizes() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(3))) {
            final DeviceBuffer b = gpu.alloc(LEN);
            copy(gpu, b, bytes(1)); // not mapped yet: lands at once
            try (NicMapping m = gpu.mapForNic(b)) {
                assertFalse(gpu.syncMemops(b));
                copy(gpu, b, bytes(2));
                assertArrayEquals(bytes(1), nicRead(m), "the copy returned before landing");
                assertTrue(gpu.nicReadFence(m));
                assertArrayEquals(bytes(1), nicRead(m), "a NIC read fence does not land a CPU copy");
                assertEquals(1, gpu.landDeferredCopies());
                assertArrayEquals(bytes(2), nicRead(m));
                assertEquals(0, gpu.landDeferredCopies());
            }
        }
    }

    @Test
    void withTheAttributeTheCopyLandsBeforeReturning() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(4))) {
            final DeviceBuffer b = gpu.alloc(LEN);
            try (NicMapping m = gpu.mapForNic(b)) {
                gpu.setSyncMemops(b, true);
                copy(gpu, b, bytes(5));
                assertArrayEquals(bytes(5), nicRead(m));
                assertEquals(0, gpu.landDeferredCopies());
            }
        }
    }

    @Test
    void withTheModelOffOrNoMappingTheCopyLandsBeforeReturning() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(5).deferUnsyncedCopies(false))) {
            final DeviceBuffer b = gpu.alloc(LEN);
            try (NicMapping m = gpu.mapForNic(b)) {
                copy(gpu, b, bytes(6));
                assertArrayEquals(bytes(6), nicRead(m));
            }
        }
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(6))) {
            final DeviceBuffer b = gpu.alloc(LEN);
            gpu.mapForNic(b).close(); // unmapped again: no NIC can tell
            copy(gpu, b, bytes(7));
            assertArrayEquals(bytes(7), ((SimDeviceBuffer) b).memory().toArray(ValueLayout.JAVA_BYTE));
            assertEquals(0, gpu.landDeferredCopies());
        }
    }

    @Test
    void theCopyTakesItsSourceAtTheCallAndTheNextCopyLandsIt() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(7));
             Arena a = Arena.ofConfined()) {
            final DeviceBuffer b = gpu.alloc(LEN);
            try (NicMapping m = gpu.mapForNic(b)) {
                final MemorySegment src = a.allocate(LEN);
                MemorySegment.copy(MemorySegment.ofArray(bytes(8)), 0, src, 0, LEN);
                gpu.copyHtoD(b, 0, src, 0, LEN);
                src.fill((byte) 0x5a); // reused at once, as a caller of a synchronous copy may
                copy(gpu, b, bytes(9)); // its prologue lands the first, then it is held itself
                assertArrayEquals(bytes(8), nicRead(m));
                assertEquals(1, gpu.landDeferredCopies());
                assertArrayEquals(bytes(9), nicRead(m));
            }
        }
    }

    /** Every synchronizing call of the owner GPU lands a held copy before it does anything else. */
    @Test
    void everySynchronizingCallLandsIt() {
        final Consumer<SimGpu> streamSync = g -> g.synchronize(g.defaultStream(), TIMEOUT);
        final Consumer<SimGpu> eventSync = g -> {
            final GpuEvent e = g.createEvent();
            g.synchronize(e, TIMEOUT);
        };
        final Consumer<SimGpu> launch = g -> {
            final GpuStream s = g.createStream();
            final DeviceBuffer other = g.alloc(256);
            g.launch(g.function("kernels", "fill_pattern"), Dim3.of(1), Dim3.of(32), s,
                new KernelArgs(4).ptr(other).u64(256).u32(1).u32(1));
            assertEquals(0, g.landDeferredCopies()); // the launch landed it before submitting
            g.synchronize(s, TIMEOUT);
        };
        final Consumer<SimGpu> readBack = g -> {
            try (Arena a = Arena.ofConfined()) {
                g.copyDtoH(a.allocate(1), 0, g.alloc(256), 0, 1);
            }
        };
        int seed = 10;
        for (final Consumer<SimGpu> call : List.of(streamSync, eventSync, launch, readBack)) {
            try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(seed++))) {
                final DeviceBuffer b = gpu.alloc(LEN);
                try (NicMapping m = gpu.mapForNic(b)) {
                    copy(gpu, b, bytes(seed));
                    assertArrayEquals(new byte[LEN], nicRead(m));
                    call.accept(gpu);
                    assertArrayEquals(bytes(seed), nicRead(m));
                }
            }
        }
    }

    @Test
    void aCopyHeldForAFreedBufferIsDropped() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(20))) {
            final DeviceBuffer b = gpu.alloc(LEN);
            final NicMapping m = gpu.mapForNic(b);
            copy(gpu, b, bytes(21));
            m.close();
            gpu.free(b); // lands it first, as cuMemFree synchronizes; nothing is left to land
            assertEquals(0, gpu.landDeferredCopies());
        }
    }

    @Test
    void mappingThroughGpuDmaMemorySetsTheAttribute() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(22))) {
            final DeviceBuffer b = gpu.alloc(LEN);
            assertFalse(gpu.syncMemops(b));
            try (GpuDmaMemory mem = new GpuDmaMemory(gpu, b)) {
                assertTrue(gpu.syncMemops(b));
                copy(gpu, b, bytes(23));
                final byte[] out = new byte[LEN];
                mem.dmaRead(0, MemorySegment.ofArray(out), 0, LEN);
                assertArrayEquals(bytes(23), out);
            }
        }
    }
}
