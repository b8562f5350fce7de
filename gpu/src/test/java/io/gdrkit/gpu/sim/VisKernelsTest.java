/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.core.agent.NanoClock;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.VisKernels;
import io.gdrkit.gpu.VisKernels.Poll;
import io.gdrkit.gpu.VisKernels.Slot;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static io.gdrkit.gpu.sim.SimTestSupport.TIMEOUT;
import static io.gdrkit.gpu.sim.SimTestSupport.deterministic;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Java twins of vis_verify and vis_persistent_*: exact counts for every kind of bad round, timeouts, senders. */
class VisKernelsTest {
    private static final int SEED = 77;
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Writes round {@code round}'s pattern into {@code [from, to)} of device memory, as landed bytes. */
    private static void land(final DeviceBuffer b, final long from, final long to, final int round) {
        Pattern.fill(((SimDeviceBuffer) b).memory(), from, to - from, from, round, SEED);
    }

    private static MemorySegment mem(final DeviceBuffer b) {
        return ((SimDeviceBuffer) b).memory();
    }

    /** The four result words a test expects: bad, first, last, prev. */
    private static long[] counts(final Slot s) {
        return new long[] {s.bad(), s.first(), s.last(), s.prev()};
    }

    private static void assertCounts(final long[] want, final Slot got, final String what) {
        assertEquals(List.of(want[0], want[1], want[2], want[3]),
            List.of(got.bad(), got.first(), got.last(), got.prev()), what);
    }

    @Test
    void visVerifyCountsEveryKindOfRoundTheSameOnAnyGrid() {
        final int n = 10_000;
        final int k = 3_000;
        final int round = 5;
        try (SimGpu gpu = SimGpu.create(SimPreset.H200, deterministic(1))) {
            final DeviceBuffer buf = gpu.alloc(n);
            final DeviceBuffer result = gpu.alloc(VisKernels.VERIFY_BYTES);
            final GpuStream s = gpu.createStream();
            // {setup, expected {bad, first, last, prev}, what}
            final List<Object[]> cases = List.of(
                new Object[] {(Runnable) () -> land(buf, 0, n, round), new long[] {0, -1, n, 0}, "ok"},
                new Object[] {(Runnable) () -> land(buf, 0, n, round - 1), new long[] {n, 0, 0, n}, "stale"},
                new Object[] {(Runnable) () -> {
                    land(buf, 0, k, round);
                    land(buf, k, n, round - 1);
                }, new long[] {n - k, k, k, n - k}, "partial"},
                new Object[] {(Runnable) () -> {
                    land(buf, 0, k, round - 1);
                    land(buf, k, n, round);
                }, new long[] {k, 0, n, k}, "reordered"},
                new Object[] {(Runnable) () -> {
                    land(buf, 0, n, round);
                    // +1 is neither this round's byte nor the previous one's (rounds differ by 157 in every byte)
                    mem(buf).set(ValueLayout.JAVA_BYTE, 1234, (byte) (Pattern.at(1234, round, SEED) + 1));
                }, new long[] {1, 1234, n, 0}, "corrupt"});
            for (final Object[] c : cases) {
                ((Runnable) c[0]).run();
                for (final int grid : new int[] {1, 3, 8}) {
                    VisKernels.resetVerify(mem(result), 0);
                    gpu.launch(gpu.function(SimKernels.MODULE, VisKernels.VERIFY), Dim3.of(grid), Dim3.of(128), s,
                        new KernelArgs(5).ptr(buf).u64(n).u32(round).u32(SEED).ptr(result));
                    gpu.synchronize(s, TIMEOUT);
                    final Slot got = VisKernels.readVerify(mem(result), 0, round);
                    assertCounts((long[]) c[1], got, c[2] + ", grid " + grid);
                    assertEquals(c[2], got.what(n), "grid " + grid);
                }
            }
        }
    }

