/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.cuda.CudaDriver;
import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * Child-JVM main for {@link CudaAgentTest}: the software NIC delivering into "GPU" memory of the fake libcuda through
 * the delivery agent ({@code gdrkit.cuda.agent=on}), which the fake plays with a host thread over the same ring. One
 * mode per run (the first argument):
 * <ul>
 *   <li>{@code deliver}: WRITEs, READs and a SEND through the NIC checked byte by byte at their completions (the
 *   fake agent is slowed down, so a completion raised before its delivery shows up); 3000 scattered 64-byte writes,
 *   which wrap the ring almost three times and each carry FENCE; writes of 1 to 97 bytes at every alignment (up to
 *   96 carried in their descriptors); a free of device memory pauses the agent and the next write starts it again;
 *   then the fake's counters.</li>
 *   <li>{@code error}: one write and a fence under a misbehaving agent (FAKECUDA_AGENT), then a second fence:
 *   prints the named errors of both.</li>
 *   <li>{@code fatal}: an RDMA WRITE through the NIC under a stalled agent: prints what the poller sees.</li>
 * </ul>
 */
public final class AgentProbe {
    private static final long MIB = 1 << 20;
    private static final long BUF = 8 * MIB;

    private AgentProbe() {
    }

    public static void main(final String[] args) throws Throwable {
        switch (args[0]) {
            case "deliver" -> deliver();
            case "error" -> error();
            case "fatal" -> fatal();
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    private static void deliver() throws Throwable {
        int failures = 0;
        try (CudaGpu gpu = CudaGpu.open(0)) {
            try (Loopback lb = new Loopback(SoftNicContext.ProgressMode.INVOKER, 1, BUF, 64, 64, 0, 4096, null,
                gpu)) {
                failures += NicStagingProbe.writes(lb);
                failures += NicStagingProbe.reads(lb);
                failures += NicStagingProbe.sends(lb);
            }
            failures += scattered(gpu);
            failures += smallSizes(gpu);
            failures += pauseAndRestart(gpu);
            System.out.println(gpu.nicStats());
        }
        System.out.println("fake agent: descriptors " + count(0) + ", fenced " + count(1) + ", stops " + count(3)
            + ", launches " + count(4) + ", bytes " + count(5) + ", inline " + count(7));
        System.out.println(failures == 0 ? "all checks passed" : failures + " checks failed");
        System.exit(failures == 0 ? 0 : 1);
    }

    /** 3000 writes of 64 bytes at scattered offsets (none continues the one before), then one fence. */
    private static int scattered(final CudaGpu gpu) {
        final int n = 3000;
        final long size = 1 << 20;
        final DeviceBuffer b = gpu.alloc(size);
        final long fencedBefore = count(1);
        try (GpuDmaMemory m = new GpuDmaMemory(gpu, b)) {
            final MemorySegment raw = NicStagingProbe.raw(b.address(), size);
            raw.fill((byte) 0);
            final MemorySegment src = Arena.ofAuto().allocate(64L * n);
            NicStagingProbe.fill(src, 31);
            final MemorySegment expect = Arena.ofAuto().allocate(size);
            for (int i = 0; i < n; i++) {
                final long off = (i * 7919L % (size / 128)) * 128; // a permutation of 128-byte places
                m.dmaWrite(off, src, 64L * i, 64);
                MemorySegment.copy(src, 64L * i, expect, off, 64);
            }
            m.completionFence();
            final int bad = NicStagingProbe.check("3000 scattered 64 B writes (the ring wraps)", expect, raw);
            final long fenced = count(1) - fencedBefore;
            System.out.println("scattered: " + fenced + " of " + n + " descriptors fenced");
            return bad + (fenced >= n - 1 || !agentOn() ? 0 : 1);
        } finally {
            gpu.free(b);
        }
    }

    /**
     * Writes of every size from 1 to 97 bytes at every alignment modulo 16, none continuing the one before: up to
     * {@code AgentRing.INLINE_MAX} (96) each rides in its descriptor, 97 is staged and copied.
     */
    private static int smallSizes(final CudaGpu gpu) {
        final long size = 64 * 1024;
        final DeviceBuffer b = gpu.alloc(size);
        final long inlineBefore = count(7);
        try (GpuDmaMemory m = new GpuDmaMemory(gpu, b)) {
            final MemorySegment raw = NicStagingProbe.raw(b.address(), size);
            raw.fill((byte) 0);
            final MemorySegment src = Arena.ofAuto().allocate(size);
            NicStagingProbe.fill(src, 97);
            final MemorySegment expect = Arena.ofAuto().allocate(size);
            for (int len = 1; len <= 97; len++) {
                final long off = len * 512L + len % 16; // 512 apart: no write continues another
                m.dmaWrite(off, src, off ^ 5, len);
                MemorySegment.copy(src, off ^ 5, expect, off, len);
            }
            m.completionFence();
            final int bad = NicStagingProbe.check("97 writes of 1 to 97 B", expect, raw);
            final long inline = count(7) - inlineBefore;
            System.out.println("small: " + inline + " of 97 writes inline");
            return bad + (inline == 96 || !agentOn() ? 0 : 1);
        } finally {
            gpu.free(b);
        }
    }

    /** A free pauses the agent (cuMemFree may wait for running kernels); the next write starts it again. */
    private static int pauseAndRestart(final CudaGpu gpu) {
        final long launches = count(4);
        final long stops = count(3);
        final DeviceBuffer scratch = gpu.alloc(4096);
        final DeviceBuffer b = gpu.alloc(64 * 1024);
        try (GpuDmaMemory m = new GpuDmaMemory(gpu, b)) {
            final MemorySegment src = Arena.ofAuto().allocate(64 * 1024);
            NicStagingProbe.fill(src, 5);
            m.dmaWrite(0, src, 0, 32 * 1024);
            gpu.free(scratch); // the agent stops here, with the write above complete
            m.dmaWrite(32 * 1024, src, 32 * 1024, 32 * 1024);
            m.completionFence();
            final int bad = NicStagingProbe.check("a write after a pause", src, NicStagingProbe.raw(b.address(),
                64 * 1024));
            System.out.println("pause: stops " + (count(3) - stops) + ", launches " + (count(4) - launches));
            return bad + (count(3) - stops >= 1 && count(4) - launches >= 1 || !agentOn() ? 0 : 1);
        } finally {
            gpu.free(b);
        }
    }

    private static void error() {
        try (CudaGpu gpu = CudaGpu.open(0)) {
            final DeviceBuffer b = gpu.alloc(64 * 1024);
            try (GpuDmaMemory m = new GpuDmaMemory(gpu, b)) {
                final MemorySegment src = Arena.ofAuto().allocate(4096);
                for (int i = 0; i < 2; i++) {
                    try {
                        m.dmaWrite(0, src, 0, 4096);
                        m.completionFence();
                        System.out.println("fence " + i + ": no error");
                    } catch (final GpuException e) {
                        System.out.println("fence " + i + ": " + e.errorName() + ": " + e.getMessage());
                    }
                }
            }
        }
        System.exit(0);
    }

    private static void fatal() {
        try (CudaGpu gpu = CudaGpu.open(0);
             Loopback lb = new Loopback(SoftNicContext.ProgressMode.INVOKER, 1, BUF, 64, 64, 0, 4096, null, gpu)) {
            NicStagingProbe.post(lb, WrOpcode.RDMA_WRITE, 1, 0, MIB, lb.b.mr.address(), lb.b.mr.rkey(), true);
            final WorkCompletion[] wc = {new WorkCompletion()};
            final long deadline = System.nanoTime() + 60_000_000_000L;
            while (System.nanoTime() < deadline) {
                try {
                    lb.progress();
                    if (lb.a.scq.poll(wc) == 1) {
                        System.out.println("requester: completion status " + wc[0].status);
                    }
                    lb.b.rcq.poll(wc); // the responder's device (the GPU memory's) is the one that fails
                } catch (final RuntimeException e) {
                    System.out.println("poll: " + e.getMessage());
                    System.exit(0);
                }
            }
            System.out.println("nothing failed within 60 s");
        }
        System.exit(1);
    }

    /** Whether this run delivers through the agent (the probe also runs with it off, as the control). */
    private static boolean agentOn() {
        return !"off".equals(System.getProperty("gdrkit.cuda.agent"));
    }

    private static long count(final int which) {
        try {
            return (long) COUNT.invokeExact(which);
        } catch (final Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static final MethodHandle COUNT = Linker.nativeLinker().downcallHandle(
        SymbolLookup.libraryLookup(Path.of(System.getProperty(CudaDriver.LIBRARY_PROPERTY)), Arena.global())
            .find("fakecuda_agent_count").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT));
}
