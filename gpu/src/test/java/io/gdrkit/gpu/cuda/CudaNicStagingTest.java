/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The stand-in NIC's staged writes on a real GPU (skipped without libcuda). Two device buffers can lie next to each
 * other in the GPU's address space; a NIC write that ends one and a write that starts the other are contiguous in
 * device addresses, but one {@code cuMemcpyHtoDAsync} may not cross from one allocation into the next (the driver
 * answers CUDA_ERROR_INVALID_VALUE). This is how {@code coll reduce} failed once at 16 MiB on the H200.
 */
class CudaNicStagingTest {

    @Test
    void writesThatEndOneBufferAndStartTheNextLandAsTwoCopies() {
        final CudaProbe p = CudaGpu.probe();
        Assumptions.assumeTrue(p.found(), () -> "no CUDA here: " + p.evidence());
        try (CudaGpu gpu = CudaGpu.open(0)) {
            final long size = 2L << 20; // the driver's allocation granularity: neighbours are likely
            final List<DeviceBuffer> all = new ArrayList<>();
            DeviceBuffer a = null;
            DeviceBuffer b = null;
            for (int i = 0; i < 64 && a == null; i++) {
                final DeviceBuffer next = gpu.alloc(size);
                for (final DeviceBuffer earlier : all) {
                    if (((CudaBuffer) earlier).address() + size == ((CudaBuffer) next).address()) {
                        a = earlier;
                        b = next;
                    }
                }
                all.add(next);
            }
            final String seen = all.toString();
            Assumptions.assumeTrue(a != null, () -> "no two adjacent allocations among " + seen);
            final int n = 4096;
            final MemorySegment src = gpu.allocHost(2 * n);
            Pattern.fill(src, 0, 2 * n, 0, 5, 77);
            try (NicMapping ma = gpu.mapForNic(a); NicMapping mb = gpu.mapForNic(b)) {
                // the end of a, then the start of b: one contiguous device range across two allocations
                ma.write(size - n, src, 0, n);
                mb.write(0, src, n, n);
                gpu.nicCompletionFence();
            }
            final MemorySegment back = gpu.allocHost(2 * n);
            back.fill((byte) 0);
            gpu.copyDtoH(back, 0, a, size - n, n);
            gpu.copyDtoH(back, n, b, 0, n);
            assertEquals(-1, Pattern.firstMismatch(back, 0, 2 * n, 0, 5, 77));
            gpu.freeHost(src);
            gpu.freeHost(back);
            for (final DeviceBuffer d : all) {
                gpu.free(d);
            }
        }
    }
}
