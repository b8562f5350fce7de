/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

class ShmemTest {
    private static ShmemContext ctx(final ShmemMode mode, final int n) {
        return new ShmemContext().nPes(n).mode(mode).heapBytes(1 << 20).timeout(Duration.ofSeconds(20));
    }

    static byte[] pattern(final int pe, final int len, final int salt) {
        final byte[] b = new byte[len];
        for (int i = 0; i < len; i++) {
            b[i] = (byte) (pe * 37 + i * 7 + salt);
        }
        return b;
    }

    @ParameterizedTest
    @EnumSource(ShmemMode.class)
    void hostApiPutGetSignalAtomicsByteForByte(final ShmemMode mode) {
        final int n = 3;
        final List<String> out = ShmemWorld.run(ctx(mode, n), pe -> {
            final long src = pe.malloc(4096);
            final long dst = pe.malloc(4096 * n);
            final long sig = pe.malloc(8);
            final long counter = pe.malloc(8);
            assertEquals(ShmemContext.RESERVED, src, "first allocation at the start of the user heap");
            pe.write(src, MemorySegment.ofArray(pattern(pe.myPe(), 4096, 1)));
            pe.barrierAll();
            final int right = (pe.myPe() + 1) % n;
            // put into the right neighbour's slot for me, then a signal ADD there
            pe.putSignal(dst + 4096L * pe.myPe(), src, 4096, sig, 1, SignalOp.ADD, right);
            pe.signalWaitUntil(sig, Cmp.GE, 1);
            final int left = (pe.myPe() + n - 1) % n;
            assertArrayEquals(pattern(left, 4096, 1), pe.read(dst + 4096L * left, 4096));
            // get back what my left neighbour has in its src
            final long got = pe.malloc(4096);
            pe.get(got, src, 4096, left);
            assertArrayEquals(pattern(left, 4096, 1), pe.read(got, 4096));
            // everyone adds to PE 0's counter; then CAS
            final long before = pe.fetchAdd(counter, pe.myPe() + 1, 0);
            assertTrue(before >= 0 && before <= n * (n + 1) / 2);
            pe.barrierAll();
            if (pe.myPe() == 0) {
                assertEquals(n * (n + 1) / 2, pe.readLong(counter));
                assertEquals(n * (n + 1) / 2, pe.compareSwap(counter, n * (n + 1) / 2, 77, 0));
                assertEquals(77, pe.readLong(counter));
                assertEquals(77, pe.compareSwap(counter, 1, 99, 0), "a failing CAS returns the value, changes nothing");
                assertEquals(77, pe.readLong(counter));
            }
            pe.barrierAll();
            pe.free(got);
            assertEquals(got, pe.malloc(100), "first fit reuses the freed range");
            return "ok";
        });
        assertEquals(List.of("ok", "ok", "ok"), out);
    }

    @ParameterizedTest
    @EnumSource(ShmemMode.class)
    void deviceApiFromSimulatedKernels(final ShmemMode mode) {
        final int n = 2;
        final List<long[]> out = ShmemWorld.run(ctx(mode, n).stamps(true), pe -> {
            final long src = pe.malloc(8192);
            final long dst = pe.malloc(8192);
            final long sig = pe.malloc(8);
            final long cnt = pe.malloc(8);
            final long got = pe.malloc(8192);
            pe.write(src, MemorySegment.ofArray(pattern(pe.myPe(), 8192, 3)));
            pe.barrierAll();
            final ShmemDevice d = pe.device();
            final int other = 1 - pe.myPe();
            final long[] res = new long[4];
            pe.launchSim("shmem_test", 2, 4, k -> {
                if (k.blockIdx() == 0) {
                    // thread variant: 4 threads, each a quarter of the first 4 KiB, non-blocking, then quiet
                    for (int t = 0; t < 4; t++) {
                        d.putNbi(k, dst + 1024L * t, src + 1024L * t, 1024, other);
                    }
                    d.quiet(k);
                    d.putSignal(k, dst + 4096, src + 4096, 4096, sig, 7, SignalOp.SET, other);
                    res[0] = d.signalWaitUntil(k, sig, Cmp.EQ, 7);
                } else {
                    // block variant get, then atomics on the other PE's counter
                    d.getBlock(k, got, src, 8192, other);
                    res[1] = d.fetchAdd(k, cnt, 5, other);
                    res[2] = d.compareSwap(k, cnt, 5, 11, other);
                }
            });
            pe.barrierAll();
            assertArrayEquals(pattern(other, 8192, 3), pe.read(dst, 8192));
            assertArrayEquals(pattern(other, 8192, 3), pe.read(got, 8192));
            assertEquals(11, pe.readLong(cnt));
            res[3] = d.drainStamps().size();
            final long[] db = pe.doorbellCounters();
            return new long[] {res[0], res[1], res[2], res[3], db[0], db[1], db[2]};
        });
        assertTrue(!out.isEmpty(), "every PE returns its counters");
        for (final long[] r : out) {
            assertEquals(7, r[0]);
            assertEquals(0, r[1]);
            assertEquals(5, r[2]);
            assertEquals(4, r[3], "stamps of the blocking calls: putSignal, get, fetchAdd, compareSwap");
            if (mode == ShmemMode.IBGDA) {
                assertEquals(0, r[4], "no CPU rang a doorbell of a GPU-owned queue");
                assertTrue(r[5] > 0, "the NIC saw the GPU's doorbells");
            } else {
                assertTrue(r[4] > 0, "the proxy rang the doorbells");
                assertEquals(0, r[5]);
            }
            assertEquals(0, r[6]);
        }
    }

