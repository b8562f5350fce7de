/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.gpu.Bar1ExhaustedException;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.sim.SimDeviceBuffer;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * B5: the software NIC reads and writes GPU memory itself (GPUDirect RDMA, on a simulated GPU through its BAR1
 * aperture and visibility model), next to the host-bounce path (pinned staging + a GPU copy). Byte-exact both ways.
 */
class GdrDataPathTest {
    private static final int SIZE = (1 << 20) + 4097;

    private static SimGpu gpu(final SimPreset preset, final long seed) {
        return SimGpu.create(preset, SimGpuConfig.deterministic(seed, new ManualClock(0)));
    }

    private static void write(final Fixture f, final MemorySegment src, final MemoryRegion srcMr, final long srcOff,
                              final long remote, final int rkey, final int len) {
        f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .sge(srcMr, srcOff, len).remote(remote, rkey));
        f.awaitSuccess(f.a.scq, "RDMA WRITE into GPU memory");
    }

    @Test
    void ownerOrderingWritesAreVisibleToTheOwnerAtCompletion() {
        try (Fixture f = new Fixture(new SoftNicContext(), 2L * SIZE); SimGpu gpu = gpu(SimPreset.H200, 7)) {
            final DeviceBuffer buf = gpu.alloc(SIZE);
            try (GpuDmaMemory dma = new GpuDmaMemory(gpu, buf)) {
                final MemoryRegion mr = f.b.pd.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                assertEquals(buf.address(), mr.address());
                assertEquals(dma, mr.dma());
                Fixture.fill(f.a.buf.asSlice(0, SIZE), 1);
                write(f, f.a.buf, f.a.mr, 0, mr.address(), mr.rkey(), SIZE);
                // OWNER: landed in order before the completion was reported, without any flush
                assertEquals(0, gpu.postedWrites().pendingLanding());
                Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), ((SimDeviceBuffer) buf).memory(), "landed GPU memory");
                // the NIC reads GPU memory too (RDMA READ of it into host memory)
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(f.a.mr, SIZE, SIZE).remote(mr.address(), mr.rkey()));
                assertEquals(WcOpcode.RDMA_READ, f.awaitSuccess(f.a.scq, "READ of GPU memory").opcode);
                Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), f.a.buf.asSlice(SIZE, SIZE), "read back");
                mr.deregister();
            }
            assertEquals(0, gpu.dmaTarget().bar1MappedBytes(), "closing the mapping returns the aperture");
        }
    }

    @Test
    void orderingNoneLeavesWritesPostedUntilSomethingOrdersThem() {
        try (Fixture f = new Fixture(new SoftNicContext(), 2L * SIZE); SimGpu gpu = gpu(SimPreset.V100, 3)) {
            final DeviceBuffer buf = gpu.alloc(SIZE);
            try (GpuDmaMemory dma = new GpuDmaMemory(gpu, buf)) {
                final MemoryRegion mr = f.b.pd.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                Fixture.fill(f.a.buf.asSlice(0, SIZE), 2);
                write(f, f.a.buf, f.a.mr, 0, mr.address(), mr.rkey(), SIZE);
                final long pending = gpu.postedWrites().pendingLanding();
                assertTrue(pending > 0, "NONE: writes still posted after the completion (" + pending + " chunks)");
                // a copy the CPU issues after it saw the completion is ordered behind the writes: exact
                final MemorySegment host = f.arena.allocate(SIZE);
                gpu.copyDtoH(host, 0, buf, 0, SIZE);
                Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), host, "D2H copy after completion");
            }
        }
    }

    @Test
    void anRdmaReadOfTheBufferFlushesPostedWrites() {
        try (Fixture f = new Fixture(new SoftNicContext(), 2L * SIZE); SimGpu gpu = gpu(SimPreset.V100, 5)) {
            final DeviceBuffer buf = gpu.alloc(SIZE);
            try (GpuDmaMemory dma = new GpuDmaMemory(gpu, buf)) {
                final MemoryRegion mr = f.b.pd.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                Fixture.fill(f.a.buf.asSlice(0, SIZE), 3);
                write(f, f.a.buf, f.a.mr, 0, mr.address(), mr.rkey(), SIZE);
                assertTrue(gpu.postedWrites().pendingLanding() > 0);
                // the 1-byte loopback-style READ that NCCL's flush does: a read on the same path
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(f.a.mr, SIZE, 1).remote(mr.address(), mr.rkey()));
                f.awaitSuccess(f.a.scq, "1-byte READ");
                assertEquals(0, gpu.postedWrites().pendingLanding(), "the READ landed every earlier write");
                Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), ((SimDeviceBuffer) buf).memory(), "landed");
            }
        }
    }

    @Test
    void gpuMemoryAsLocalBufferAndAtomics() {
        try (Fixture f = new Fixture(new SoftNicContext(), 2L * SIZE); SimGpu gpu = gpu(SimPreset.H200, 9)) {
            final DeviceBuffer src = gpu.alloc(SIZE);
            try (GpuDmaMemory dma = new GpuDmaMemory(gpu, src)) {
                final MemoryRegion mr = f.a.pd.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                final MemorySegment pattern = f.arena.allocate(SIZE);
                Fixture.fill(pattern, 4);
                gpu.copyHtoD(src, 0, pattern, 0, SIZE);
                // a WRITE whose source SGE is GPU memory (the NIC reads the GPU), into host memory on b
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(mr, 0, SIZE).remote(f.b.mr.address(), f.b.mr.rkey()));
                f.awaitSuccess(f.a.scq, "WRITE from GPU memory");
                Fixture.assertBytes(pattern, f.b.buf.asSlice(0, SIZE), "GPU -> remote host");
                // atomics executed on GPU memory by the responder
                final MemoryRegion bmr = f.b.pd.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                final long word = bmr.address() + 64;
                final long before = pattern.get(ValueLayout.JAVA_LONG, 64);
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                    .sge(f.a.mr, 0, 8).remote(word, bmr.rkey()).atomic(5, 0));
                f.awaitSuccess(f.a.scq, "FETCH_ADD on GPU memory");
                assertEquals(before, f.a.buf.get(ValueLayout.JAVA_LONG, 0));
                final MemorySegment w = f.arena.allocate(8);
                gpu.copyDtoH(w, 0, src, 64, 8);
                assertEquals(before + 5, w.get(ValueLayout.JAVA_LONG, 0));
            }
        }
    }

    /**
     * A WRITE whose source is simulated GPU memory goes by reference (one copy, by the responder, out of the
     * buffer's CPU view), and that read is still a NIC read on the GPU's path: NIC writes posted into the buffer
     * before it land first, so the bytes that leave are the new ones. The copy path gives the same bytes.
     */
    @Test
    void aWriteFromSimulatedGpuMemoryIsReferencedAndReadsBehindPostedWrites() {
        for (final boolean oneCopy : new boolean[] {true, false}) {
            try (Fixture f = new Fixture(new SoftNicContext().oneCopyMin(1).oneCopy(oneCopy), 2L * SIZE);
                 SimGpu gpu = gpu(SimPreset.V100, 13)) {
                final DeviceBuffer buf = gpu.alloc(SIZE);
                final GpuDmaMemory dma = new GpuDmaMemory(gpu, buf);
                final MemorySegment view = dma.cpuView();
                assertEquals(((SimDeviceBuffer) buf).memory().address(), view.address());
                assertEquals(SIZE, view.byteSize());
                final MemoryRegion into = f.b.pd.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                final MemoryRegion from = f.a.pd.registerMr(dma, AccessFlags.LOCAL_WRITE);
                Fixture.fill(f.a.buf.asSlice(0, SIZE), 21);
                write(f, f.a.buf, f.a.mr, 0, into.address(), into.rkey(), SIZE);
                // ordering NONE, no drain: the bytes are still posted, device memory holds zeros
                assertTrue(gpu.postedWrites().pendingLanding() > 0, "writes posted");
                final long before = f.b.dev.responder.referencedPackets();
                write(f, view, from, 0, f.b.mr.address() + SIZE, f.b.mr.rkey(), SIZE);
                assertEquals(0, gpu.postedWrites().pendingLanding(), "the read landed every earlier write");
                Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), f.b.buf.asSlice(SIZE, SIZE), "GPU -> host, oneCopy "
                    + oneCopy);
                final long referenced = f.b.dev.responder.referencedPackets() - before;
                assertEquals(oneCopy, referenced > 0, "packets referenced: " + referenced);
                into.deregister();
                from.deregister();
                dma.close();
                assertFalse(dma.readFence(), "a closed mapping cannot be read");
            }
        }
    }

    @Test
    void hostBounceMatchesTheDirectPath() {
        try (Fixture f = new Fixture(new SoftNicContext(), 2L * SIZE); SimGpu gpu = gpu(SimPreset.H200, 11)) {
            final DeviceBuffer direct = gpu.alloc(SIZE);
            final DeviceBuffer bounced = gpu.alloc(SIZE);
            final MemorySegment staging = gpu.allocHost(SIZE);
            final MemoryRegion stagingMr = f.b.pd.registerMr(staging, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            try (GpuDmaMemory dma = new GpuDmaMemory(gpu, direct)) {
                final MemoryRegion mr = f.b.pd.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                Fixture.fill(f.a.buf.asSlice(0, SIZE), 6);
                write(f, f.a.buf, f.a.mr, 0, mr.address(), mr.rkey(), SIZE);
                write(f, f.a.buf, f.a.mr, 0, stagingMr.address(), stagingMr.rkey(), SIZE);
                gpu.copyHtoD(bounced, 0, staging, 0, SIZE); // the bounce: pinned staging, then a GPU copy
                final MemorySegment a = f.arena.allocate(SIZE);
                final MemorySegment b = f.arena.allocate(SIZE);
                gpu.copyDtoH(a, 0, direct, 0, SIZE);
                gpu.copyDtoH(b, 0, bounced, 0, SIZE);
                Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), a, "direct (GDR)");
                Fixture.assertBytes(f.a.buf.asSlice(0, SIZE), b, "host bounce");
            }
        }
    }

    @Test
    void bar1ExhaustionIsAClearRegistrationError() {
        try (SimGpu gpu = gpu(SimPreset.H200.withBar1(1 << 20), 1)) {
            final DeviceBuffer big = gpu.alloc(2 << 20);
            final Bar1ExhaustedException e = assertThrows(Bar1ExhaustedException.class,
                () -> new GpuDmaMemory(gpu, big));
            assertTrue(e.getMessage().contains("BAR1"), e.getMessage());
        }
    }
}
