/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.examples;

import io.gdrkit.shmem.Cmp;
import io.gdrkit.shmem.ShmemContext;
import io.gdrkit.shmem.ShmemMode;
import io.gdrkit.shmem.ShmemWorld;
import io.gdrkit.shmem.SignalOp;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * A shmem put-with-signal around a ring of 4 PEs (threads of this JVM, each with a simulated GPU and a software
 * NIC): every PE allocates the same symmetric buffers, puts 4 KiB into its right neighbour's heap together with a
 * signal, and waits for its own signal before reading what its left neighbour put. The signal arrives after the
 * data on one connection, so the data is complete when the wait returns.
 */
public final class ShmemPutSignal {
    private ShmemPutSignal() {
    }

    public static void main(final String[] args) {
        final int n = 4;
        final List<Boolean> ok = ShmemWorld.run(new ShmemContext().nPes(n).mode(ShmemMode.IBRC).heapBytes(1 << 20),
            pe -> {
                final long src = pe.malloc(4096);
                final long dst = pe.malloc(4096);
                final long sig = pe.malloc(8);
                pe.write(src, MemorySegment.ofArray(pattern(pe.myPe())));
                pe.barrierAll(); // every PE's buffers exist before anyone puts
                final int right = (pe.myPe() + 1) % n;
                final int left = (pe.myPe() + n - 1) % n;
                pe.putSignal(dst, src, 4096, sig, 1, SignalOp.SET, right);
                pe.signalWaitUntil(sig, Cmp.EQ, 1);
                final boolean same = Arrays.equals(pattern(left), pe.read(dst, 4096));
                pe.barrierAll();
                return same;
            });
        if (ok.contains(false)) {
            throw new IllegalStateException("a PE read other data than its neighbour put: " + ok);
        }
        System.out.println("put-with-signal around " + n + " PEs: every PE read its neighbour's 4096 bytes "
            + "(simulated GPUs and software NICs)");
    }

    private static byte[] pattern(final int pe) {
        final byte[] b = new byte[4096];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (pe * 37 + i * 7);
        }
        return b;
    }
}