    /**
     * Small puts carry their data: on IBGDA up to max_inline_data (64) bytes in the WQE, on IBRC up to 16 in the
     * proxy request. The bytes land exactly; the WQE's INLINE flag (or the request's signal-op byte) says which way
     * each went; and a source overwritten right after an inline put returns does not change what lands, since the
     * NIC never reads it.
     */
    @ParameterizedTest
    @EnumSource(ShmemMode.class)
    void smallPutsCarryTheirDataAndLandByteForByte(final ShmemMode mode) {
        final int[] sizes = {1, 7, 8, 13, 16, 17, 64, 65, 200};
        final int limit = mode == ShmemMode.IBGDA ? ShmemPe.MAX_INLINE : ProxyRing.INLINE_MAX;
        final List<String> out = ShmemWorld.run(ctx(mode, 2), pe -> {
            final long src = pe.malloc(256L * sizes.length);
            final long dst = pe.malloc(256L * sizes.length);
            for (int i = 0; i < sizes.length; i++) {
                pe.write(src + 256L * i, MemorySegment.ofArray(pattern(pe.myPe(), sizes[i], 11 + i)));
            }
            pe.barrierAll();
            final ShmemDevice d = pe.device();
            final int other = 1 - pe.myPe();
            final boolean[] carried = new boolean[sizes.length];
            pe.launchSim("small-puts", 1, 1, k -> {
                for (int i = 0; i < sizes.length; i++) {
                    final long t = d.putNbi(k, dst + 256L * i, src + 256L * i, sizes[i], other);
                    if (mode == ShmemMode.IBGDA) {
                        final io.gdrkit.verbs.DirectQueue q = pe.direct(other);
                        final long slot = ((t >>> 6) & (q.sqDepth() - 1)) * q.sqStride();
                        carried[i] = (q.sqRing().get(java.lang.foreign.ValueLayout.JAVA_BYTE,
                            slot + io.gdrkit.verbs.DirectQueue.OFF_FLAGS) & io.gdrkit.verbs.SendFlags.INLINE) != 0;
                    } else {
                        final ProxyRing r = pe.proxyRing();
                        carried[i] = r.mem.get(java.lang.foreign.ValueLayout.JAVA_BYTE, r.record(t) + 9)
                            == ProxyRing.INLINE;
                    }
                    if (carried[i]) {
                        // the put has its data already: clobbering the source now changes nothing that lands
                        final var v = k.view(pe.heapAddress() + src + 256L * i, sizes[i]);
                        for (int j = 0; j < sizes[i]; j++) {
                            v.putByte(j, (byte) 0x5A);
                        }
                    }
                }
                d.quiet(k);
            });
            pe.barrierAll();
            for (int i = 0; i < sizes.length; i++) {
                assertEquals(sizes[i] <= limit, carried[i], sizes[i] + " bytes");
                assertArrayEquals(pattern(other, sizes[i], 11 + i), pe.read(dst + 256L * i, sizes[i]),
                    sizes[i] + " bytes");
            }
            pe.barrierAll();
            return "ok";
        });
        assertEquals(List.of("ok", "ok"), out);
    }

