/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.comm.bootstrap.UniqueId;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.api.Test;

/** The public communicator on Java data: every call's result checked element by element, every bad argument named. */
class CommTest {
    /** What one rank does with its communicator. */
    interface Body {
        void run(Comm c) throws Exception;
    }

    /** Runs {@code body} on {@code n} ranks as threads of this JVM over one run; fails with the first rank's error. */
    static void ranks(final int n, final Fabric fabric, final String gpu, final Body body) throws Exception {
        final AtomicReferenceArray<Throwable> errors = new AtomicReferenceArray<>(n);
        try (CommRoot root = CommRoot.startLoopback(n)) {
            final UniqueId id = root.id();
            final List<Thread> threads = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                final int rank = r;
                threads.add(Thread.ofPlatform().start(() -> {
                    try (Comm c = Comm.open(new CommConfig().id(id).rank(rank).nranks(n).fabric(fabric).gpu(gpu)
                        .timeout(Duration.ofSeconds(30)))) {
                        body.run(c);
                    } catch (final Throwable e) {
                        errors.set(rank, e);
                    }
                }));
            }
            for (final Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(120));
                assertFalse(t.isAlive(), "a rank hung");
            }
        }
        for (int r = 0; r < n; r++) {
            if (errors.get(r) != null) {
                throw new AssertionError("rank " + r + " failed: " + errors.get(r), errors.get(r));
            }
        }
        assertEquals(0, InJvmDrivers.live(), "an in-JVM driver was left running");
    }

    /** Rank r's element i: small integers, so every type holds every sum exactly. */
    private static int v(final int r, final int i) {
        return (r + 1) * 10 + i % 7;
    }

    private static int sum(final int n, final int i) {
        int s = 0;
        for (int r = 0; r < n; r++) {
            s += v(r, i);
        }
        return s;
    }

    @Test
    void allReduceOnEveryArrayTypeInAndOutOfPlace() throws Exception {
        final int n = 4;
        final int len = 1000;
        ranks(n, Fabric.INJVM, null, c -> {
            final int r = c.rank();
            final float[] f = new float[len];
            final double[] d = new double[len];
            final int[] k = new int[len];
            final long[] l = new long[len];
            for (int i = 0; i < len; i++) {
                f[i] = v(r, i);
                d[i] = v(r, i);
                k[i] = v(r, i);
                l[i] = v(r, i) + (1L << 40);
            }
            final float[] fo = new float[len];
            c.allReduce(f, fo, RedOp.SUM);
            c.allReduce(d, d, RedOp.SUM);
            c.allReduce(k, k, RedOp.MAX);
            c.allReduce(l, l, RedOp.MIN);
            for (int i = 0; i < len; i++) {
                assertEquals(sum(n, i), fo[i], "float at " + i);
                assertEquals(v(r, i), f[i], "the input stayed as it was at " + i);
                assertEquals(sum(n, i), d[i], "double at " + i);
                assertEquals(v(n - 1, i), k[i], "int max at " + i);
                assertEquals(v(0, i) + (1L << 40), l[i], "long min at " + i);
            }
        });
    }

    /** Over every fabric (threads stand in for processes on shm and tcp), small sizes take the direct round. */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(Fabric.class)
    void everyFabricAndSizeFromOneElementToAMegabyte(final Fabric fabric) throws Exception {
        final int n = 3;
        ranks(n, fabric, null, c -> {
            for (final int len : new int[] {1, 3, 1000, 65536, 262144}) {
                final float[] f = new float[len];
                for (int i = 0; i < len; i++) {
                    f[i] = v(c.rank(), i);
                }
                c.allReduce(f, f, RedOp.SUM);
                for (int i = 0; i < len; i++) {
                    assertEquals(sum(n, i), f[i], fabric + " " + len + " at " + i);
                }
            }
            assertEquals(fabric, c.info().fabric());
        });
    }

    @Test
    void nativeAndHeapSegmentsAndTheRegistrationIsReused() throws Exception {
        final int n = 3;
        ranks(n, Fabric.INJVM, null, c -> {
            try (Arena a = Arena.ofConfined()) {
                final MemorySegment in = a.allocate(4096 * 4);
                final MemorySegment out = a.allocate(4096 * 4);
                for (int round = 0; round < 3; round++) {
                    for (int i = 0; i < 4096; i++) {
                        in.setAtIndex(ValueLayout.JAVA_INT, i, v(c.rank(), i) + round);
                    }
                    c.allReduce(in, out, 4096, DataType.INT32, RedOp.SUM);
                    for (int i = 0; i < 4096; i++) {
                        assertEquals(sum(n, i) + n * round, out.getAtIndex(ValueLayout.JAVA_INT, i));
                    }
                }
                assertEquals(2, c.registrationsMade(), "three rounds on the same two segments register them once");
                final MemorySegment heap = MemorySegment.ofArray(new long[16]);
                heap.setAtIndex(ValueLayout.JAVA_LONG, 5, c.rank());
                c.allReduce(heap, heap, 16, DataType.INT64, RedOp.SUM);
                assertEquals(n * (n - 1) / 2, heap.getAtIndex(ValueLayout.JAVA_LONG, 5));
                assertEquals(2, c.registrationsMade(), "heap data goes through staging, not a new registration");
                c.deregister(in);
                c.allReduce(in, out, 4096, DataType.INT32, RedOp.SUM);
                assertEquals(3, c.registrationsMade(), "a dropped registration is made again on the next use");
                c.deregister(in);
                c.deregister(out);
            }
        });
    }

    @Test
    void allGatherReduceScatterBroadcastReduceAllToAll() throws Exception {
        final int n = 4;
        final int per = 300;
        ranks(n, Fabric.INJVM, null, c -> {
            final int r = c.rank();
            final int[] mine = new int[per];
            for (int i = 0; i < per; i++) {
                mine[i] = v(r, i);
            }
            final int[] all = new int[n * per];
            c.allGather(mine, all);
            for (int p = 0; p < n; p++) {
                for (int i = 0; i < per; i++) {
                    assertEquals(v(p, i), all[p * per + i], "allGather block " + p + " at " + i);
                }
            }
            // in place: this rank's block of the output is the input
            final MemorySegment g = MemorySegment.ofArray(new int[n * per]);
            MemorySegment.copy(MemorySegment.ofArray(mine), 0, g, (long) r * per * 4, per * 4L);
            c.allGather(g.asSlice((long) r * per * 4, per * 4L), g, per, DataType.INT32);
            assertArrayEquals(all, g.toArray(ValueLayout.JAVA_INT));

            final double[] big = new double[n * per];
            for (int i = 0; i < big.length; i++) {
                big[i] = v(r, i);
            }
            final double[] block = new double[per];
            c.reduceScatter(big, block, RedOp.SUM);
            for (int i = 0; i < per; i++) {
                assertEquals(sum(n, r * per + i), block[i], "reduceScatter at " + i);
            }

            final long[] b = new long[per];
            if (r == 2) {
                for (int i = 0; i < per; i++) {
                    b[i] = 7L * i - 3;
                }
            }
            c.broadcast(b, 2);
            for (int i = 0; i < per; i++) {
                assertEquals(7L * i - 3, b[i], "broadcast at " + i);
            }

            final float[] red = new float[per];
            final float[] rin = new float[per];
            for (int i = 0; i < per; i++) {
                rin[i] = v(r, i);
            }
            c.reduce(rin, r == 1 ? red : null, RedOp.SUM, 1);
            for (int i = 0; i < per; i++) {
                assertEquals(r == 1 ? sum(n, i) : 0f, red[i], "reduce at " + i);
            }

            final int[] a2a = new int[n * per];
            for (int p = 0; p < n; p++) {
                for (int i = 0; i < per; i++) {
                    a2a[p * per + i] = r * 1000 + p * 100 + i % 50;
                }
            }
            final int[] got = new int[n * per];
            c.allToAll(a2a, got);
            for (int p = 0; p < n; p++) {
                for (int i = 0; i < per; i++) {
                    assertEquals(p * 1000 + r * 100 + i % 50, got[p * per + i], "allToAll from " + p + " at " + i);
                }
            }
        });
    }

    @Test
    void aGroupedRingShiftAndPlainSendRecv() throws Exception {
        final int n = 4;
        ranks(n, Fabric.INJVM, null, c -> {
            final int r = c.rank();
            final long[] out = new long[5000];
            for (int i = 0; i < out.length; i++) {
                out[i] = (long) r << 32 | i;
            }
            final long[] in = new long[5000];
            c.groupStart();
            c.send(out, (r + 1) % n);
            c.recv(in, (r + n - 1) % n);
            c.groupEnd();
            final int prev = (r + n - 1) % n;
            for (int i = 0; i < in.length; i++) {
                assertEquals((long) prev << 32 | i, in[i], "ring shift at " + i);
            }
            // outside a group: 0 sends to 1, which receives
            final int[] m = new int[100];
            if (r == 0) {
                for (int i = 0; i < m.length; i++) {
                    m[i] = 31 * i;
                }
                c.send(m, 1);
            } else if (r == 1) {
                c.recv(m, 0);
                for (int i = 0; i < m.length; i++) {
                    assertEquals(31 * i, m[i]);
                }
            }
        });
    }

    @Test
    void barrierBlockingAndAsynchronousOnEveryFabric() throws Exception {
        for (final Fabric fabric : new Fabric[] {Fabric.INJVM, Fabric.SHM}) {
            final int n = 3;
            final java.util.concurrent.atomic.AtomicInteger entered = new java.util.concurrent.atomic.AtomicInteger();
            final java.util.concurrent.atomic.AtomicInteger second = new java.util.concurrent.atomic.AtomicInteger();
            ranks(n, fabric, null, c -> {
                if (c.rank() == n - 1) {
                    Thread.sleep(20); // the last to come: nobody may be through before it entered
                }
                entered.incrementAndGet();
                c.barrier();
                assertEquals(n, entered.get(), "rank " + c.rank() + " left the barrier early (" + fabric + ")");
                if (c.rank() == 0) {
                    Thread.sleep(20);
                }
                second.incrementAndGet();
                c.barrierAsync().get(60, TimeUnit.SECONDS);
                assertEquals(n, second.get(), "rank " + c.rank() + " left the asynchronous barrier early");
            });
        }
    }

    @Test
    void asynchronousCallsRunInOrderAndABlockingCallWaitsForThem() throws Exception {
        final int n = 2;
        ranks(n, Fabric.INJVM, null, c -> {
            try (Arena a = Arena.ofShared()) {
                final MemorySegment x = a.allocate(8 * 64);
                for (int i = 0; i < 64; i++) {
                    x.setAtIndex(ValueLayout.JAVA_LONG, i, 1);
                }
                final List<CompletableFuture<Void>> fs = new ArrayList<>();
                for (int k = 0; k < 5; k++) {
                    fs.add(c.allReduceAsync(x, x, 64, DataType.INT64, RedOp.SUM)); // doubles each time
                }
                final long[] after = new long[64];
                fs.add(c.submit(cc -> MemorySegment.copy(x, ValueLayout.JAVA_LONG, 0, after, 0, 64)));
                CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
                for (int i = 0; i < 64; i++) {
                    assertEquals(32, after[i], "five in-place doublings in order at " + i);
                }
                final long[] y = new long[64];
                java.util.Arrays.fill(y, 3);
                final CompletableFuture<Void> f = c.submit(cc -> cc.allReduce(y, y, RedOp.PROD));
                c.allReduce(y, y, RedOp.SUM); // runs after the submitted product
                f.get(60, TimeUnit.SECONDS);
                assertEquals(18, y[0], "(3*3) then summed over 2 ranks");
                final CompletableFuture<Void> bad = c.submit(cc -> {
                    throw new IllegalStateException("the task's own error");
                });
                final ExecutionException e = assertThrows(ExecutionException.class, () -> bad.get(60,
                    TimeUnit.SECONDS));
                assertEquals("the task's own error", e.getCause().getMessage());
            }
        });
    }

    @Test
    void badArgumentsAreNamedBeforeAnythingMoves() throws Exception {
        ranks(2, Fabric.INJVM, null, c -> {
            final float[] f = new float[10];
            assertEquals("receive buffer holds 20 bytes, the call needs 40", assertThrows(
                IllegalArgumentException.class, () -> c.allReduce(f, new float[5], RedOp.SUM)).getMessage());
            assertEquals("root 2 outside 0..1", assertThrows(IllegalArgumentException.class,
                () -> c.broadcast(f, 2)).getMessage());
            assertEquals("peer " + c.rank() + " is this rank: copy locally instead",
                assertThrows(IllegalArgumentException.class, () -> c.send(f, c.rank())).getMessage());
            assertEquals("peer -1 outside 0..1", assertThrows(IllegalArgumentException.class,
                () -> c.recv(f, -1)).getMessage());
            assertEquals("allReduce: count -1 is negative", assertThrows(IllegalArgumentException.class,
                () -> c.allReduce(MemorySegment.ofArray(f), MemorySegment.ofArray(f), -1, DataType.FLOAT32,
                    RedOp.SUM)).getMessage());
            assertEquals("allToAll: 9 elements are not 2 equal blocks", assertThrows(
                IllegalArgumentException.class, () -> c.allToAll(new int[9], new int[9])).getMessage());
            assertEquals("receive buffer is read-only", assertThrows(IllegalArgumentException.class,
                () -> c.allReduce(MemorySegment.ofArray(f), MemorySegment.ofArray(f).asReadOnly(), 10,
                    DataType.FLOAT32, RedOp.SUM)).getMessage());
            assertEquals("groupEnd() without groupStart()", assertThrows(IllegalStateException.class,
                c::groupEnd).getMessage());
            try (GpuDevice other = io.gdrkit.gpu.devices.GpuDevices.open("sim:h200")) {
                final DeviceBuffer d = other.alloc(64);
                assertEquals("a device buffer on a communicator without a GPU: open it with CommConfig.gpu(...)",
                    assertThrows(IllegalArgumentException.class, () -> c.allReduce(d, d, 4, DataType.FLOAT32,
                        RedOp.SUM)).getMessage());
            }
            // still usable after refused arguments
            final int[] one = {c.rank() + 1};
            c.allReduce(one, one, RedOp.SUM);
            assertEquals(3, one[0]);
            final Comm.Info info = c.info();
            assertEquals(Fabric.INJVM, info.fabric());
            assertTrue(info.simulated(), "software NICs are simulated hardware");
            assertEquals(CollWorld.TransportKind.IB, info.transport());
            assertEquals("host memory", info.dataPath());
        });
    }

    @Test
    void aClosedCommunicatorRefusesCalls() throws Exception {
        final Comm[] kept = new Comm[1];
        ranks(1, Fabric.INJVM, null, c -> kept[0] = c);
        final IllegalStateException e = assertThrows(IllegalStateException.class,
            () -> kept[0].allReduce(new int[1], new int[1], RedOp.SUM));
        assertEquals("communicator of rank 0 is closed", e.getMessage());
        kept[0].close(); // a second close is harmless
    }

    @Test
    void theConfigIsCheckedOnceAndThenFrozen() {
        final UniqueId id = new UniqueId("127.0.0.1", 1, 42);
        assertEquals("no run id: start a CommRoot and give every rank its id()", assertThrows(
            IllegalArgumentException.class, () -> new CommConfig().rank(0).nranks(1).conclude()).getMessage());
        assertEquals("rank 4 outside 0..3", assertThrows(IllegalArgumentException.class,
            () -> new CommConfig().id(id).rank(4).nranks(4).conclude()).getMessage());
        assertEquals("nranks 0 must be at least 1", assertThrows(IllegalArgumentException.class,
            () -> new CommConfig().id(id).rank(0).nranks(0).conclude()).getMessage());
        assertEquals("timeout PT0S must be positive", assertThrows(IllegalArgumentException.class,
            () -> new CommConfig().id(id).rank(0).nranks(1).timeout(Duration.ZERO).conclude()).getMessage());
        assertEquals("GPU 'gpu0' is not sim:<preset>, cuda:N or cuda:rank", assertThrows(
            IllegalArgumentException.class, () -> new CommConfig().id(id).rank(0).nranks(1).gpu("gpu0").conclude())
            .getMessage());
        final CommConfig c = new CommConfig().id(id).rank(1).nranks(2).fabric(Fabric.SHM).token("s3cret").conclude();
        assertEquals(1, c.localRank(), "on one host the local rank defaults to the rank");
        assertFalse(c.toString().contains("s3cret"), "the token is never printed");
        assertEquals("CommConfig is concluded: rank(...) is refused; configure a new CommConfig", assertThrows(
            IllegalStateException.class, () -> c.rank(0)).getMessage());
        assertEquals("CommConfig is already concluded: conclude() runs once per context", assertThrows(
            IllegalStateException.class, c::conclude).getMessage());
        assertEquals(Fabric.SHM, Fabric.parse("SHM"));
        assertEquals("fabric 'ib' is not injvm, shm or tcp", assertThrows(IllegalArgumentException.class,
            () -> Fabric.parse("ib")).getMessage());
        assertNull(new CommConfig().gpu());
    }

    @Test
    void theWorldContextIsCheckedOnceAndThenFrozen() {
        assertEquals("no fabric: injvm, shm or tcp", assertThrows(IllegalArgumentException.class,
            () -> new WorldContext().conclude()).getMessage());
        assertEquals("an in-JVM world over software NICs needs the driver its ranks share", assertThrows(
            IllegalArgumentException.class, () -> new WorldContext().fabric(Fabric.INJVM).conclude()).getMessage());
        new WorldContext().fabric(Fabric.INJVM).transport(CollWorld.TransportKind.SOCKET).conclude(); // no NICs
        assertEquals("timeout PT-1S must be positive", assertThrows(IllegalArgumentException.class,
            () -> new WorldContext().fabric(Fabric.TCP).timeout(Duration.ofSeconds(-1)).conclude()).getMessage());
        final WorldContext w = new WorldContext().fabric(Fabric.SHM).gpu("sim:h200").conclude();
        assertEquals(CollWorld.TransportKind.IB, w.transport(), "the default transport");
        assertEquals(Duration.ofSeconds(60), w.coll().timeout(), "the default tuning takes the world's timeout");
        assertEquals("WorldContext is concluded: fabric(...) is refused; configure a new WorldContext", assertThrows(
            IllegalStateException.class, () -> w.fabric(Fabric.TCP)).getMessage());
        assertEquals("WorldContext is already concluded: conclude() runs once per context", assertThrows(
            IllegalStateException.class, w::conclude).getMessage());
    }

    @Test
    void gpuBuffersOnASimulatedGpu() throws Exception {
        final int n = 2;
        final int count = 2048;
        ranks(n, Fabric.INJVM, "sim:h200", c -> {
            final GpuDevice g = c.gpu();
            assertTrue(g.isSimulated());
            final DeviceBuffer d = g.alloc(count * 4L);
            final DeviceBuffer all = g.alloc(count * 4L * n);
            try (Arena a = Arena.ofConfined()) {
                final MemorySegment h = a.allocate(count * 4L * n);
                for (int i = 0; i < count; i++) {
                    h.setAtIndex(ValueLayout.JAVA_FLOAT, i, v(c.rank(), i));
                }
                g.copyHtoD(d, 0, h, 0, count * 4L);
                c.allReduce(d, d, count, DataType.FLOAT32, RedOp.SUM);
                g.copyDtoH(h, 0, d, 0, count * 4L);
                for (int i = 0; i < count; i++) {
                    assertEquals(sum(n, i), h.getAtIndex(ValueLayout.JAVA_FLOAT, i), "GPU allReduce at " + i);
                }
                c.allGather(d, all, count, DataType.FLOAT32);
                g.copyDtoH(h, 0, all, 0, count * 4L * n);
                for (int p = 0; p < n; p++) {
                    for (int i = 0; i < count; i++) {
                        assertEquals(sum(n, i), h.getAtIndex(ValueLayout.JAVA_FLOAT, (long) p * count + i));
                    }
                }
                assertEquals("allGather on device buffers needs different send and receive buffers", assertThrows(
                    IllegalArgumentException.class, () -> c.allGather(all, all, 1, DataType.FLOAT32)).getMessage());
            }
            c.deregister(d);
            c.deregister(all);
            g.free(d);
            g.free(all);
        });
    }
}
