/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;

import io.gdrkit.gpu.cuda.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.lang.foreign.ValueLayout;

/**
 * Child-JVM main for {@link CudaNicStagingTest}: runs the software NIC into and out of "GPU" memory of the fake
 * libcuda in its deferred mode (FAKECUDA_DEFER=1: host-to-device copies land only at a synchronisation point) and
 * compares the device memory itself, read behind the driver's back, at the moment each completion is polled. A
 * completion raised before its copies landed shows up as a mismatch. Prints one line per check; exit 0 when all
 * pass, 1 on a mismatch, 2 on a timeout.
 */
public final class NicStagingProbe {
    private static final long MIB = 1 << 20;
    private static final long BUF = 8 * MIB;

    private NicStagingProbe() {
    }

    public static void main(final String[] args) {
        int failures = 0;
        try (CudaGpu gpu = CudaGpu.open(0)) {
            failures += control(gpu);
            failures += pinned(gpu);
            try (Loopback lb = new Loopback(SoftNicContext.ProgressMode.INVOKER, 1, BUF, 64, 64, 0, 4096, null,
                gpu)) {
                failures += heldEvent(lb);
                failures += writes(lb);
                failures += reads(lb);
                failures += sends(lb);
            }
            System.out.println(gpu.nicStats());
        }
        System.out.println(failures == 0 ? "all checks passed" : failures + " checks failed");
        System.exit(failures == 0 ? 0 : 1);
    }

    /**
     * {@link CudaGpu#isPinned}, the one record of pinned memory (mapHost and the NIC's reads ask it): a range wholly
     * inside a live allocHost allocation is pinned; one reaching past either end, a negative length, device memory
     * and a freed allocation are not; the NIC's read-ahead buffers are pinned through the same record.
     */
    private static int pinned(final CudaGpu gpu) {
        final long n = 8192;
        final MemorySegment p = gpu.allocHost(n);
        final long a = p.address();
        final DeviceBuffer dev = gpu.alloc(4096);
        final MemorySegment rb = gpu.nicReadBuffer(4096);
        final boolean[][] cases = {
            {gpu.isPinned(a, n), true}, {gpu.isPinned(a + 4096, 4096), true}, {gpu.isPinned(a + 100, 1), true},
            {gpu.isPinned(a, 0), true},
            {gpu.isPinned(a + 4096, 4097), false}, {gpu.isPinned(a - 1, 2), false}, {gpu.isPinned(a - 1, 1), false},
            {gpu.isPinned(a + 1, Long.MAX_VALUE), false}, {gpu.isPinned(a, -1), false},
            {gpu.isPinned(dev.address(), 64), false},
            {gpu.isPinned(rb.address(), 4096), true}, {gpu.isPinned(rb.address() + 1, 4096), false},
        };
        gpu.free(dev);
        gpu.freeHost(p);
        final boolean forgotten = !gpu.isPinned(a, n) && !gpu.isPinned(a + 100, 1);
        int wrong = 0;
        for (int i = 0; i < cases.length; i++) {
            if (cases[i][0] != cases[i][1]) {
                System.out.println("isPinned case " + i + ": " + cases[i][0] + ", expected " + cases[i][1]);
                wrong++;
            }
        }
        System.out.println("isPinned: " + (cases.length - wrong) + " of " + cases.length + " ranges right, freed "
            + "allocation forgotten " + forgotten);
        return wrong + (forgotten ? 0 : 1);
    }

    /** The fake defers for real: a posted write is not in memory before the fence, and is after it. */
    private static int control(final CudaGpu gpu) {
        final DeviceBuffer b = gpu.alloc(64 * 1024);
        try (GpuDmaMemory m = new GpuDmaMemory(gpu, b)) {
            final MemorySegment raw = raw(b.address(), 64 * 1024);
            raw.fill((byte) 0);
            final MemorySegment src = java.lang.foreign.Arena.ofAuto().allocate(64 * 1024);
            fill(src, 99);
            m.dmaWrite(0, src, 0, 64 * 1024);
            final boolean before = raw.mismatch(src) == -1;
            final long token = m.completionFenceStart();
            boolean done = false;
            for (int i = 0; i < 10 && !done; i++) {
                done = m.completionFenceDone(token);
            }
            final boolean after = raw.mismatch(src) == -1;
            System.out.println("control: landed before the fence " + before + ", after the fence " + after
                + " (fence done " + done + ")");
            return !before && after && done ? 0 : 1;
        } finally {
            gpu.free(b);
        }
    }