    /**
     * A GPU that writes an INLINE WQE the NIC cannot honour (longer than max_inline_data, or a READ) gets the
     * completion error a verbs post would have got as EINVAL; the NIC never copies past the WQE's slot.
     */
    @Test
    void anInlineWqeTheQueueCannotHoldIsALocalError() {
        for (final int[] c : new int[][] {{io.gdrkit.verbs.WrOpcode.RDMA_WRITE, ShmemPe.MAX_INLINE + 1},
            {io.gdrkit.verbs.WrOpcode.RDMA_WRITE, 1 << 20}, {io.gdrkit.verbs.WrOpcode.RDMA_READ, 8}}) {
            // the kernel's failure (the simulated GPU's launch error) carries the WQE's completion error
            final RuntimeException e = assertThrows(RuntimeException.class, () -> ShmemWorld.run(
                ctx(ShmemMode.IBGDA, 2).timeout(Duration.ofSeconds(10)), pe -> {
                    final long buf = pe.malloc(64);
                    pe.barrierAll();
                    if (pe.myPe() == 0) {
                        pe.launchSim("bad-inline", 1, 1, k -> {
                            final GdaQueue q = pe.gda(1);
                            final long idx = q.post(c[0], io.gdrkit.verbs.SendFlags.INLINE, pe.heapAddress() + buf,
                                c[1], pe.heapMr().lkey(), pe.peerHeap(1) + buf, pe.peerRkey(1), 0, 0, 0, null);
                            q.await(idx, "the bad inline WQE");
                        });
                    }
                    return null;
                }));
            final String want = c[0] == io.gdrkit.verbs.WrOpcode.RDMA_READ ? "LOC_QP_OP_ERR" : "LOC_LEN_ERR";
            assertTrue(e.getMessage().contains("OPERATION_FAILED: WQE 0 to PE 1 completed with " + want),
                c[0] + "/" + c[1] + ": " + e.getMessage());
        }
    }

    @Test
    void leavingOutTheFenceLetsTheNicReadAStaleWqeAndTheRunSaysSo() {
        final ShmemException e = assertThrows(ShmemException.class, () -> ShmemWorld.run(
            ctx(ShmemMode.IBGDA, 2).wqeFence(false).staleProbability(1.0).timeout(Duration.ofSeconds(10)), pe -> {
                final long buf = pe.malloc(64);
                pe.barrierAll();
                pe.launchSim("nofence", 1, 1, k -> pe.device().put(k, buf, buf, 64, 1 - pe.myPe()));
                return null;
            }));
        assertEquals(ShmemException.Reason.STALE_WQE, e.reason(), e.getMessage());
        assertTrue(e.getMessage().contains("no fence before the doorbell"), e.getMessage());
    }

    @Test
    void badDeviceInputIsNamed() {
        ShmemWorld.run(ctx(ShmemMode.IBGDA, 2), pe -> {
            final long buf = pe.malloc(64);
            pe.barrierAll();
            final ShmemException outside = assertThrows(ShmemException.class, () ->
                pe.launchSim("outside", 1, 1, k -> pe.device().put(k, buf, pe.context().heapBytes() - 8, 64, 0)));
            assertEquals(ShmemException.Reason.ADDRESS_OUT_OF_HEAP, outside.reason());
            final ShmemException badPe = assertThrows(ShmemException.class, () ->
                pe.launchSim("badpe", 1, 1, k -> pe.device().put(k, buf, buf, 8, 2)));
            assertEquals(ShmemException.Reason.PE_OUT_OF_RANGE, badPe.reason());
            assertEquals(ShmemException.Reason.ADDRESS_OUT_OF_HEAP, assertThrows(ShmemException.class,
                () -> pe.put(8, buf, 8, 0)).reason(), "the reserved part is not for users");
            assertEquals(ShmemException.Reason.PE_OUT_OF_RANGE, assertThrows(ShmemException.class,
                () -> pe.get(buf, buf, 8, -1)).reason());
            assertEquals(ShmemException.Reason.BAD_ARGUMENT, assertThrows(ShmemException.class,
                () -> pe.fetchAdd(buf + 4, 1, 0)).reason());
            pe.barrierAll();
            return null;
        });
    }

    /** A GPU-written request with a PE out of range reaches the proxy: refused by name, never an index past its arrays. */
    @Test
    void theProxyRefusesARequestWithABadPeAndTheKernelHearsOfIt() {
        ShmemWorld.run(ctx(ShmemMode.IBRC, 2), pe -> {
            final long buf = pe.malloc(64);
            pe.barrierAll();
            if (pe.myPe() == 0) {
                final ProxyRing r = pe.proxyRing();
                final long t = r.take(); // what a rogue kernel would write: PE 77 of 2
                r.write(t, Op.PUT, 0, 77, 8, buf, buf, 0, 0, 0, 0);
                final ShmemException e = assertThrows(ShmemException.class,
                    () -> pe.launchSim("rogue", 1, 1, k -> pe.device().quiet(k)));
                assertEquals(ShmemException.Reason.PE_OUT_OF_RANGE, e.reason(), e.getMessage());
                assertTrue(e.getMessage().contains("the proxy refused a request from the GPU: PE 77 is out of range"),
                    e.getMessage());
                assertEquals(t + 1, r.doneOf(t), "refused, and done: nobody waits for it");
            }
            pe.barrierAll();
            return null;
        });
    }

