/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.NicWriteCounters;
import io.gdrkit.gpu.cuda.CudaDriver;
import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.labs.perf.Loopback;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
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

import static io.gdrkit.cli.NicStagingProbe.check;
import static io.gdrkit.cli.NicStagingProbe.fill;
import static io.gdrkit.cli.NicStagingProbe.raw;

/**
 * Child-JVM main for {@link CudaNicDirectTest}: the software NIC writes from a requester's buffer in host memory
 * (pinned for the GPU through the loopback's host pinner, {@code cuMemHostRegister}) into "GPU" memory of the libcuda
 * test double in its deferred mode (FAKECUDA_DEFER=1: a host-to-device copy reads its source only when it lands, at a
 * synchronisation point). The device memory is read behind the driver's back when each completion is polled, and the
 * source is overwritten right after: a copy that had not landed by the completion, or that ran again later, shows up
 * as a mismatch. Prints one line per check and the NIC's counters; exit 0 when all pass.
 *
 * <p>{@code direct} (default): the pins succeed and the writes of 1 KiB or more are direct. {@code refused} (run with
 * FAKECUDA_HOSTREGISTER=refuse): every pin is refused, the writes are staged, and the reason is reported.
 * {@code agent} (with gdrkit.cuda.agent=on): the direct spans go to the copy engine in order with the agent's
 * deliveries of the staged ones.
 */
public final class NicDirectProbe {
    private static final long MIB = 1 << 20;
    private static final long BUF = 8 * MIB;
    private static MethodHandle hazards;
    private static MethodHandle holdEvents;
    private static MethodHandle unregister;

    private NicDirectProbe() {
    }