    /**
     * The completion waits for the copy's event: with every event query answering NOT_READY (the fake's
     * {@code fakecuda_hold_events}), a 1 MiB WRITE (4 AckReqs, the last one completing it) raises no completion in
     * 2000 duty cycles; released, it completes, byte-exact.
     */
    private static int heldEvent(final Loopback lb) {
        final MethodHandle hold = Linker.nativeLinker().downcallHandle(
            SymbolLookup.libraryLookup(Path.of(System.getProperty(CudaDriver.LIBRARY_PROPERTY)), Arena.global())
                .find("fakecuda_hold_events").orElseThrow(), FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT));
        final long size = MIB;
        fill(raw(lb.a.mr.address(), size), 4242);
        final WorkCompletion[] wc = {new WorkCompletion()};
        int early = 0;
        try {
            hold.invokeExact(1);
            post(lb, WrOpcode.RDMA_WRITE, 7, 0, size, lb.b.mr.address(), lb.b.mr.rkey(), true);
            for (int i = 0; i < 2000; i++) {
                lb.progress();
                early += lb.a.scq.poll(wc);
            }
            hold.invokeExact(0);
        } catch (final Throwable t) {
            throw new IllegalStateException(t);
        }
        System.out.println("held event: " + early + " completion(s) before the copy's event reported done");
        if (early == 0 && !await(lb, lb.a, 1, "WRITE after the event")) {
            return 1;
        }
        return (early == 0 ? 0 : 1) + check("WRITE 1048576 B after a held event", raw(lb.a.mr.address(), size),
            raw(lb.b.mr.address(), size));
    }

    /** WRITEs of several sizes, then 24 x 1 MiB in flight at once (the 16 MiB staging ring wraps). */
    static int writes(final Loopback lb) {
        int failures = 0;
        final long[] sizes = {17, 4096, 4097, 300_000, MIB, 3 * MIB + 5};
        long seed = 1;
        for (final long size : sizes) {
            fill(raw(lb.a.mr.address(), size), seed);
            post(lb, WrOpcode.RDMA_WRITE, 1, 0, size, lb.b.mr.address(), lb.b.mr.rkey(), true);
            if (!await(lb, lb.a, 1, "WRITE " + size)) {
                return failures + 1;
            }
            failures += check("WRITE " + size + " B", raw(lb.a.mr.address(), size), raw(lb.b.mr.address(), size));
            seed++;
        }
        for (int i = 0; i < 24; i++) {
            final long off = (i % 8) * MIB;
            fill(raw(lb.a.mr.address() + off, MIB), 100 + i);
        }
        // 24 MiB in flight through a 16 MiB staging ring; a's last fill of each MiB is what b must end with
        for (int i = 0; i < 24; i++) {
            final long off = (i % 8) * MIB;
            post(lb, WrOpcode.RDMA_WRITE, 10 + i, off, MIB, lb.b.mr.address() + off, lb.b.mr.rkey(), true);
        }
        if (!await(lb, lb.a, 24, "24 WRITEs in flight")) {
            return failures + 1;
        }
        failures += check("24 x 1 MiB WRITE in flight", raw(lb.a.mr.address(), BUF), raw(lb.b.mr.address(), BUF));
        return failures;
    }

    static int reads(final Loopback lb) {
        int failures = 0;
        final long[] sizes = {8, 4096, MIB + 3, 2 * MIB};
        long seed = 50;
        for (final long size : sizes) {
            fill(raw(lb.b.mr.address(), size), seed++);
            post(lb, WrOpcode.RDMA_READ, 2, 0, size, lb.b.mr.address(), lb.b.mr.rkey(), true);
            if (!await(lb, lb.a, 1, "READ " + size)) {
                return failures + 1;
            }
            failures += check("READ " + size + " B", raw(lb.b.mr.address(), size), raw(lb.a.mr.address(), size));
        }
        return failures;
    }

    static int sends(final Loopback lb) {
        final int size = 200_000;
        fill(raw(lb.a.mr.address(), size), 77);
        raw(lb.b.mr.address(), size).fill((byte) 0);
        lb.b.qps[0].postRecv(new RecvWorkRequest().wrId(3).sge(lb.b.mr, 0, size));
        post(lb, WrOpcode.SEND, 3, 0, size, 0, 0, true);
        if (!await(lb, lb.b, 1, "receive")) {
            return 1;
        }
        final int failures = check("SEND " + size + " B (at the receive completion)", raw(lb.a.mr.address(), size),
            raw(lb.b.mr.address(), size));
        return await(lb, lb.a, 1, "SEND") ? failures : failures + 1;
    }

    static void post(final Loopback lb, final int opcode, final long wrId, final long off, final long size,
                             final long remote, final int rkey, final boolean signaled) {
        final SendWorkRequest w = new SendWorkRequest().opcode(opcode).wrId(wrId)
            .flags(signaled ? SendFlags.SIGNALED : 0).sge(lb.a.mr, off, (int) size);
        if (opcode != WrOpcode.SEND) {
            w.remote(remote, rkey);
        }
        lb.a.qps[0].postSend(w);
    }

    /** Progresses until {@code n} completions arrived on the side's CQ (send CQ for a, receive CQ for b). */
    static boolean await(final Loopback lb, final Loopback.Side side, final int n, final String what) {
        final WorkCompletion[] wc = {new WorkCompletion()};
        final long deadline = System.nanoTime() + 60_000_000_000L;
        int got = 0;
        while (got < n) {
            lb.progress();
            if ((side == lb.a ? side.scq : side.rcq).poll(wc) == 1) {
                if (wc[0].status != WcStatus.SUCCESS) {
                    System.out.println(what + ": completion status " + wc[0].status);
                    System.exit(1);
                }
                got++;
            } else if (System.nanoTime() > deadline) {
                System.out.println("timed out after 60 s waiting for " + (n - got) + " completion(s) of " + what);
                System.exit(2);
            }
        }
        return true;
    }

    static int check(final String what, final MemorySegment expected, final MemorySegment actual) {
        final long at = expected.mismatch(actual);
        System.out.println(what + ": " + (at == -1 ? "byte-exact at completion" : "MISMATCH at byte " + at));
        return at == -1 ? 0 : 1;
    }

    @SuppressWarnings("restricted")
    static MemorySegment raw(final long address, final long size) {
        // the fake's device memory is host memory: read it without asking the driver (which would land copies)
        return MemorySegment.ofAddress(address).reinterpret(size);
    }

    static void fill(final MemorySegment seg, final long seed) {
        long x = seed;
        for (long i = 0; i < seg.byteSize(); i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) (x >>> 56));
        }
    }
}