    @Test
    void proxyRequestFieldsAreCheckedOneByOne() {
        final java.lang.foreign.MemorySegment m = java.lang.foreign.Arena.ofAuto().allocate(ProxyRing.bytes(4));
        final ProxyRing r = new ProxyRing(m, 4);
        final long rec = r.record(0);
        r.write(0, Op.PUT_SIGNAL, 1, 1, 8, 65536, 65536, 1, 0, 65536, 0);
        assertEquals(0, ProxyRing.check(m, rec, 2));
        final Object[][] bad = {{10, (short) -1, ShmemException.Reason.PE_OUT_OF_RANGE, "PE -1"},
            {10, (short) 2, ShmemException.Reason.PE_OUT_OF_RANGE, "PE 2"},
            {8, (byte) 0, ShmemException.Reason.BAD_ARGUMENT, "operation 0"},
            {8, (byte) 6, ShmemException.Reason.BAD_ARGUMENT, "operation 6"},
            {9, (byte) 2, ShmemException.Reason.BAD_ARGUMENT, "signal operation 2"},
            {12, -5, ShmemException.Reason.BAD_ARGUMENT, "length -5"},
            {12, ShmemPe.MAX_LEN + 1, ShmemException.Reason.BAD_ARGUMENT, "length " + (ShmemPe.MAX_LEN + 1)}};
        for (final Object[] b : bad) {
            r.write(0, Op.PUT_SIGNAL, 1, 1, 8, 65536, 65536, 1, 0, 65536, 0);
            final long at = rec + (int) b[0];
            switch (b[1]) {
                case Short v -> m.set(java.lang.foreign.ValueLayout.JAVA_SHORT, at, v);
                case Byte v -> m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, at, v);
                default -> m.set(java.lang.foreign.ValueLayout.JAVA_INT, at, (int) b[1]);
            }
            final long e = ProxyRing.check(m, rec, 2);
            final ShmemException x = ProxyRing.error(e);
            assertEquals(b[2], x.reason(), x.getMessage());
            assertTrue(x.getMessage().endsWith(b[3] + " is out of range"), x.getMessage());
        }
        // the inline flag: only on a put, and only with 1 to 16 bytes
        r.write(0, Op.PUT, ProxyRing.INLINE, 1, 16, 65536, 65536, 1, 2, 0, 0);
        assertEquals(0, ProxyRing.check(m, rec, 2));
        for (final int[] c : new int[][] {{Op.PUT, 0}, {Op.PUT, 17}, {Op.GET, 8}, {Op.FETCH_ADD, 8}}) {
            r.write(0, c[0], ProxyRing.INLINE, 1, c[1], 65536, 65536, 1, 0, 0, 0);
            final ShmemException x = ProxyRing.error(ProxyRing.check(m, rec, 2));
            assertEquals(ShmemException.Reason.BAD_ARGUMENT, x.reason(), x.getMessage());
            assertTrue(x.getMessage().endsWith(c[0] == Op.PUT ? "length " + c[1] + " is out of range"
                : "signal operation " + ProxyRing.INLINE + " is out of range"), x.getMessage());
        }
        // a failed completion still reads as before
        assertEquals(ShmemException.Reason.OPERATION_FAILED, ProxyRing.error(3L | 1L << 16).reason());
    }

    @Test
    void contextRejectsBadValues() {
        assertEquals(ShmemException.Reason.BAD_ARGUMENT, assertThrows(ShmemException.class,
            () -> new ShmemContext().nPes(0).conclude()).reason());
        assertEquals(ShmemException.Reason.BAD_ARGUMENT, assertThrows(ShmemException.class,
            () -> new ShmemContext().sqDepth(100).conclude()).reason());
        assertEquals(ShmemException.Reason.BAD_ARGUMENT, assertThrows(ShmemException.class,
            () -> new ShmemContext().heapBytes(10).conclude()).reason());
        final ShmemException warm = assertThrows(ShmemException.class,
            () -> new ShmemContext().warmup(java.time.Duration.ofMillis(-1)).conclude());
        assertEquals(ShmemException.Reason.BAD_ARGUMENT, warm.reason());
        assertTrue(warm.getMessage().contains("warm-up must be 0 to 10 minutes"), warm.getMessage());
        assertEquals(java.time.Duration.ZERO, new ShmemContext().warmup(java.time.Duration.ZERO).conclude().warmup());
        assertEquals(java.time.Duration.ofMillis(300), new ShmemContext().conclude().warmup(), "perf's warm-up");
    }
}