    /** A launched persistent consumer and its buffers; the host drives it through memory, as CPU stores would. */
    private record Consumer(SimGpu gpu, DeviceBuffer flags, DeviceBuffer bufs, DeviceBuffer res, GpuStream stream,
                            int senders) {
        static Consumer launch(final SimGpu gpu, final Poll poll, final long[] dataAddresses, final long n,
                               final int rounds, final long timeoutNs, final int grid) {
            final int senders = dataAddresses.length;
            final DeviceBuffer flags = gpu.alloc(4L * senders);
            final DeviceBuffer bufs = gpu.alloc(8L * senders);
            for (int s = 0; s < senders; s++) {
                mem(bufs).set(LE_LONG, 8L * s, dataAddresses[s]);
            }
            final DeviceBuffer res = gpu.alloc(VisKernels.resultBytes(rounds, senders));
            final GpuStream stream = gpu.createNonBlockingStream();
            gpu.launch(gpu.function(SimKernels.MODULE, poll.kernel()), Dim3.of(grid), Dim3.of(128), stream,
                new KernelArgs(8).ptr(flags).ptr(bufs).u32(senders).u64(n).u32(rounds).u32(SEED).u64(timeoutNs)
                    .ptr(res));
            return new Consumer(gpu, flags, bufs, res, stream, senders);
        }

        void publish(final int sender, final int round) {
            VisKernels.publish(mem(flags), sender, round);
        }

        Slot await(final int sender, final int round) {
            return VisKernels.await(mem(res), round, sender, senders, TIMEOUT);
        }

        void finish() {
            gpu.synchronize(stream, TIMEOUT);
        }
    }

    private static void assertSlot(final long[] want, final Slot got, final int round, final String what) {
        assertCounts(want, got, what);
        assertEquals(round, got.round(), what);
        assertTrue(got.polls() >= 1, what + ": polls " + got.polls());
    }

    @Test
    void persistentConsumersReportOkPartialReorderedAndStaleRoundsExactly() {
        final int n = 8192;
        final int k = 2500;
        for (final Poll poll : Poll.values()) {
            try (SimGpu gpu = SimGpu.create(SimPreset.H200, deterministic(2))) {
                final DeviceBuffer data = gpu.alloc(n);
                final Consumer c = Consumer.launch(gpu, poll, new long[] {data.address()}, n, 5, Long.MAX_VALUE, 1);
                final long[][] want = {
                    {0, -1, n, 0},          // 1: all of round 1
                    {n - k, k, k, n - k},   // 2: a prefix of round 2, the rest still round 1
                    {k, 0, n, k},           // 3: round 3 after position k, round 2 before
                    {0, -1, n, 0},          // 4: all of round 4
                    {n, 0, 0, n},           // 5: the write was skipped: all round 4
                };
                final String[] what = {"ok", "partial", "reordered", "ok", "stale"};
                for (int r = 1; r <= 5; r++) {
                    switch (r) {
                        case 2 -> land(data, 0, k, 2);
                        case 3 -> land(data, k, n, 3);
                        case 5 -> { }
                        default -> land(data, 0, n, r);
                    }
                    c.publish(0, r);
                    final Slot s = c.await(0, r);
                    assertSlot(want[r - 1], s, r, poll + " round " + r);
                    assertEquals(what[r - 1], s.what(n), poll + " round " + r);
                    assertEquals(false, s.timedOut());
                    assertEquals(0, mem(c.res()).get(LE_LONG, VisKernels.slotOffset(r, 0, 1) + 48), "word 6");
                }
                c.finish();
            }
        }
    }