    public static void main(final String[] args) {
        final boolean refused = args.length > 0 && args[0].equals("refused");
        // agent: the delivery agent on (gdrkit.cuda.agent=on); its fences wait on words, not events, so the
        // deregistration case (which holds events back) is left to the other modes
        final boolean agent = args.length > 0 && args[0].equals("agent");
        final SymbolLookup fake = SymbolLookup.libraryLookup(Path.of(System.getProperty(CudaDriver.LIBRARY_PROPERTY)),
            Arena.global());
        hazards = Linker.nativeLinker().downcallHandle(fake.find("fakecuda_hazards").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        holdEvents = Linker.nativeLinker().downcallHandle(fake.find("fakecuda_hold_events").orElseThrow(),
            FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT));
        unregister = Linker.nativeLinker().downcallHandle(fake.find("cuMemHostUnregister").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
        int failures = 0;
        try (CudaGpu gpu = CudaGpu.open(0)) {
            if (!refused && !agent) {
                failures += hazardControl(gpu);
                failures += readsIntoPinnedMemory(gpu);
            }
            final long hazardsBefore = hazard(0) + hazard(1);
            final NicWriteCounters before = gpu.nicWriteCounters();
            long pinnedAt = 0;
            try (Loopback lb = new Loopback(SoftNicContext.ProgressMode.INVOKER, 1, BUF, 64, 64, 0, 4096, null, gpu,
                true)) {
                pinnedAt = lb.a.buf.address();
                System.out.println("requester buffer pinned: " + gpu.isPinned(pinnedAt, lb.a.buf.byteSize()));
                failures += writes(lb, gpu);
                final NicWriteCounters c = gpu.nicWriteCounters().since(before);
                System.out.println("counters: staged " + c.stagedBytes() + " B, direct " + c.directBytes() + " B in "
                    + c.directSpans() + " spans, pins " + c.pins() + ", refused " + c.pinsRefused());
                if (!refused && !agent) {
                    failures += deregisterInFlight(lb, gpu);
                }
            }
            System.out.println("requester buffer pinned after the loopback closed: " + gpu.isPinned(pinnedAt, 1));
            final long h = hazard(0) + hazard(1) - hazardsBefore;
            System.out.println("hazards: " + h + " (a copy from host memory unregistered before it ran)");
            failures += h == 0 ? 0 : 1;
            System.out.println(gpu.nicStats());
        }
        System.out.println(failures == 0 ? "all checks passed" : failures + " checks failed");
        System.exit(failures == 0 ? 0 : 1);
    }

    /**
     * The double catches the hazard: a direct copy queued from a pinned range, the range unregistered behind the
     * device's back before the copy ran, counts once at the unregistration and once when the copy runs.
     */
    private static int hazardControl(final CudaGpu gpu) {
        final DeviceBuffer b = gpu.alloc(64 * 1024);
        try (Arena arena = Arena.ofConfined(); GpuDmaMemory m = new GpuDmaMemory(gpu, b)) {
            final MemorySegment src = arena.allocate(64 * 1024, 4096);
            fill(src, 5);
            final Runnable unpin = gpu.nicPinHost(src);
            final long h0 = hazard(0);
            final long h1 = hazard(1);
            m.dmaWriteHeldSource(0, src, 0, 64 * 1024);
            m.completionFenceStart(); // issued, not landed (deferred)
            final int rc = (int) unregister.invokeExact(src);
            m.completionFence();
            final long seen = hazard(0) - h0 + hazard(1) - h1;
            System.out.println("hazard control: unregistered under a queued direct copy (rc " + rc + "), hazards "
                + seen);
            if (unpin != null) {
                unpin.run(); // its cuMemHostUnregister now finds nothing: recorded, not thrown
            }
            return unpin != null && rc == 0 && seen == 2 ? 0 : 1;
        } catch (final Throwable t) {
            throw new IllegalStateException(t);
        } finally {
            gpu.free(b);
        }
    }

    /**
     * NIC reads out of the GPU into host memory pinned for the NIC: two land there directly (the second from the
     * remembered range), and once the memory is unpinned the next one goes through staging; each byte-exact.
     */
    private static int readsIntoPinnedMemory(final CudaGpu gpu) {
        final int n = 64 * 1024;
        final DeviceBuffer b = gpu.alloc(n);
        try (Arena arena = Arena.ofConfined(); GpuDmaMemory m = new GpuDmaMemory(gpu, b)) {
            final MemorySegment src = arena.allocate(n, 4096);
            fill(src, 11);
            m.dmaWrite(0, src, 0, n);
            m.completionFence();
            final MemorySegment dst = arena.allocate(n, 4096);
            final Runnable unpin = gpu.nicPinHost(dst);
            final String before = gpu.nicStats();
            int wrong = 0;
            for (int i = 0; i < 3; i++) {
                if (i == 2 && unpin != null) {
                    unpin.run();
                }
                dst.fill((byte) 0);
                m.dmaRead(0, dst, 0, n);
                wrong += dst.mismatch(src) == -1 ? 0 : 1;
            }
            final String after = gpu.nicStats();
            System.out.println("reads into pinned memory: pinned " + (unpin != null) + ", wrong " + wrong + "; before: "
                + readLine(before) + "; after: " + readLine(after));
            return unpin != null && wrong == 0 ? 0 : 1;
        } catch (final RuntimeException e) {
            throw e;
        } finally {
            gpu.free(b);
        }
    }

    private static String readLine(final String stats) {
        final int at = stats.indexOf("NIC reads: ");
        return at < 0 ? "(no NIC reads line)" : stats.substring(at, stats.indexOf(" through staging", at)
            + " through staging".length());
    }

    /**
     * WRITEs of several sizes, each checked at its completion, the source then overwritten and checked again after a
     * fence; then 24 x 1 MiB in flight at once.
     */
    private static int writes(final Loopback lb, final CudaGpu gpu) {
        int failures = 0;
        final long[] sizes = {17, 4096, 4097, 300_000, MIB, 3 * MIB + 5};
        long seed = 1;
        for (final long size : sizes) {
            final MemorySegment src = lb.a.buf.asSlice(0, size);
            fill(src, seed);
            final MemorySegment expected = Arena.ofAuto().allocate(size);
            expected.copyFrom(src);
            post(lb, 1, 0, size, lb.b.mr.address(), true);
            NicStagingProbe.await(lb, lb.a, 1, "WRITE " + size);
            failures += check("WRITE " + size + " B", expected, raw(lb.b.mr.address(), size));
            fill(src, 1000 + seed); // the application reuses its buffer at the completion
            gpu.nicCompletionFence();
            failures += check("WRITE " + size + " B, source reused after its completion", expected,
                raw(lb.b.mr.address(), size));
            seed++;
        }
        for (int i = 0; i < 8; i++) {
            fill(lb.a.buf.asSlice(i * MIB, MIB), 100 + i);
        }
        for (int i = 0; i < 24; i++) {
            final long off = (i % 8) * MIB;
            post(lb, 10 + i, off, MIB, lb.b.mr.address() + off, true);
        }
        NicStagingProbe.await(lb, lb.a, 24, "24 WRITEs in flight");
        failures += check("24 x 1 MiB WRITE in flight", raw(lb.a.buf.address(), BUF), raw(lb.b.mr.address(), BUF));
        return failures;
    }

    /**
     * The requester deregisters its MR while direct copies from it are issued but not landed (the double's events
     * held, so no ACK leaves): the deregistration's unpin fences first, so no copy runs from unpinned memory; the WR
     * then completes with a named status (SUCCESS if every packet had been placed, else LOC_PROT_ERR for the
     * packets its dead lkey could no longer send), never a crash or a hang.
     */
    private static int deregisterInFlight(final Loopback lb, final CudaGpu gpu) {
        final long size = 4 * MIB;
        fill(lb.a.buf.asSlice(0, size), 77);
        final NicWriteCounters before = gpu.nicWriteCounters();
        final WorkCompletion[] wc = {new WorkCompletion()};
        int early = 0;
        try {
            holdEvents.invokeExact(1);
            post(lb, 40, 0, size, lb.b.mr.address(), true);
            for (int i = 0; i < 400; i++) {
                lb.progress();
                early += lb.a.scq.poll(wc);
            }
            final long inFlight = gpu.nicWriteCounters().since(before).directBytes();
            final long h = hazard(0);
            lb.a.mr.deregister();
            System.out.println("deregistered with " + inFlight + " B of direct copies issued, none acknowledged ("
                + early + " completions); hazards at the unpin " + (hazard(0) - h) + "; still pinned "
                + gpu.isPinned(lb.a.buf.address(), size));
            holdEvents.invokeExact(0);
        } catch (final Throwable t) {
            throw new IllegalStateException(t);
        }
        final long deadline = System.nanoTime() + 60_000_000_000L;
        while (lb.a.scq.poll(wc) == 0) {
            lb.progress();
            if (System.nanoTime() > deadline) {
                System.out.println("deregistered in flight: no completion in 60 s");
                return 1;
            }
        }
        final boolean named = wc[0].status == WcStatus.SUCCESS || wc[0].status == WcStatus.LOC_PROT_ERR
            || wc[0].status == WcStatus.WR_FLUSH_ERR;
        System.out.println("deregistered in flight: the WRITE completed with " + WcStatus.name(wc[0].status));
        return early == 0 && named ? 0 : 1;
    }

    private static void post(final Loopback lb, final long wrId, final long off, final long size, final long remote,
                             final boolean signaled) {
        lb.a.qps[0].postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(wrId)
            .flags(signaled ? SendFlags.SIGNALED : 0).sge(lb.a.mr, off, (int) size).remote(remote, lb.b.mr.rkey()));
    }

    private static long hazard(final int which) {
        try {
            return (long) hazards.invokeExact(which);
        } catch (final Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
