/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.experiments.visibility;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.sim.DeviceView;
import io.gdrkit.gpu.sim.SimDeviceBuffer;
import io.gdrkit.gpu.sim.SimFunction;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Interim Java twins of the consumer kernels until they live in the GPU module's SimKernels. */
final class TempSimKernels {
    private TempSimKernels() {
    }

    static final SimFunction VERIFY = new SimFunction("vis_verify", ctx -> {
        if (ctx.blockIdx() != 0) {
            return;
        }
        final long[] r = verify(((SimDeviceBuffer) ctx.args().buffer(0)).memory(), ctx.u64(1), ctx.u32(2), ctx.u32(3));
        final DeviceView res = ctx.view(4);
        res.putLong(0, r[0]);
        res.putLong(8, r[1]);
        res.putLong(16, r[2]);
        res.putLong(24, r[3]);
    });

    static SimFunction persistent(final DeviceBuffer[] data) {
        return new SimFunction("vis_persistent_acquire", ctx -> {
            final DeviceView flags = ctx.view(0);
            final int senders = ctx.u32(2);
            final long n = ctx.u64(3);
            final int rounds = ctx.u32(4);
            final int seed = ctx.u32(5);
            final DeviceView res = ctx.view(7);
            for (int round = 1; round <= rounds; round++) {
                for (int s = 0; s < senders; s++) {
                    long polls = 0;
                    while (Integer.compareUnsigned(flags.getIntAcquire(4L * s), round) < 0) {
                        if (ctx.stopRequested()) {
                            return;
                        }
                        if ((++polls & 63) == 0) {
                            Thread.yield();
                        } else {
                            Thread.onSpinWait();
                        }
                    }
                    final long[] r = verify(((SimDeviceBuffer) data[s]).memory(), n, round, seed);
                    final long at = 64L * ((long) (round - 1) * senders + s);
                    res.putLong(at, r[0]);
                    res.putLong(at + 8, r[1]);
                    res.putLong(at + 16, r[2]);
                    res.putLong(at + 24, r[3]);
                    res.putLong(at + 32, polls);
                    res.putLong(at + 40, 0);
                    res.putLong(at + 48, 0);
                    java.lang.invoke.VarHandle.releaseFence();
                    res.putLong(at + 56, round);
                }
            }
        });
    }

    private static long[] verify(final MemorySegment buf, final long n, final int round, final int seed) {
        final MemorySegment local = MemorySegment.ofArray(new byte[4096]);
        long bad = 0;
        long first = -1;
        long lastGood = -1;
        long prev = 0;
        for (long base = 0; base < n; base += 4096) {
            final int len = (int) Math.min(4096, n - base);
            MemorySegment.copy(buf, base, local, 0, len);
            for (int j = 0; j < len; j++) {
                final byte b = local.get(ValueLayout.JAVA_BYTE, j);
                if (b == Pattern.at(base + j, round, seed)) {
                    lastGood = base + j;
                } else {
                    bad++;
                    if (first < 0) {
                        first = base + j;
                    }
                    if (b == Pattern.at(base + j, round - 1, seed)) {
                        prev++;
                    }
                }
            }
        }
        return new long[] {bad, first, lastGood + 1, prev};
    }
}