    @Test
    void aPollTimesOutOnTheGpuClockThenTheNextRoundStillRuns() {
        final int n = 4096;
        try (SimGpu gpu = SimGpu.create(SimPreset.H200, SimGpuConfig.deterministic(3, NanoClock.SYSTEM))) {
            final DeviceBuffer data = gpu.alloc(n);
            final Consumer c = Consumer.launch(gpu, Poll.ACQUIRE, new long[] {data.address()}, n, 3, 20_000_000L, 1);
            land(data, 0, n, 1);
            c.publish(0, 1);
            assertSlot(new long[] {0, -1, n, 0}, c.await(0, 1), 1, "round 1");
            // round 2 is never granted: after 20 ms of GPU time the slot says so
            final Slot timedOut = c.await(0, 2);
            assertTrue(timedOut.timedOut());
            assertSlot(new long[] {n, -1, 0, 0}, timedOut, 2, "round 2");
            assertEquals("timeout", timedOut.what(n));
            land(data, 0, n, 3);
            c.publish(0, 3);
            assertSlot(new long[] {0, -1, n, 0}, c.await(0, 3), 3, "round 3");
            c.finish();
        }
    }

    @Test
    void aManualClockTimesOutWhenTheTestAdvancesItAndTheWallClockOnlyGuards() throws InterruptedException {
        final int n = 256;
        final ManualClock clock = new ManualClock(0);
        // defaultTimeout 100 ms: the wall-clock guard of a poll whose GPU clock never moves
        final SimGpuConfig config = SimGpuConfig.deterministic(4, clock).defaultTimeout(Duration.ofMillis(100));
        try (SimGpu gpu = SimGpu.create(SimPreset.H200, config)) {
            final DeviceBuffer data = gpu.alloc(n);
            // 1 h of GPU time: the wall-clock guard is max(1 h, 100 ms), so only the test's advance ends the poll
            final long hour = 3_600_000_000_000L;
            final Consumer c = Consumer.launch(gpu, Poll.VOLATILE, new long[] {data.address()}, n, 1, hour, 1);
            Thread.sleep(300);
            assertTrue(!VisKernels.ready(mem(c.res()), 1, 0, 1), "timed out before the GPU clock moved");
            final long t0 = System.nanoTime();
            while (!VisKernels.ready(mem(c.res()), 1, 0, 1)) {
                clock.advance(hour);
                Thread.onSpinWait();
                assertTrue(System.nanoTime() - t0 < TIMEOUT.toNanos(), "round 1 never timed out");
            }
            final Slot r1 = c.await(0, 1);
            assertTrue(r1.timedOut());
            assertSlot(new long[] {n, -1, 0, 0}, r1, 1, "round 1, manual clock advanced");
            c.finish();
            // a short GPU-clock timeout that the clock never reaches: the wall clock ends it after defaultTimeout
            final Consumer g = Consumer.launch(gpu, Poll.PLAIN, new long[] {data.address()}, n, 1, 1_000, 1);
            final long w0 = System.nanoTime();
            final Slot guarded = g.await(0, 1);
            assertTrue(guarded.timedOut());
            assertTrue(System.nanoTime() - w0 >= 90_000_000L, "guard waited about defaultTimeout");
            g.finish();
        }
    }

    /** One sender's action in one round of the table test. */
    private enum Action { FULL, SKIP, PREFIX, SUFFIX }

