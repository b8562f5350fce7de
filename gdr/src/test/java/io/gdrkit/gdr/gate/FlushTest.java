/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * C10 on a V100-like simulated GPU (writes ordering NONE, cc 7.0): after the sender's WRITE completes, NIC writes are
 * still posted; the flush — a 1-byte RDMA READ on a dedicated loopback QP, or the CPU-read alternative — lands them.
 */
class FlushTest {
    private static final int SIZE = 256 * 1024;

    @Test
    void rdmaReadAndCpuReadFlushesLandPostedWrites() {
        for (final boolean rdma : new boolean[] {true, false}) {
            try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext());
                 SimGpu gpu = SimGpu.create(SimPreset.V100, SimGpuConfig.deterministic(3, new ManualClock(0)));
                 Arena arena = Arena.ofShared()) {
                final SoftDevice a = driver.addDevice("s0");
                final SoftDevice b = driver.addDevice("s1");
                final VerbsContext ca = a.open();
                final VerbsContext cb = b.open();
                final ProtectionDomain pa = ca.allocPd();
                final ProtectionDomain pb = cb.allocPd();
                final CompletionQueue cqa = ca.createCq(16);
                final CompletionQueue cqb = cb.createCq(16);
                final MemorySegment src = arena.allocate(SIZE);
                for (int i = 0; i < SIZE; i++) {
                    src.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
                }
                final MemoryRegion srcMr = pa.registerMr(src, AccessFlags.LOCAL_WRITE);
                final DeviceBuffer buf = gpu.alloc(SIZE);
                try (GpuDmaMemory dma = new GpuDmaMemory(gpu, buf); RdmaReadFlush flush = new RdmaReadFlush(cb, pb)) {
                    final MemoryRegion dst = pb.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE
                        | AccessFlags.REMOTE_READ);
                    final QueuePair qa = pa.createQp(new QpInitAttr().cqs(cqa, cqa));
                    final QueuePair qb = pb.createQp(new QpInitAttr().cqs(cqb, cqb));
                    QpBringUp.connect(qa, a.lid(), 1, qb, b.lid(), 2, QpBringUp.rcDefaults());
                    qa.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .sge(srcMr, 0, SIZE).remote(dst.address(), dst.rkey()));
                    final WorkCompletion[] wc = {new WorkCompletion()};
                    final long deadline = System.nanoTime() + 20_000_000_000L;
                    while (cqa.poll(wc) == 0) {
                        assertTrue(System.nanoTime() < deadline, "WRITE completion");
                    }
                    assertTrue(wc[0].isSuccess(), wc[0]::toString);
                    assertTrue(gpu.postedWrites().pendingLanding() > 0, "ordering NONE: still posted at completion");
                    if (rdma) {
                        flush.flush(dst);
                    } else {
                        new CpuReadFlush().flush(dma);
                    }
                    assertEquals(0, gpu.postedWrites().pendingLanding(), (rdma ? "RDMA READ" : "CPU read")
                        + " flush landed every posted write");
                    final MemorySegment back = arena.allocate(SIZE);
                    gpu.copyDtoH(back, 0, buf, 0, SIZE);
                    assertEquals(-1, src.mismatch(back));
                }
            }
        }
    }
}
