/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.BootstrapRoot;
import io.gdrkit.softnic.SoftNicDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Several software NICs per rank ({@code gdrkit.coll.nics}): channel c on NIC c mod nics, at least one channel per
 * NIC, every NIC carrying its share, the data exact on every fabric, the count chosen by fabric and processors when
 * auto, and ranks that disagree on it stopped with a named error.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class RailsTest {
    private static final SettingsReader NONE = new SettingsReader(Map.of(), Map.of(), Map.of());

    private static SettingsReader props(final String k, final String v) {
        return new SettingsReader(Map.of(), Map.of(k, v), Map.of());
    }

    private static SettingsReader env(final String k, final String v) {
        return new SettingsReader(Map.of(k, v), Map.of(), Map.of());
    }

    /** An allreduce of {@code count} floats and an allgather, checked element by element. */
    private static void allReduceAndGather(final Communicator c, final int rank, final Arena a, final int count) {
        final int n = c.nranks();
        final MemorySegment s = a.allocate(count * 4L, 64);
        for (int i = 0; i < count; i++) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT, i, rank + i % 1000);
        }
        final RegisteredBuffer b = c.register(s);
        Collectives.allReduce(c, b, b, count, DataType.FLOAT32, RedOp.SUM);
        final float ranks = n * (n - 1) / 2f;
        for (int i = 0; i < count; i++) {
            assertEquals(ranks + n * (i % 1000), s.getAtIndex(ValueLayout.JAVA_FLOAT, i), "element " + i);
        }
        final int per = count / n;
        final MemorySegment mine = a.allocate(per * 4L, 64);
        for (int i = 0; i < per; i++) {
            mine.setAtIndex(ValueLayout.JAVA_INT, i, rank * 1_000_003 + i);
        }
        final MemorySegment g = a.allocate(per * 4L * n, 64);
        final RegisteredBuffer mb = c.register(mine);
        final RegisteredBuffer gb = c.register(g);
        Collectives.allGather(c, mb, gb, per, DataType.INT32);
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < per; i++) {
                assertEquals(r * 1_000_003 + i, g.getAtIndex(ValueLayout.JAVA_INT, r * per + i), "rank " + r
                    + " element " + i);
            }
        }
        c.deregister(b);
        c.deregister(mb);
        c.deregister(gb);
    }

    /**
     * Worlds on the caller's in-JVM driver, one after the other: each takes its NICs off the driver at close, so the
     * next can use the same names (the second failed with "device name 'coll-rank0-nic0' already used" before) and
     * the driver does not keep idle NICs (and their threads) of worlds long closed.
     */
    @Test
    void worldsOneAfterAnotherShareTheCallersDriver() throws Exception {
        final int np = 2;
        try (SoftNicDriver driver = SoftNicDriver.launch(CollWorld.nicContext())) {
            for (int round = 0; round < 3; round++) {
                final int[] onDriver = new int[np];
                final Throwable[] err = ThreadRanks.worlds(np, (rank, b) -> CollWorld.open(b, new WorldContext()
                    .fabric(Fabric.INJVM).sharedDriver(driver).transport(CollWorld.TransportKind.IB)
                    .coll(new CollContext().algo(CollContext.Algo.RING).nics(2)).settings(NONE).timeout(Duration.ofSeconds(20))),
                    Duration.ofSeconds(120), (rank, w, a) -> {
                        allReduceAndGather(w.communicator(), rank, a, 4096);
                        onDriver[rank] = driver.devices().size();
                    });
                assertNull(err[0], "round " + round);
                assertNull(err[1], "round " + round);
                // while open: 2 NICs of its own and at most 2 of the other rank, whatever the order of closing
                assertTrue(onDriver[0] >= 2 && onDriver[0] <= 4, "round " + round + ": " + onDriver[0]);
                assertEquals(List.of(), driver.devices(), "round " + round + ": NICs left on the driver");
            }
        }
    }

    @Test
    void channelsSpreadOverTheNicsAndEachNicCarriesItsShare() throws Exception {
        final int np = 2;
        final int count = 1 << 18; // 1 MiB of floats
        final AtomicLongArray fromLid = new AtomicLongArray(64);
        final int[][] lids = new int[np][];
        final Throwable[] err;
        try (SoftNicDriver driver = SoftNicDriver.launch(CollWorld.nicContext())) {
            driver.linkHook((src, dst, buf, off, len) -> {
                fromLid.addAndGet(src, len);
                return 0;
            });
            err = ThreadRanks.worlds(np, (rank, b) -> CollWorld.open(b, new WorldContext().fabric(Fabric.INJVM)
                .sharedDriver(driver).transport(CollWorld.TransportKind.IB).coll(new CollContext().algo(CollContext.Algo.RING).nics(2))
                .settings(NONE).timeout(Duration.ofSeconds(20))), Duration.ofSeconds(120), (rank, w, a) -> {
                    final Communicator c = w.communicator();
                    assertEquals(2, c.devices());
                    assertEquals(2, c.channels(), "NCCL_MIN_NCHANNELS (1) raised to the NICs");
                    allReduceAndGather(c, rank, a, count);
                    // this rank's NICs, while they are on the driver (the world takes them off at close)
                    final List<Integer> mine = new ArrayList<>();
                    for (final io.gdrkit.verbs.Device d : driver.devices()) {
                        if (d.name().startsWith("coll-rank" + rank + "-nic")) {
                            mine.add(((io.gdrkit.softnic.SoftDevice) d).lid());
                        }
                    }
                    lids[rank] = mine.stream().mapToInt(Integer::intValue).toArray();
                });
            assertEquals(List.of(), driver.devices(), "the worlds took their NICs off the shared driver at close");
        }
        assertNull(err[0]);
        assertNull(err[1]);
        for (int r = 0; r < np; r++) {
            assertEquals(2, lids[r].length, "rank " + r + " has coll-rank" + r + "-nic0 and -nic1");
            for (final int lid : lids[r]) {
                // each rank sends 2 x 512 KiB in the allreduce: half on each NIC, less the eager heads
                assertTrue(fromLid.get(lid) >= 256 << 10, "rank " + r + "'s NIC with LID " + lid + " sent only "
                    + fromLid.get(lid) + " bytes");
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"shm", "tcp"})
    void twoNicsPerRankAreExactOnEachFabric(final String fabric) throws Exception {
        final int n = 2;
        final Duration t = Duration.ofSeconds(30);
        try (BootstrapRoot root = BootstrapRoot.startLoopback(n, t)) {
            final ExecutorService ex = Executors.newFixedThreadPool(n);
            final List<Future<?>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                final int rank = r;
                fs.add(ex.submit(() -> {
                    try (Arena a = Arena.ofShared();
                         Bootstrap b = Bootstrap.init(new BootstrapContext().id(root.id()).rank(rank).nranks(n)
                             .timeout(t));
                         CollWorld w = CollWorld.open(b, new WorldContext().fabric(Fabric.parse(fabric))
                             .transport(CollWorld.TransportKind.IB).coll(new CollContext().nics(2).buffSize(1 << 18)
                             .settings(NONE)).settings(NONE).timeout(t))) {
                        final Communicator c = w.communicator();
                        assertEquals(2, c.devices());
                        assertTrue(c.nicProgress().endsWith("; 2 NICs per rank (gdrkit.coll.nics=2 (flag))"),
                            c.nicProgress());
                        allReduceAndGather(c, rank, a, 100_000);
                    }
                    return null;
                }));
            }
            for (final Future<?> f : fs) {
                f.get(180, TimeUnit.SECONDS);
            }
            ex.shutdown();
        }
    }

    @Test
    void ranksWithDifferentNicCountsAreStoppedWithANamedError() throws Exception {
        final Throwable[] err = ThreadRanks.run(2, CollWorld.TransportKind.IB,
            rank -> new CollContext().nics(rank == 0 ? 2 : 1), NONE, Duration.ofSeconds(60), (rank, c, a) -> {
                throw new AssertionError("the communicator opened");
            });
        for (int r = 0; r < 2; r++) {
            assertInstanceOf(CollException.class, err[r], "rank " + r + ": " + err[r]);
        }
        assertTrue(err[0].getMessage().contains("rank 1 has 1 network devices, rank 0 has 2"), err[0].getMessage());
        assertTrue(err[1].getMessage().contains("rank 0 has 2 network devices, rank 1 has 1"), err[1].getMessage());
    }

    @ParameterizedTest(name = "{0} ranks, {1} processors, {2}: {3}")
    @CsvSource({"2,16,shm,2", "2,16,tcp,4", "2,12,tcp,3", "2,10,tcp,2", "2,9,tcp,1", "2,2,shm,1", "4,16,shm,1",
        "3,16,shm,2", "2,64,injvm,1"})
    void autoChoosesByFabricAndProcessors(final int ranks, final int cpus, final String fabric, final int want) {
        final CollContext c = new CollContext().settings(NONE).conclude();
        final CollWorld.NicChoice ch = CollWorld.chooseNics(c, fabric, ranks, cpus);
        assertEquals(want, ch.count());
        assertEquals(Source.DEFAULT, c.nicsSetting().source());
        if (fabric.equals("injvm")) {
            assertEquals("auto: one NIC on the injvm fabric", ch.why());
        } else if (want == 1) {
            assertEquals("auto: " + cpus + " processors < 5 x " + ranks + " ranks on this host", ch.why());
        } else {
            assertEquals("auto: " + cpus + " processors >= " + (3 + want) + " x " + ranks + " ranks on this host, "
                + fabric + " prefers " + CollWorld.preferredNics(fabric), ch.why());
        }
        // a value given is taken as is, whatever the host
        final CollWorld.NicChoice set = CollWorld.chooseNics(new CollContext().settings(props("gdrkit.coll.nics",
            "3")).conclude(), fabric, ranks, cpus);
        assertEquals(new CollWorld.NicChoice(3, "gdrkit.coll.nics=3 (property)"), set);
        // reduce threads leave a processor per NIC thread, and past the first NIC one more each
        final ParallelReducer.Choice red = c.chooseReduceThreads(ranks, cpus, want);
        assertEquals(cpus < (3 + want) * ranks ? 1 : Math.max(1, Math.min(4, cpus / ranks - (2 * want - 1))),
            red.threads(), red.describe());
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "17", "-1", "two", "2.0"})
    void aMalformedNicCountIsNamed(final String v) {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new CollContext().settings(props("gdrkit.coll.nics", v)).conclude());
        assertEquals("gdrkit.coll.nics=" + v + " is not auto or an integer in [1, 16]", e.getMessage());
        assertEquals("gdrkit.coll.nics=17 is not auto or an integer in [1, 16]", assertThrows(
            IllegalArgumentException.class, () -> new CollContext().settings(NONE).nics(17).conclude()).getMessage());
        assertEquals(Source.PROPERTY, new CollContext().settings(props("gdrkit.coll.nics", "auto")).conclude()
            .nicsSetting().source());
    }

    @Test
    void autoReduceThreadsFollowTheNicsMeasuredChoices() {
        final CollContext c = new CollContext().settings(NONE).conclude();
        // the 16-core H200 host, 2 ranks: 2 NICs over shm with 4 threads, 4 over tcp with 1 (docs/PERFORMANCE.md)
        final ParallelReducer.Choice shm = c.chooseReduceThreads(2, 16, 2);
        assertEquals(4, shm.threads());
        assertEquals("auto: 16 processors >= 5 x 2 ranks on this host, min(4, 16 / 2 - 3 for 2 NIC threads and their "
            + "kernel work)", shm.reason());
        assertEquals(1, c.chooseReduceThreads(2, 16, 4).threads());
        assertEquals(4, c.chooseReduceThreads(2, 16, 1).threads(), "one NIC: as before");
        assertEquals(1, c.chooseReduceThreads(2, 9, 2).threads(), "9 < 5 x 2");
    }

    @Test
    void channelsAreAtLeastTheNicsAndAtMostTheMax() {
        final CollContext c = new CollContext().settings(NONE).conclude();
        assertEquals(1, c.channelsFor(1));
        assertEquals(4, c.channelsFor(4));
        final CollContext capped = new CollContext().settings(env("NCCL_MAX_NCHANNELS", "2")).conclude();
        assertEquals(2, capped.channelsFor(4));
        final CollContext more = new CollContext().settings(env("NCCL_MIN_NCHANNELS", "6")).conclude();
        assertEquals(6, more.channelsFor(2));
    }

    @Test
    void smallExchangesAreCutSoEveryChannelCarriesAShare() {
        final int chunk = 512 << 10;
        assertEquals(chunk, Communicator.chunkFor(100, chunk, 1), "one channel: as before");
        assertEquals(chunk, Communicator.chunkFor(8L << 20, chunk, 4), "enough for every channel: as before");
        assertEquals(chunk, Communicator.chunkFor(4L * chunk, chunk, 4));
        assertEquals(Communicator.MIN_SPLIT_CHUNK, Communicator.chunkFor(1000, chunk, 4), "never below 16 KiB");
        assertEquals(4096, Communicator.chunkFor(1000, 4096, 4), "nor above the chunk");
        for (final long bytes : new long[] {65536, 100_003, 1 << 20, 3 * chunk + 8, 4L * chunk - 8}) {
            for (final int ch : new int[] {2, 3, 4, 8}) {
                final int ck = Communicator.chunkFor(bytes, chunk, ch);
                assertTrue(ck <= chunk && ck >= Communicator.MIN_SPLIT_CHUNK, bytes + " over " + ch + ": " + ck);
                assertEquals(0, ck % 128, "a multiple of 128: " + ck);
                final long chunks = (bytes + ck - 1) / ck;
                assertTrue(chunks <= ch || ck == chunk, bytes + " over " + ch + " channels: " + chunks + " chunks");
                assertTrue(chunks >= Math.min(ch, bytes / Communicator.MIN_SPLIT_CHUNK), bytes + " over " + ch
                    + " channels: only " + chunks + " chunks of " + ck);
            }
        }
    }
}
