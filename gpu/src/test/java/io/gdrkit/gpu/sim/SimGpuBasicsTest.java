/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.DmaBufExport;
import io.gdrkit.gpu.GpuAttributes;
import io.gdrkit.gpu.GpuEvent;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.MpsState;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.WritesOrdering;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

import static io.gdrkit.gpu.sim.SimTestSupport.TIMEOUT;
import static io.gdrkit.gpu.sim.SimTestSupport.deterministic;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SimGpuBasicsTest {

    @Test
    void presetsReportTheirAttributes() {
        try (SimGpuSystem sys = SimGpuSystem.create(deterministic(1), SimPreset.V100, SimPreset.H100, SimPreset.H200,
            SimPreset.ALL_DEVICES)) {
            final GpuAttributes v100 = sys.gpu(0).attributes();
            assertEquals("7.0", v100.computeCapability());
            assertEquals(WritesOrdering.NONE, v100.writesOrdering());
            assertEquals(0, v100.dmaBufSupported());
            assertEquals(1, v100.flushWritesOptions());
            assertEquals(1, v100.gpuDirectRdmaSupported());
            for (final int i : new int[] {1, 2}) {
                final GpuAttributes h = sys.gpu(i).attributes();
                assertEquals("9.0", h.computeCapability());
                assertEquals(WritesOrdering.OWNER, h.writesOrdering());
                assertEquals(100, h.writesOrdering().value());
                assertEquals(1, h.dmaBufSupported());
                assertEquals(1, h.flushWritesOptions());
            }
            assertEquals(WritesOrdering.ALL_DEVICES, sys.gpu(3).attributes().writesOrdering());
            for (int i = 0; i < sys.count(); i++) {
                assertTrue(sys.gpu(i).isSimulated());
                assertTrue(sys.gpu(i).describe().contains("SIMULATED"), sys.gpu(i).describe());
                assertTrue(sys.gpu(i).attributes().name().contains("simulated"));
                // no CUDA context and no PCI device: MPS and a bus id do not apply, and say so
                assertEquals(MpsState.NOT_APPLICABLE, sys.gpu(i).attributes().mpsEnabled());
                assertEquals("n/a", sys.gpu(i).attributes().mpsEnabled().attributeText());
                assertTrue(sys.gpu(i).attributes().mpsEvidence().startsWith("simulated GPU"),
                    sys.gpu(i).attributes().mpsEvidence());
                assertNull(sys.gpu(i).pciBusId());
            }
        }
    }

    @Test
    void attribute133IsReadAsCudaGivesItAndOtherwiseUnknown() {
        assertEquals(MpsState.ON, MpsState.of(1));
        assertEquals(MpsState.OFF, MpsState.of(0));
        assertEquals(MpsState.UNKNOWN, MpsState.of(2));
        assertEquals(MpsState.UNKNOWN, MpsState.of(-1));
        assertEquals("1", MpsState.ON.attributeText());
        assertEquals("0", MpsState.OFF.attributeText());
        assertEquals("unknown", MpsState.UNKNOWN.attributeText());
        assertEquals("true", MpsState.ON.label());
        assertEquals("false", MpsState.OFF.label());
        assertEquals("unknown", MpsState.UNKNOWN.label());
        assertEquals("not applicable", MpsState.NOT_APPLICABLE.label());
        assertEquals(133, GpuAttributes.ATTR_MPS_ENABLED);
    }

    @Test
    void copiesAreByteExactAllWays() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(2)); Arena a = Arena.ofShared()) {
            final long n = 1_000_003; // odd size: no chunk or page alignment to hide behind
            final MemorySegment src = SimTestSupport.patternHost(a, n, 3, 77);
            final MemorySegment back = a.allocate(n);
            final DeviceBuffer d1 = gpu.alloc(n);
            final DeviceBuffer d2 = gpu.alloc(n);
            gpu.copyHtoD(d1, 0, src, 0, n);
            gpu.copyDtoD(d2, 0, d1, 0, n);
            gpu.copyDtoH(back, 0, d2, 0, n);
            assertEquals(-1, back.mismatch(src));
            // with offsets
            final MemorySegment part = a.allocate(1000);
            gpu.copyDtoH(part, 0, d2, 12_345, 1000);
            assertEquals(-1, Pattern.firstMismatch(part, 0, 1000, 12_345, 3, 77));
            // async on one stream: H2D, D2D, D2H in order
            final MemorySegment src2 = SimTestSupport.patternHost(a, n, 4, 77);
            final GpuStream s = gpu.createStream();
            gpu.copyHtoDAsync(d1, 0, src2, 0, n, s);
            gpu.copyDtoDAsync(d2, 0, d1, 0, n, s);
            gpu.copyDtoHAsync(back, 0, d2, 0, n, s);
            gpu.synchronize(s, TIMEOUT);
            assertEquals(-1, back.mismatch(src2));
            final MemorySegment pinned = gpu.allocHost(4096);
            assertEquals(4096, pinned.byteSize());
            gpu.freeHost(pinned);
            gpu.free(d1);
            final GpuException e = assertThrows(GpuException.class, () -> gpu.copyDtoH(back, 0, d1, 0, 1));
            assertEquals("CUDA_ERROR_INVALID_VALUE", e.errorName());
            final GpuException range = assertThrows(GpuException.class, () -> gpu.copyDtoH(back, 0, d2, n - 1, 2));
            assertEquals("CUDA_ERROR_INVALID_VALUE", range.errorName());
        }
    }

    @Test
    void outOfMemoryIsNamed() {
        try (SimGpu gpu = SimGpu.create(SimPreset.V100, deterministic(3).memBytes(1 << 20))) {
            gpu.alloc(1 << 19);
            final GpuException e = assertThrows(GpuException.class, () -> gpu.alloc(1 << 20));
            assertEquals("CUDA_ERROR_OUT_OF_MEMORY", e.errorName());
            assertEquals(2, e.code());
        }
    }

    @Test
    void streamsSerializeLaunchesAndCopies() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(4)); Arena a = Arena.ofShared()) {
            final DeviceBuffer log = gpu.alloc(8 * 101);
            // each launch appends its number at log[count] and bumps count: any reordering shows
            final SimFunction append = new SimFunction("append", ctx -> {
                final DeviceView v = ctx.view(0);
                final long count = v.getLong(0);
                v.putLong(8 * (count + 1), ctx.u64(1));
                v.putLong(0, count + 1);
            });
            final GpuStream s = gpu.createStream();
            final KernelArgs args = new KernelArgs(2);
            final GpuEvent start = gpu.createEvent();
            final GpuEvent end = gpu.createEvent();
            gpu.record(start, s);
            for (int i = 0; i < 50; i++) {
                gpu.launch(append, Dim3.of(1), Dim3.of(1), s, args.clear().ptr(log).u64(i));
            }
            // a copy in the middle overwrites entry 0's value, then launches continue
            final MemorySegment marker = a.allocate(8);
            marker.set(ValueLayout.JAVA_LONG, 0, 999);
            gpu.copyHtoDAsync(log, 8, marker, 0, 8, s);
            for (int i = 50; i < 100; i++) {
                gpu.launch(append, Dim3.of(1), Dim3.of(1), s, args.clear().ptr(log).u64(i));
            }
            gpu.record(end, s);
            gpu.synchronize(end, TIMEOUT);
            final MemorySegment h = a.allocate(8 * 101);
            gpu.copyDtoH(h, 0, log, 0, 8 * 101);
            assertEquals(100, h.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(999, h.get(ValueLayout.JAVA_LONG, 8));
            for (int i = 1; i < 100; i++) {
                assertEquals(i, h.get(ValueLayout.JAVA_LONG, 8L * (i + 1)));
            }
            assertTrue(gpu.elapsedMillis(start, end) >= 0);
            final GpuEvent never = gpu.createEvent();
            assertEquals("CUDA_ERROR_INVALID_HANDLE",
                assertThrows(GpuException.class, () -> gpu.elapsedMillis(never, end)).errorName());
        }
    }

    @Test
    void fillAndVerifyKernelsMatchThePattern() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H200, deterministic(5)); Arena a = Arena.ofShared()) {
            final DeviceBuffer b = gpu.alloc(100_000);
            SimTestSupport.fill(gpu, b, 9, 4242);
            assertEquals(0, SimTestSupport.verifyOnDevice(gpu, b, 9, 4242));
            assertEquals(100_000, SimTestSupport.verifyOnDevice(gpu, b, 10, 4242), "another round differs everywhere");
            final MemorySegment h = a.allocate(100_000);
            gpu.copyDtoH(h, 0, b, 0, 100_000);
            assertEquals(-1, Pattern.firstMismatch(h, 0, 100_000, 0, 9, 4242), "Java pattern = kernel pattern");
            assertEquals("CUDA_ERROR_NOT_FOUND",
                assertThrows(GpuException.class, () -> gpu.function("kernels", "nope")).errorName());
        }
    }

    @Test
    void failingKernelIsAStickyLaunchError() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(6))) {
            final GpuStream s = gpu.createStream();
            gpu.launch(new SimFunction("boom", ctx -> {
                throw new IllegalStateException("kernel bug");
            }), Dim3.of(1), Dim3.of(1), s, new KernelArgs(1));
            final GpuException e = assertThrows(GpuException.class, () -> gpu.synchronize(s, TIMEOUT));
            assertEquals("CUDA_ERROR_LAUNCH_FAILED", e.errorName());
            assertTrue(e.getMessage().contains("kernel bug"));
        }
    }

    @Test
    void persistentKernelPollsAFlagThenVerifies() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(7)); Arena a = Arena.ofShared()) {
            final int n = 64 * 1024;
            final DeviceBuffer data = gpu.alloc(n);
            final DeviceBuffer flag = gpu.alloc(4);
            final DeviceBuffer result = SimTestSupport.resultBuffer(gpu);
            SimTestSupport.fill(gpu, data, 0, 1);
            final GpuStream consumer = gpu.createStream();
            gpu.launch(gpu.function("kernels", "poll_flag_verify"), Dim3.of(2), Dim3.of(128), consumer,
                new KernelArgs(8).ptr(flag).u32(1).u64(Long.MAX_VALUE).ptr(data).u64(n).u32(1).u32(1).ptr(result));
            // the producer: another stream copies the data, then the flag, while the kernel runs
            final GpuStream producer = gpu.createStream();
            final MemorySegment src = SimTestSupport.patternHost(a, n, 1, 1);
            final MemorySegment one = a.allocate(4);
            one.set(ValueLayout.JAVA_INT, 0, 1);
            gpu.copyHtoDAsync(data, 0, src, 0, n, producer);
            gpu.copyHtoDAsync(flag, 0, one, 0, 4, producer);
            gpu.synchronize(consumer, TIMEOUT);
            final long[] r = SimTestSupport.readResult(gpu, result);
            assertEquals(0, r[0], "mismatches");
            assertEquals(0, r[2], "timed out");
            assertTrue(r[3] >= 2, "both blocks polled");
        }
    }

    @Test
    void persistentKernelTimesOutAndSynchronizeNamesWhatItWaitedFor() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(8)); Arena a = Arena.ofShared()) {
            final DeviceBuffer data = gpu.alloc(256);
            final DeviceBuffer flag = gpu.alloc(4);
            final DeviceBuffer result = SimTestSupport.resultBuffer(gpu);
            final GpuStream s = gpu.createStream();
            final KernelArgs args = new KernelArgs(8);
            gpu.launch(gpu.function("kernels", "poll_flag_verify"), Dim3.of(1), Dim3.of(32), s,
                args.ptr(flag).u32(1).u64(1000).ptr(data).u64(256).u32(1).u32(1).ptr(result));
            gpu.synchronize(s, TIMEOUT);
            final long[] r = SimTestSupport.readResult(gpu, result);
            assertEquals(1, r[2], "poll budget exhausted is reported");
            assertEquals(1000, r[3]);
            // a kernel that never gets its flag: the host-side wait times out and says what it waited for
            gpu.launch(gpu.function("kernels", "poll_flag_verify"), Dim3.of(1), Dim3.of(32), s,
                args.clear().ptr(flag).u32(1).u64(Long.MAX_VALUE).ptr(data).u64(256).u32(1).u32(1).ptr(result));
            final GpuException e = assertThrows(GpuException.class, () -> gpu.synchronize(s, Duration.ofMillis(200)));
            assertEquals("GDRKIT_TIMEOUT", e.errorName());
            assertTrue(e.getMessage().contains("poll_flag_verify"), e.getMessage());
            final MemorySegment one = a.allocate(4);
            one.set(ValueLayout.JAVA_INT, 0, 1);
            gpu.copyHtoD(flag, 0, one, 0, 4); // default stream: runs beside the blocked one
            gpu.synchronize(s, TIMEOUT);
        }
    }

    @Test
    void syncMemopsIsRecorded() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H100, deterministic(9))) {
            final DeviceBuffer b = gpu.alloc(4096);
            assertFalse(gpu.syncMemops(b));
            gpu.setSyncMemops(b, true);
            assertTrue(gpu.syncMemops(b));
        }
    }

    @Test
    void dmaBufExportFollowsAttribute124() {
        try (SimGpuSystem sys = SimGpuSystem.create(deterministic(10), SimPreset.V100, SimPreset.H100)) {
            final DmaBufExport no = sys.gpu(0).exportDmaBuf(sys.gpu(0).alloc(1 << 20));
            assertFalse(no.supported());
            assertEquals(-1, no.fd());
            assertTrue(no.evidence().contains("124") && no.evidence().contains("simulated"), no.evidence());
            final DmaBufExport yes = sys.gpu(1).exportDmaBuf(sys.gpu(1).alloc(1 << 20));
            assertTrue(yes.supported(), yes.evidence());
            assertTrue(yes.fd() >= 0);
            assertTrue(yes.evidence().contains("simulated"));
            MemFd.close(yes.fd());
            final DmaBufExport odd = sys.gpu(1).exportDmaBuf(sys.gpu(1).alloc(1000));
            assertFalse(odd.supported());
            assertTrue(odd.evidence().contains("CUDA_ERROR_INVALID_VALUE"));
        }
    }
}
