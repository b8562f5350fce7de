/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs against a real GPU when libcuda.so.1 is there; otherwise checks that the probe says "not found" honestly. */
class CudaBindingTest {

    @Test
    void probeNeverInventsADevice() {
        final CudaProbe p = CudaGpu.probe();
        assertEquals("libcuda.so.1", p.library());
        assertEquals(new io.gdrkit.core.config.Setting<>(CudaDriver.LIBRARY_PROPERTY, "libcuda.so.1",
            io.gdrkit.core.config.Source.DEFAULT, null), CudaDriver.librarySetting());
        if (!p.found()) {
            assertEquals(0, p.deviceCount());
            assertTrue(p.devices().isEmpty());
            assertFalse(p.evidence().isBlank());
            assertTrue(p.toString().startsWith("CUDA not found"), p.toString());
        } else {
            assertTrue(p.deviceCount() > 0);
            assertEquals(p.deviceCount(), p.devices().size());
        }
    }

    @Test
    void realDeviceRoundTrip() {
        final CudaProbe p = CudaGpu.probe();
        Assumptions.assumeTrue(p.found(), () -> "no CUDA here: " + p.evidence());
        try (CudaGpu gpu = CudaGpu.open(0)) {
            assertFalse(gpu.isSimulated());
            assertTrue(gpu.attributes().ccMajor() > 0);
            final int n = 1 << 20;
            final MemorySegment host = gpu.allocHost(n);
            Pattern.fill(host, 0, n, 0, 3, 9);
            final DeviceBuffer d = gpu.alloc(n);
            gpu.copyHtoD(d, 0, host, 0, n);
            final DeviceBuffer d2 = gpu.alloc(n);
            gpu.copyDtoD(d2, 0, d, 0, n);
            host.fill((byte) 0);
            gpu.copyDtoH(host, 0, d2, 0, n);
            assertEquals(-1, Pattern.firstMismatch(host, 0, n, 0, 3, 9));
            // the PTX verify kernel agrees with the Java pattern
            final DeviceBuffer result = gpu.alloc(32);
            final MemorySegment r = gpu.allocHost(32);
            r.fill((byte) 0);
            r.set(ValueLayout.JAVA_LONG, 8, -1L);
            gpu.copyHtoD(result, 0, r, 0, 32);
            final GpuStream s = gpu.createStream();
            gpu.launch(gpu.function("kernels", "verify_pattern"), Dim3.of(64), Dim3.of(256), s,
                new KernelArgs(5).ptr(d2).u64(n).u32(3).u32(9).ptr(result));
            gpu.synchronize(s, Duration.ofSeconds(30));
            gpu.copyDtoH(r, 0, result, 0, 32);
            assertEquals(0, r.get(ValueLayout.JAVA_LONG, 0));
            gpu.setSyncMemops(d, true);
            assertTrue(gpu.syncMemops(d));
            gpu.destroyStream(s);
            gpu.free(d);
            gpu.free(d2);
            gpu.free(result);
            gpu.freeHost(host);
            gpu.freeHost(r);
        }
    }
}
