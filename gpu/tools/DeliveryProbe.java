/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.cuda.CudaGpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * What one NIC write into CUDA device memory and its completion fence cost, without a NIC: the path a responder takes
 * for each small WRITE or SEND (GpuDmaMemory.dmaWrite, then completionFenceStart and completionFenceDone polled), with
 * the copy engine or the delivery agent (-Dgdrkit.cuda.agent=off|on). Prints one JSON line (min / median / p99 of the
 * second of two rounds, and whether the last write landed byte-exact). On the GPU host, next to the jar:
 *   javac -cp gdrkit.jar -d /tmp/probe gpu/tools/DeliveryProbe.java
 *   java --enable-native-access=ALL-UNNAMED -Dgdrkit.cuda.agent=on -cp gdrkit.jar:/tmp/probe DeliveryProbe 8 20000
 */
public final class DeliveryProbe {
    public static void main(String[] args) {
        final int len = Integer.parseInt(args[0]);
        final int iters = Integer.parseInt(args[1]);
        try (CudaGpu gpu = CudaGpu.open(0)) {
            final DeviceBuffer b = gpu.alloc(1 << 20);
            try (GpuDmaMemory m = new GpuDmaMemory(gpu, b)) {
                final MemorySegment src = Arena.ofAuto().allocate(4096);
                for (int i = 0; i < 4096; i++) src.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + 1));
                final long[] t = new long[iters];
                final long[] tw = new long[iters];
                for (int round = 0; round < 2; round++) {
                    for (int i = 0; i < iters; i++) {
                        final long t0 = System.nanoTime();
                        m.dmaWrite((i % 256) * 4096L, src, 0, len);
                        final long t1 = System.nanoTime();
                        final long tok = m.completionFenceStart();
                        while (!m.completionFenceDone(tok)) {
                            Thread.onSpinWait();
                        }
                        final long t2 = System.nanoTime();
                        t[i] = t2 - t0;
                        tw[i] = t1 - t0;
                    }
                }
                Arrays.sort(t);
                Arrays.sort(tw);
                final MemorySegment back = Arena.ofAuto().allocate(len);
                gpu.copyDtoH(back, 0, b, (long) ((iters - 1) % 256) * 4096L, len);
                final boolean ok = back.mismatch(src.asSlice(0, len)) == -1;
                System.out.printf("{\"probe\":\"write+fence\",\"agent\":\"%s\",\"bytes\":%d,\"iters\":%d,\"min_us\":%.2f,"
                    + "\"median_us\":%.2f,\"p99_us\":%.2f,\"write_median_us\":%.2f,\"byte_exact\":%s,\"stats\":\"%s\"}%n",
                    System.getProperty("gdrkit.cuda.agent", "off"), len, iters, t[0] / 1e3, t[iters / 2] / 1e3,
                    t[iters * 99 / 100] / 1e3, tw[iters / 2] / 1e3, ok, gpu.nicStats().replace('"', '\''));
            }
            gpu.free(b);
        }
    }
}
