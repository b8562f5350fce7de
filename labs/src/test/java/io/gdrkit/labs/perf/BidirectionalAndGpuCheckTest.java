/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import io.gdrkit.softnic.SoftNicContext;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * perftest's -b (both sides post at once, each direction into its own half of the buffers) and --check on GPU
 * memory (the vis_verify kernel on the GPU), byte by byte.
 */
class BidirectionalAndGpuCheckTest {
    private static final int SIZE = 12_345; // not a multiple of the MTU: a short last packet in every message

    private static PerfConfig cfg(final PerfKind kind, final boolean bidi) {
        return new PerfConfig(kind).size(SIZE).iters(300).warmup(0).bufferBytes(1 << 16).bidirectional(bidi)
            .progress(SoftNicContext.ProgressMode.INVOKER).conclude();
    }

    @Test
    void bothDirectionsMoveTheirOwnBytesAndTheSumAddsUp() {
        for (final PerfKind kind : new PerfKind[] {PerfKind.WRITE_BW, PerfKind.READ_BW, PerfKind.SEND_BW}) {
            final PerfConfig c = cfg(kind, true);
            try (Loopback lb = new Loopback(c, null, null)) {
                DataCheck.prepare(lb, c, 7);
                final BwRun.Bidirectional r = new BwRun(lb, c).runBoth();
                assertEquals(300, r.aToB().iterations(), kind.id());
                assertEquals(300, r.bToA().iterations(), kind.id());
                assertEquals(600, r.sum().iterations(), kind.id());
                assertEquals(r.aToB().bwAvgMibS() + r.bToA().bwAvgMibS(), r.sum().bwAvgMibS(), 1e-9);
                final DataCheck.Result ok = DataCheck.verify(lb, c, 7);
                assertTrue(ok.byteExact(), ok.evidence());
                assertEquals(2L * SIZE, ok.bytes());
                final boolean read = kind == PerfKind.READ_BW;
                // lower half: A -> B (READ: B's bytes read into A); upper half the other way
                final MemorySegment lowDst = (read ? lb.a : lb.b).buf;
                final MemorySegment highDst = (read ? lb.b : lb.a).buf;
                final MemorySegment lowSrc = (read ? lb.b : lb.a).buf;
                final MemorySegment highSrc = (read ? lb.a : lb.b).buf;
                assertEquals(-1, lowDst.asSlice(0, SIZE).mismatch(lowSrc.asSlice(0, SIZE)), kind.id());
                assertEquals(-1, highDst.asSlice(1 << 16, SIZE).mismatch(highSrc.asSlice(1 << 16, SIZE)), kind.id());
                assertTrue(lowSrc.asSlice(0, SIZE).mismatch(highSrc.asSlice(1 << 16, SIZE)) != -1,
                    "the two directions carry different patterns");
                // the byte after each message is untouched (zeroed destinations stay zero beyond SIZE)
                assertEquals(0, highDst.get(ValueLayout.JAVA_BYTE, (1 << 16) + SIZE), kind.id());
                // a wrong byte in the upper half's destination is found and named
                highDst.set(ValueLayout.JAVA_BYTE, (1 << 16) + 999,
                    (byte) (highDst.get(ValueLayout.JAVA_BYTE, (1 << 16) + 999) ^ 0x40));
                final DataCheck.Result bad = DataCheck.verify(lb, c, 7);
                assertFalse(bad.byteExact());
                assertEquals(999, bad.mismatchAt());
                assertTrue(bad.evidence().contains("(upper half) first bad byte 999"), bad.evidence());
            }
        }
    }

    @Test
    void oneDirectionLeavesTheUpperHalfAlone() {
        final PerfConfig c = cfg(PerfKind.WRITE_BW, false);
        try (Loopback lb = new Loopback(c, null, null)) {
            DataCheck.prepare(lb, c, 3);
            final BwRun.Bidirectional r = new BwRun(lb, c).runBoth();
            assertEquals(null, r.bToA());
            assertEquals(r.sum(), r.aToB());
            assertTrue(DataCheck.verify(lb, c, 3).byteExact());
            assertEquals(-1, lb.a.buf.asSlice(1 << 16, 1 << 16).mismatch(MemorySegment.ofArray(new byte[1 << 16])));
        }
    }

    @Test
    void bidirectionalIsRefusedWhereItHasNoMeaning() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new PerfConfig(PerfKind.ATOMIC_BW)
            .bidirectional(true).conclude()).getMessage().contains("-b/--bidirectional applies to write_bw"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new PerfConfig(PerfKind.WRITE_LAT)
            .bidirectional(true).conclude()).getMessage().contains("not write_lat"));
    }

    private static void gpuCheck(final GpuDevice gpu, final String expectBy) {
        for (final PerfKind kind : new PerfKind[] {PerfKind.WRITE_BW, PerfKind.READ_BW, PerfKind.SEND_BW}) {
            for (final boolean bidi : new boolean[] {false, true}) {
                final PerfConfig c = new PerfConfig(kind).size(SIZE).iters(50).warmup(0).bufferBytes(1 << 16)
                    .bidirectional(bidi).conclude();
                try (Loopback lb = new Loopback(c, null, gpu)) {
                    DataCheck.prepare(lb, c, 11);
                    new BwRun(lb, c).runBoth();
                    final DataCheck.Result ok = DataCheck.verify(lb, c, 11);
                    assertTrue(ok.byteExact(), kind.id() + " -b " + bidi + ": " + ok.evidence());
                    assertTrue(ok.checkBy().startsWith("GPU kernel vis_verify on "), ok.checkBy());
                    assertTrue(ok.checkBy().contains(expectBy), ok.checkBy());
                    // the host buffers are not what the NIC wrote: the kernel looked at GPU memory
                    assertEquals(0, lb.b.buf.get(ValueLayout.JAVA_BYTE, 0));
                    // a wrong byte written into the destination behind the NIC's back is found
                    final boolean read = kind == PerfKind.READ_BW;
                    final Loopback.Side dst = bidi ? read ? lb.b : lb.a : read ? lb.a : lb.b;
                    final long off = bidi ? 1 << 16 : 0;
                    try (Arena arena = Arena.ofConfined()) {
                        final MemorySegment one = arena.allocate(1);
                        gpu.copyDtoH(one, 0, dst.gpuBuffer, off + 4321, 1);
                        one.set(ValueLayout.JAVA_BYTE, 0, (byte) (one.get(ValueLayout.JAVA_BYTE, 0) ^ 1));
                        gpu.copyHtoD(dst.gpuBuffer, off + 4321, one, 0, 1);
                    }
                    final DataCheck.Result bad = DataCheck.verify(lb, c, 11);
                    assertFalse(bad.byteExact(), kind.id());
                    assertEquals(4321, bad.mismatchAt(), kind.id() + " -b " + bidi + ": " + bad.evidence());
                }
            }
        }
    }

    @Test
    void gpuMemoryIsCheckedByTheKernelOnTheSimulatedGpu() {
        try (GpuDevice gpu = GpuDevices.open("sim:h200")) {
            gpuCheck(gpu, "(the simulated GPU's SM worker threads)");
        }
    }

    @Test
    void gpuMemoryIsCheckedByTheKernelOnCuda() {
        Assumptions.assumeTrue(io.gdrkit.gpu.cuda.CudaGpu.probe().found(), "no CUDA GPU here");
        try (GpuDevice gpu = GpuDevices.open("cuda:0")) {
            gpuCheck(gpu, "[CUDA]");
        }
    }
}