    /** Runs 8 senders x 4 rounds on a grid of 4 blocks (each serves two senders); returns the table, polls zeroed. */
    private static List<List<Long>> senderTable(final long scenarioSeed, final Poll poll) {
        final int senders = 8;
        final int rounds = 4;
        final int n = 3000;
        final SplittableRandom rnd = new SplittableRandom(scenarioSeed);
        final List<List<Long>> table = new ArrayList<>();
        try (SimGpu gpu = SimGpu.create(SimPreset.H200, deterministic(5))) {
            // one allocation sliced per sender: the kernel gets interior pointers
            final DeviceBuffer all = gpu.alloc((long) senders * n);
            final long[] addrs = new long[senders];
            final byte[][] model = new byte[senders][n]; // what the test wrote, as the oracle sees it
            for (int s = 0; s < senders; s++) {
                addrs[s] = all.address() + (long) s * n;
                land(all, (long) s * n, (long) (s + 1) * n, 0);
            }
            final Consumer c = Consumer.launch(gpu, poll, addrs, n, rounds, Long.MAX_VALUE, 4);
            for (int r = 1; r <= rounds; r++) {
                for (int s = 0; s < senders; s++) {
                    final Action a = Action.values()[rnd.nextInt(Action.values().length)];
                    final int k = 1 + rnd.nextInt(n - 1);
                    final long from = a == Action.SUFFIX ? k : 0;
                    final long to = switch (a) {
                        case FULL, SUFFIX -> n;
                        case PREFIX -> k;
                        case SKIP -> 0;
                    };
                    if (to > from) {
                        Pattern.fill(mem(all), (long) s * n + from, to - from, from, r, SEED);
                    }
                    MemorySegment.copy(mem(all), ValueLayout.JAVA_BYTE, (long) s * n, model[s], 0, n);
                    c.publish(s, r);
                }
                for (int s = 0; s < senders; s++) {
                    final Slot got = c.await(s, r);
                    assertCounts(oracle(model[s], r), got, poll + " round " + r + " sender " + s);
                    table.add(List.of((long) r, (long) s, got.bad(), got.first(), got.last(), got.prev(),
                        got.timedOut() ? 1L : 0L, got.round()));
                }
            }
            c.finish();
        }
        return table;
    }

    /** The reference count, written independently of the kernels: {bad, first, last, prev}. */
    private static long[] oracle(final byte[] data, final int round) {
        long bad = 0;
        long first = -1;
        long last = 0;
        long prev = 0;
        for (int i = 0; i < data.length; i++) {
            if (data[i] == Pattern.at(i, round, SEED)) {
                last = i + 1;
                continue;
            }
            bad++;
            first = first < 0 ? i : first;
            prev += data[i] == Pattern.at(i, round - 1, SEED) ? 1 : 0;
        }
        return new long[] {bad, first, last, prev};
    }

    @Test
    void manySendersIntoOneConsumerGiveAnExactReproducibleTable() {
        final List<List<Long>> first = senderTable(99, Poll.ACQUIRE);
        assertEquals(32, first.size());
        assertEquals(first, senderTable(99, Poll.ACQUIRE), "same scenario, same table");
        assertEquals(first, senderTable(99, Poll.PLAIN), "the sim's variants agree");
        final long kinds = first.stream().map(row -> row.get(2) == 0 ? "ok" : row.get(2) == 3000 ? "stale" : "part")
            .distinct().count();
        assertEquals(3, kinds, "scenario 99 has ok, stale and partial/reordered rounds: " + first);
    }

    @Test
    void aConsumerOnAPeerGpuNeedsAFlushToAllDevicesUnderOwnerOrdering() {
        final int n = 4096;
        try (SimGpuSystem sys = SimGpuSystem.create(deterministic(6), SimPreset.H100, SimPreset.H100);
             Arena a = Arena.ofShared()) {
            final SimGpu owner = sys.gpu(0);
            final SimGpu peer = sys.gpu(1);
            final DeviceBuffer data = owner.alloc(n);
            land(data, 0, n, 1);
            // without peer access the consumer's first read of GPU 0's memory faults
            final Consumer denied = Consumer.launch(peer, Poll.ACQUIRE, new long[] {data.address()}, n, 1,
                Long.MAX_VALUE, 1);
            denied.publish(0, 1);
            final GpuException e = assertThrows(GpuException.class, denied::finish);
            assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS", e.errorName(), e.getMessage());
            sys.enablePeerAccess(1, 0);
            final Consumer c = Consumer.launch(peer, Poll.ACQUIRE, new long[] {data.address()}, n, 3, Long.MAX_VALUE,
                1);
            c.publish(0, 1);
            assertSlot(new long[] {0, -1, n, 0}, c.await(0, 1), 1, "round 1 (landed and retired)");
            final var nic = owner.mapForNic(data);
            // round 2: the NIC's completion lands the writes for the owner (OWNER), not for the peer
            nic.write(0, SimTestSupport.patternHost(a, n, 2, SEED), 0, n);
            owner.nicCompletionFence();
            c.publish(0, 2);
            assertSlot(new long[] {n, 0, 0, n}, c.await(0, 2), 2, "round 2 on the peer: stale");
            assertEquals(0, SimTestSupport.verifyOnDevice(owner, data, 2, SEED), "the owner sees round 2");
            // round 3: the receiver flushes to all devices before it publishes
            nic.write(0, SimTestSupport.patternHost(a, n, 3, SEED), 0, n);
            owner.nicCompletionFence();
            owner.flushGpuDirectRdmaWrites(FlushScope.TO_ALL_DEVICES);
            c.publish(0, 3);
            assertSlot(new long[] {0, -1, n, 0}, c.await(0, 3), 3, "round 3 after TO_ALL_DEVICES");
            c.finish();
        }
    }

