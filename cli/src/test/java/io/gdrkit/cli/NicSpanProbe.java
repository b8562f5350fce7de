/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.cuda.CudaBuffer;
import io.gdrkit.gpu.cuda.CudaGpu;

import java.lang.foreign.MemorySegment;

/**
 * Run by {@link CudaNicStagingTest} in a child JVM against the libcuda test double with FAKECUDA_ALLOC_ARENA=1,
 * where allocations lie next to each other and a copy may not cross from one into the next (the real driver's rule).
 * The stand-in NIC writes the last 4 KiB of one buffer and then the first 4 KiB of its neighbour: contiguous in
 * device addresses, so before the fix its staging merged them into one copy, which the driver refused (how
 * {@code coll reduce} failed once at 16 MiB on the H200). Prints one line per check, then the verdict.
 */
public final class NicSpanProbe {
    private NicSpanProbe() {
    }

    public static void main(final String[] args) {
        final long size = 2L << 20;
        final int n = 4096;
        try (CudaGpu gpu = CudaGpu.open(0)) {
            final DeviceBuffer a = gpu.alloc(size);
            final DeviceBuffer b = gpu.alloc(size);
            final boolean adjacent = ((CudaBuffer) a).address() + size == ((CudaBuffer) b).address();
            System.out.println("adjacent allocations: " + adjacent);
            final MemorySegment src = gpu.allocHost(2 * n);
            Pattern.fill(src, 0, 2 * n, 0, 5, 77);
            try (NicMapping ma = gpu.mapForNic(a); NicMapping mb = gpu.mapForNic(b)) {
                ma.write(size - n, src, 0, n);
                mb.write(0, src, n, n);
                gpu.nicCompletionFence();
            }
            final MemorySegment back = gpu.allocHost(2 * n);
            back.fill((byte) 0);
            gpu.copyDtoH(back, 0, a, size - n, n);
            gpu.copyDtoH(back, n, b, 0, n);
            System.out.println("across the boundary: byte-exact " + (Pattern.firstMismatch(back, 0, 2 * n, 0, 5, 77)
                == -1));
            // the test double's rule itself: one copy across both allocations is refused by name
            String refused = "not refused";
            try {
                gpu.copyDtoH(back, 0, new CudaBuffer(gpu, ((CudaBuffer) a).address(), 2 * size), size - n, 2 * n);
            } catch (final RuntimeException e) {
                refused = e.getMessage();
            }
            System.out.println("one copy across: " + refused);
            gpu.free(a);
            gpu.free(b);
        } catch (final RuntimeException e) {
            System.out.println("failed: " + e.getMessage());
            System.exit(1);
        }
    }
}
