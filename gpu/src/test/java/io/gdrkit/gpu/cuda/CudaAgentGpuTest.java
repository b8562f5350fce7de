/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.config.GpuConfiguration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The delivery agent on a real GPU (skipped without libcuda): the NIC's writes of odd sizes and places, scattered
 * ones that wrap the ring, a free that pauses the agent and a write after it, all read back byte by byte through the
 * copy engine; the stats say the agent delivered them.
 */
class CudaAgentGpuTest {

    @Test
    void nicWritesThroughTheAgentLandByteExact() {
        final CudaProbe p = CudaGpu.probe();
        Assumptions.assumeTrue(p.found(), () -> "no CUDA here: " + p.evidence());
        final String key = GpuConfiguration.CUDA_AGENT.name();
        final String before = System.getProperty(key);
        System.setProperty(key, "on");
        try (CudaGpu gpu = CudaGpu.open(0)) {
            final long size = 4L << 20;
            final DeviceBuffer b = gpu.alloc(size);
            final MemorySegment src = gpu.allocHost(size);
            Pattern.fill(src, 0, size, 0, 3, 91);
            final MemorySegment expect = gpu.allocHost(size);
            expect.fill((byte) 0);
            final MemorySegment zero = gpu.allocHost(size);
            zero.fill((byte) 0);
            gpu.copyHtoD(b, 0, zero, 0, size);
            try (NicMapping m = gpu.mapForNic(b)) {
                // odd sizes and offsets, contiguous runs (one span) and jumps (FENCE)
                final long[][] writes = {{0, 17}, {17, 4079}, {4096, 1 << 20}, {3 << 20, 5}, {(3 << 20) + 9, 70000},
                    {2 << 20, 1 << 20}};
                for (final long[] w : writes) {
                    m.write(w[0], src, w[0], w[1]);
                    MemorySegment.copy(src, w[0], expect, w[0], w[1]);
                }
                // 3000 scattered 64-byte writes: the 1024-slot ring wraps
                for (int i = 0; i < 3000; i++) {
                    final long off = (i * 7919L % (size / 128)) * 128;
                    m.write(off, src, (i * 64L) % (size - 64), 64);
                    MemorySegment.copy(src, (i * 64L) % (size - 64), expect, off, 64);
                }
                gpu.nicCompletionFence();
                final DeviceBuffer scratch = gpu.alloc(4096);
                gpu.free(scratch); // pauses the agent; the next write starts it again
                m.write(123, src, 5000, 999);
                MemorySegment.copy(src, 5000, expect, 123, 999);
                gpu.nicCompletionFence();
            }
            final MemorySegment back = gpu.allocHost(size);
            gpu.copyDtoH(back, 0, b, 0, size);
            assertEquals(-1, back.mismatch(expect), "first mismatch");
            final String stats = gpu.nicStats();
            assertTrue(stats.contains("spans by the agent") && stats.contains("0 by the copy engine"), stats);
            gpu.free(b);
            gpu.freeHost(src);
            gpu.freeHost(expect);
            gpu.freeHost(zero);
            gpu.freeHost(back);
        } finally {
            if (before == null) {
                System.clearProperty(key);
            } else {
                System.setProperty(key, before);
            }
        }
    }
}