    @Test
    void aPointerOutsideEveryBufferIsAnIllegalAddress() {
        try (SimGpu gpu = SimGpu.create(SimPreset.H200, deterministic(7))) {
            final DeviceBuffer data = gpu.alloc(4096);
            // n larger than the buffer behind the pointer: the access runs past it
            final Consumer past = Consumer.launch(gpu, Poll.ACQUIRE, new long[] {data.address() + 1024}, 4096, 1,
                Long.MAX_VALUE, 1);
            past.publish(0, 1);
            assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS", assertThrows(GpuException.class, past::finish).errorName());
            final Consumer wild = Consumer.launch(gpu, Poll.ACQUIRE, new long[] {0x1234}, 16, 1, Long.MAX_VALUE, 1);
            wild.publish(0, 1);
            final GpuException e = assertThrows(GpuException.class, wild::finish);
            assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS", e.errorName());
            assertTrue(e.getMessage().contains("0x1234"), e.getMessage());
        }
    }

    /** Ordering NONE: a consumer already running sees exactly the posted chunks that landed before the flag. */
    private static List<Long> noneRound(final long seed, final int landings) {
        final int n = 4096; // 16 chunks of 256 B
        try (SimGpu gpu = SimGpu.create(SimPreset.V100, deterministic(seed)); Arena a = Arena.ofShared()) {
            final DeviceBuffer data = gpu.alloc(n);
            land(data, 0, n, 0);
            final Consumer c = Consumer.launch(gpu, Poll.ACQUIRE, new long[] {data.address()}, n, 1, Long.MAX_VALUE,
                1);
            gpu.mapForNic(data).write(0, SimTestSupport.patternHost(a, n, 1, SEED), 0, n);
            gpu.nicCompletionFence(); // NONE: nothing lands at completion
            for (int i = 0; i < landings; i++) {
                assertTrue(gpu.postedWrites().stepLanding());
            }
            final byte[] seen = mem(data).toArray(ValueLayout.JAVA_BYTE);
            c.publish(0, 1); // the receiver's CPU store: not a CUDA call, so it makes nothing visible
            final Slot s = c.await(0, 1);
            assertCounts(oracle(seen, 1), s, "seed " + seed);
            assertEquals((16L - landings) * 256, s.bad(), "exactly the chunks not landed are stale");
            assertEquals(s.bad(), s.prev());
            c.finish();
            return List.of(s.bad(), s.first(), s.last(), s.prev());
        }
    }

    @Test
    void underOrderingNoneTheRunningConsumerSeesExactlyWhatLandedReproducibly() {
        final List<Long> r = noneRound(42, 5);
        assertEquals(r, noneRound(42, 5), "same seed, same result");
        assertEquals(List.of(0L, -1L, 4096L, 0L), noneRound(42, 16), "everything landed: ok");
    }
}
