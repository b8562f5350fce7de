/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static io.gdrkit.comm.ThreadRanks.assertNoErrors;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.softnic.SoftNicDriver;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.IntFunction;
import java.util.function.IntUnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hierarchical path ({@link HierCollectives}) on ranks that say they are on two hosts: threads of this JVM over
 * the in-JVM fabric, each host's shared memory under a base of its own (host 0 under /dev/shm, host 1 under a
 * directory of the test, as each host has its own /dev/shm). 2 hosts x 2 ranks (interleaved: host of rank r is
 * r mod 2) and 2 hosts x 3 ranks (blocked), every element of every rank checked for allreduce (int32 sum, float sum
 * whose bits must be the fixed order's on every rank), reduce-scatter, allgather and broadcast, in place and out of
 * place, 1 element to 3 MiB with odd counts; the other operations keep the transport and stay right; an unequal split falls back with
 * its reason; NCCL_ALGO forces or excludes the path; a peer that dies, stalls or writes a round that is not this one
 * ends the others with a named error and leaves no file behind.
 */
class HierCollectivesTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());
    private static final Path SHM = Path.of("/dev/shm");
    /** Element counts: 1, odd small ones, across LL (8 KiB), a slot (256 KiB) and up to 3 MiB of int32. */
    private static final long[] COUNTS = {1, 2, 3, 7, 2049, 65_537, 262_147, 786_433};
    private static final long[] SMALL = {1, 5, 3001};

    @TempDir
    Path otherHost;

    private static CollContext ctx() {
        return new CollContext().channels(1).timeout(Duration.ofSeconds(5)).settings(NONE);
    }

    /**
     * Runs {@code body} on {@code np} ranks, rank r on host {@code hostOf(r)} with that host's shm base (host 0:
     * /dev/shm, host h: {@code otherHost}/hostH), and returns each rank's error.
     */
    private Throwable[] ranks(final int np, final IntUnaryOperator hostOf, final IntFunction<CollContext> ctx,
                              final ThreadRanks.Body body) throws Exception {
        for (int h = 1; h < np; h++) {
            Files.createDirectories(otherHost.resolve("host" + h));
        }
        return ranks(np, hostOf, h -> h == 0 ? SHM : otherHost.resolve("host" + h), ctx, body);
    }

    /** As above, host h's shared memory under {@code base(h)}. */
    private static Throwable[] ranks(final int np, final IntUnaryOperator hostOf, final IntFunction<Path> base,
                                     final IntFunction<CollContext> ctx, final ThreadRanks.Body body)
        throws Exception {
        try (SoftNicDriver driver = SoftNicDriver.launch(CollWorld.nicContext())) {
            return ThreadRanks.worlds(np, (rank, b) -> CollWorld.open(b, new WorldContext().fabric(Fabric.INJVM)
                .sharedDriver(driver).transport(CollWorld.TransportKind.IB).coll(ctx.apply(rank)).settings(NONE)
                .timeout(Duration.ofSeconds(20)), CollWorld.Here.played(4, "boot:fake-host-" + hostOf.applyAsInt(
                rank), base.apply(hostOf.applyAsInt(rank)))), Duration.ofSeconds(240),
                (rank, w, a) -> body.run(rank, w.communicator(), a));
        }
    }

    /** Rank r's element i: small integers, exact in int32 sums. */
    private static int in(final int r, final long i) {
        return (int) ((r * 7919L + i * 31L) % 100_003L) - 50_000;
    }

    private static void fill(final MemorySegment m, final int r, final long count) {
        for (long i = 0; i < count; i++) {
            m.setAtIndex(ValueLayout.JAVA_INT, i, in(r, i));
        }
    }

    private static int at(final MemorySegment m, final long i) {
        return m.getAtIndex(ValueLayout.JAVA_INT, i);
    }

    private static int sum(final int np, final long i) {
        int s = 0;
        for (int p = 0; p < np; p++) {
            s += in(p, i);
        }
        return s;
    }

    /**
     * Rank r's float element i from {@code seed} (a SplitMix64 hash): fractions over 12 binary orders of magnitude,
     * whose sum depends on the order of the additions.
     */
    private static float fin(final long seed, final int r, final long i) {
        long z = seed + r * 0x9E3779B97F4A7C15L + i * 0xD1B54A32D192ED03L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return (float) ((z >>> 40) - (1 << 23)) / 7.0f * (1 << (int) ((z & 3) * 4));
    }

    /**
     * The hierarchical order on 2 hosts: each host's ranks in ascending order, then host 0's sum plus host 1's (the
     * two-host ring adds the peer's partial to this one's; float addition commutes).
     */
    private static float fsum(final long seed, final int np, final IntUnaryOperator hostOf, final long i) {
        final float[] host = new float[2];
        final boolean[] first = {true, true};
        for (int p = 0; p < np; p++) {
            final int h = hostOf.applyAsInt(p);
            host[h] = first[h] ? fin(seed, p, i) : host[h] + fin(seed, p, i);
            first[h] = false;
        }
        return host[0] + host[1];
    }

    /** Every hierarchical operation at every count, in place and out of place, every element of every rank. */
    private void everyOp(final int np, final IntUnaryOperator hostOf, final long[] counts) throws Exception {
        final long seed = 0x5eed_2026L;
        assertNoErrors(ranks(np, hostOf, r -> ctx(), (rank, c, a) -> {
            final long max = counts[counts.length - 1];
            final MemorySegment sm = a.allocate(max * 4 * np, 64);
            final MemorySegment rm = a.allocate(max * 4 * np, 64);
            final RegisteredBuffer s = c.register(sm);
            final RegisteredBuffer d = c.register(rm);
            final RegisteredBuffer scratch = c.register(a.allocate(max * 4 * np, 64));
            for (final long n : counts) {
                for (final boolean inPlace : new boolean[] {false, true}) {
                    final String what = np + " ranks on 2 hosts, " + n + " elements" + (inPlace ? ", in place" : "");
                    final CollTuning.Choice ch = c.choose(CollOp.ALLREDUCE, n * 4);
                    assertEquals("hier/shm+net", ch.algo() + "/" + ch.path(), what);
                    assertEquals("hier/shm+net", c.choose(CollOp.ALLGATHER, n * 4 * np).algo() + "/"
                        + c.choose(CollOp.ALLGATHER, n * 4 * np).path(), what);
                    assertEquals("hier/shm+net", c.choose(CollOp.BROADCAST, n * 4).algo() + "/"
                        + c.choose(CollOp.BROADCAST, n * 4).path(), what);
                    // allreduce, int32 sum
                    fill(sm, rank, n);
                    rm.fill((byte) 0x5a);
                    Collectives.allReduce(c, s, inPlace ? s : d, n, DataType.INT32, RedOp.SUM);
                    final MemorySegment ar = inPlace ? sm : rm;
                    for (long i = 0; i < n; i++) {
                        if (at(ar, i) != sum(np, i)) {
                            throw new AssertionError("allreduce " + what + ": element " + i + " is " + at(ar, i)
                                + ", expected " + sum(np, i));
                        }
                    }
                    // allreduce, float sum: the fixed order's bits on every rank
                    for (long i = 0; i < n; i++) {
                        sm.setAtIndex(ValueLayout.JAVA_FLOAT, i, fin(seed, rank, i));
                    }
                    rm.fill((byte) 0x5a);
                    Collectives.allReduce(c, s, inPlace ? s : d, n, DataType.FLOAT32, RedOp.SUM);
                    for (long i = 0; i < n; i++) {
                        final float got = ar.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                        final float want = fsum(seed, np, hostOf, i);
                        if (Float.floatToRawIntBits(got) != Float.floatToRawIntBits(want)) {
                            throw new AssertionError("float allreduce " + what + " (seed " + seed + "): element "
                                + i + " is " + got + ", expected " + want);
                        }
                    }
                    // broadcast from a rank of each host
                    for (final int root : new int[] {1, np - 2}) {
                        fill(sm, rank, n);
                        rm.fill((byte) 0x5a);
                        Collectives.broadcast(c, s, inPlace ? s : d, n, DataType.INT32, root);
                        for (long i = 0; i < n; i++) {
                            if (at(inPlace ? sm : rm, i) != in(root, i)) {
                                throw new AssertionError("broadcast from " + root + " " + what + ": element " + i);
                            }
                        }
                    }
                    // reduce-scatter: np blocks of n; rank r gets block r; rank p's block b element i is in(p, b*n+i)
                    if (n * np <= 2_000_000) {
                        assertEquals("hier/shm+net", c.choose(CollOp.REDUCE_SCATTER, n * 4 * np).algo() + "/"
                            + c.choose(CollOp.REDUCE_SCATTER, n * 4 * np).path(), what);
                        fill(sm, rank, n * np);
                        rm.fill((byte) 0x5a);
                        // in place: recv is this rank's block of send
                        final RegisteredBuffer out = inPlace ? c.register(sm.asSlice(rank * n * 4, n * 4)) : d;
                        Collectives.reduceScatter(c, s, scratch, out, n, DataType.INT32, RedOp.SUM);
                        for (long i = 0; i < n; i++) {
                            if (at(out.seg(), i) != sum(np, rank * n + i)) {
                                throw new AssertionError("reduce_scatter " + what + ": element " + i);
                            }
                        }
                    }
                    // allgather: n elements per rank
                    if (n * np <= 2_000_000) {
                        fill(sm, rank, n);
                        rm.fill((byte) 0x5a);
                        if (inPlace) {
                            MemorySegment.copy(sm, 0, rm, rank * n * 4, n * 4);
                            Collectives.allGather(c, c.register(rm.asSlice(rank * n * 4, n * 4)), d, n,
                                DataType.INT32);
                        } else {
                            Collectives.allGather(c, s, d, n, DataType.INT32);
                        }
                        for (int p = 0; p < np; p++) {
                            for (long i = 0; i < n; i++) {
                                if (at(rm, p * n + i) != in(p, i)) {
                                    throw new AssertionError("allgather " + what + ": block " + p + " element " + i);
                                }
                            }
                        }
                    }
                }
            }
            otherOpsStayOnTheTransport(np, rank, c, a);
        }));
    }

    /** Reduce, alltoall and sendrecv keep the transport beside the hierarchical path, and stay right. */
    private static void otherOpsStayOnTheTransport(final int np, final int rank, final Communicator c,
                                                   final java.lang.foreign.Arena a) {
        final long n = 3001;
        final MemorySegment sm = a.allocate(n * 4 * np, 64);
        final MemorySegment rm = a.allocate(n * 4 * np, 64);
        final RegisteredBuffer s = c.register(sm);
        final RegisteredBuffer d = c.register(rm);
        for (final CollOp op : new CollOp[] {CollOp.REDUCE, CollOp.ALLTOALL, CollOp.SENDRECV}) {
            final CollTuning.Choice ch = c.choose(op, n * 4);
            assertEquals("net", ch.path(), op + ": " + ch.why());
            assertTrue(ch.why().contains("carries allreduce, allgather, reduce-scatter and broadcast; " + op.testName()
                + " takes the transport"), ch.why());
        }
        fill(sm, rank, n);
        Collectives.reduce(c, s, d, n, DataType.INT32, RedOp.SUM, np - 1);
        for (long i = 0; rank == np - 1 && i < n; i++) {
            assertEquals(sum(np, i), at(rm, i), "reduce element " + i);
        }
        fill(sm, rank, n * np);
        Collectives.allToAll(c, s, d, n, DataType.INT32);
        for (int p = 0; p < np; p++) {
            for (long i = 0; i < n; i++) {
                assertEquals(in(p, rank * n + i), at(rm, p * n + i), "alltoall block " + p + " element " + i);
            }
        }
        fill(sm, rank, n);
        Collectives.sendRecv(c, s, d, n, DataType.INT32);
        for (long i = 0; i < n; i++) {
            assertEquals(in(Math.floorMod(rank - 1, np), i), at(rm, i), "sendrecv element " + i);
        }
        c.barrier();
    }

    @Test
    void twoHostsOfTwoRanksInterleaved() throws Exception {
        everyOp(4, r -> r % 2, COUNTS);
    }

    @Test
    void twoHostsOfThreeRanks() throws Exception {
        everyOp(6, r -> r / 3, COUNTS);
    }

    @Test
    void theRowsSayShmPlusNetHierAndWhy() throws Exception {
        assertNoErrors(ranks(4, r -> r / 2, r -> ctx(), (rank, c, a) -> {
            final CollTuning.Choice small = c.choose(CollOp.ALLREDUCE, 8);
            assertEquals("hier/LL/shm+net", small.algo() + "/" + small.proto() + "/" + small.path());
            assertTrue(small.why().startsWith("auto: ranks on several hosts (2 hosts x 2 ranks), reduce-scatter within "
                + "each host through shared memory"), small.why());
            final CollTuning.Choice big = c.choose(CollOp.ALLREDUCE, 1 << 22);
            assertEquals("hier/Simple/shm+net", big.algo() + "/" + big.proto() + "/" + big.path());
            assertTrue(big == c.choose(CollOp.ALLREDUCE, 1 << 23), "the same object for the same kind");
            assertTrue(c.choose(CollOp.BROADCAST, 64).why().contains("relays it host to host"));
            assertEquals(false, c.shmPathOpen());
            assertTrue(c.directPath().startsWith("nic, up to "), c.directPath());
            assertTrue(c.directPath().endsWith("(ranks on 2 hosts)"), c.directPath());
        }));
    }

    @Test
    void anUnequalSplitFallsBackToTheTransportAndSaysWhy() throws Exception {
        // 3 ranks: 2 on host 0, 1 on host 1
        assertNoErrors(ranks(3, r -> r / 2, r -> ctx(), (rank, c, a) -> {
            final CollTuning.Choice ch = c.choose(CollOp.ALLREDUCE, 1 << 20);
            assertEquals("ring/net", ch.algo() + "/" + ch.path());
            assertTrue(ch.why().contains("no hierarchical path: ranks per host differ (host 0: 2, host 1: 1): the "
                + "hierarchical path needs as many on each host"), ch.why());
            final long n = 70_001;
            final MemorySegment sm = a.allocate(n * 4, 64);
            final RegisteredBuffer s = c.register(sm);
            fill(sm, rank, n);
            Collectives.allReduce(c, s, s, n, DataType.INT32, RedOp.SUM);
            for (long i = 0; i < n; i++) {
                assertEquals(sum(3, i), at(sm, i), "element " + i);
            }
        }));
        // NCCL_ALGO=hier cannot have it either, and says so
        assertNoErrors(ranks(3, r -> r / 2, r -> ctx().algo(CollContext.Algo.HIER), (rank, c, a) -> {
            final CollTuning.Choice ch = c.choose(CollOp.ALLREDUCE, 1 << 20);
            assertEquals("net", ch.path());
            assertTrue(ch.why().startsWith("NCCL_ALGO=hier needs ranks on several hosts and each host's shared memory"),
                ch.why());
        }));
    }

    @Test
    void ncclAlgoForcesOrExcludesTheHierarchicalPath() throws Exception {
        // ring keeps the flat ring over the transport, with the same elements
        assertNoErrors(ranks(4, r -> r % 2, r -> ctx().algo(CollContext.Algo.RING).directBytes(0), (rank, c, a) -> {
            final CollTuning.Choice ch = c.choose(CollOp.ALLREDUCE, 4096);
            assertEquals("ring/net", ch.algo() + "/" + ch.path());
            assertTrue(ch.why().startsWith("NCCL_ALGO=ring takes the exchanges over the transport"), ch.why());
            final long n = 3001;
            final MemorySegment sm = a.allocate(n * 4, 64);
            final RegisteredBuffer s = c.register(sm);
            fill(sm, rank, n);
            Collectives.allReduce(c, s, s, n, DataType.INT32, RedOp.SUM);
            for (long i = 0; i < n; i++) {
                assertEquals(sum(4, i), at(sm, i), "element " + i);
            }
        }));
        // hier says it was asked for
        assertNoErrors(ranks(4, r -> r % 2, r -> ctx().algo(CollContext.Algo.HIER), (rank, c, a) -> {
            final CollTuning.Choice ch = c.choose(CollOp.ALLGATHER, 4096);
            assertEquals("hier/shm+net", ch.algo() + "/" + ch.path());
            assertTrue(ch.why().startsWith("NCCL_ALGO=hier: ranks on several hosts"), ch.why());
        }));
        // direct needs every rank on one host
        assertNoErrors(ranks(4, r -> r % 2, r -> ctx().algo(CollContext.Algo.DIRECT), (rank, c, a) -> {
            final CollTuning.Choice ch = c.choose(CollOp.ALLREDUCE, 4096);
            assertEquals("net", ch.path());
            assertTrue(ch.why().startsWith("NCCL_ALGO=direct needs every rank on one host"), ch.why());
        }));
        // shared memory off on one rank: no host opens it, every rank says which rank turned it off
        assertNoErrors(ranks(4, r -> r % 2, r -> ctx().shmDirect(r != 3), (rank, c, a) -> {
            final CollTuning.Choice ch = c.choose(CollOp.ALLREDUCE, 1 << 20);
            assertEquals("net", ch.path());
            assertTrue(ch.why().contains("no hierarchical path: each host's shared memory is not open: rank 3 has it "
                + "off (gdrkit.coll.shm.direct)"), ch.why());
        }));
    }

    @Test
    void hierOnOneHostIsTheShmPath() throws Exception {
        assertNoErrors(ThreadRanks.run(2, CollWorld.TransportKind.IB, r -> ctx().algo(CollContext.Algo.HIER), NONE,
            Duration.ofSeconds(60), (rank, c, a) -> {
                final CollTuning.Choice ch = c.choose(CollOp.ALLREDUCE, 1 << 20);
                assertEquals("rsag/shm", ch.algo() + "/" + ch.path());
                assertTrue(ch.why().startsWith("NCCL_ALGO=hier with every rank on one host, one level: auto: "),
                    ch.why());
            }));
    }

    @Test
    void aHostWhoseLeaderCannotMakeItsDirectoryKeepsEveryRankOnTheTransport() throws Exception {
        final String[] why = new String[4];
        // host 1's base does not exist: its lowest rank (1) proposes nothing, and every rank of both hosts says so
        assertNoErrors(ranks(4, r -> r % 2, h -> h == 0 ? SHM : otherHost.resolve("nowhere"), r -> ctx(),
            (rank, c, a) -> why[rank] = c.choose(CollOp.ALLREDUCE, 1 << 20).path() + "|"
                + c.choose(CollOp.ALLREDUCE, 1 << 20).why()));
        for (final String w : why) {
            assertTrue(w.startsWith("net|"), w);
            assertTrue(w.contains("no hierarchical path: each host's shared memory is not open: rank 1 could not "
                + "make the shared directory"), w);
            assertEquals(why[0], w, "the same answer on every rank");
        }
    }

    private static Set<String> files(final Path dir) throws IOException {
        final Set<String> out = new HashSet<>();
        if (Files.isDirectory(dir)) {
            try (Stream<Path> s = Files.list(dir)) {
                s.map(x -> x.getFileName().toString()).filter(x -> x.startsWith("gdrkit-colld-")).forEach(out::add);
            }
        }
        return out;
    }

    @Test
    void aPeerThatDiesEndsTheOthersWithANamedErrorAndLeavesNoFile() throws Exception {
        final Set<String> before = files(SHM);
        final Throwable[] err = ranks(4, r -> r % 2, r -> ctx(), (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(1 << 20, 64));
            Collectives.allReduce(c, s, s, 1000, DataType.INT32, RedOp.SUM);
            if (rank == 3) {
                throw new IllegalStateException("rank 3 dies");
            }
            Collectives.allReduce(c, s, s, 200_000, DataType.INT32, RedOp.SUM);
        });
        assertNotNull(err[3]);
        for (int r = 0; r < 3; r++) {
            assertTrue(err[r] instanceof CollException, "rank " + r + ": " + err[r]);
            assertTrue(err[r].getMessage().contains("stopped waiting for"), err[r].getMessage());
        }
        // rank 1 shares host 1 with rank 3 and waits for it in shared memory
        assertTrue(err[1].getMessage().contains("rank 3's shared-memory round"), err[1].getMessage());
        final Set<String> after = files(SHM);
        after.removeAll(before);
        assertEquals(Set.of(), after, "files left in /dev/shm");
        assertEquals(Set.of(), files(otherHost.resolve("host1")), "files left in host 1's shared memory");
    }

    @Test
    void aPeerThatStallsEndsTheOthersWithinTheTimeout() throws Exception {
        final Throwable[] err = ranks(4, r -> r % 2, r -> ctx().timeout(Duration.ofMillis(800)), (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(1 << 16, 64));
            if (rank == 3) {
                Thread.sleep(4000);
            }
            Collectives.allReduce(c, s, s, 4096, DataType.INT32, RedOp.SUM);
        });
        assertTrue(err[1] instanceof CollException, String.valueOf(err[1]));
        // rank 1 waits for its host's rank 3 in shared memory (until its timeout, or a rank that timed out first)
        assertTrue(err[1].getMessage().contains("for rank 3's shared-memory round"), err[1].getMessage());
        for (int r = 0; r < 3; r++) {
            assertTrue(err[r] instanceof CollException, "rank " + r + ": " + err[r]);
        }
    }

    @Test
    void aRoundThatIsNotThisOneIsNamedByWorldRank() throws Exception {
        final Throwable[] err = ranks(4, r -> r % 2, r -> ctx(), (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(4096, 64));
            if (rank == 3) {
                // a hostile rank 3 (index 1 of host 1) publishes a round of another operation and length
                final ShmDirect shm = c.hostShm();
                final long d = shm.nextRound();
                shm.publishWritten(d, 0x1234L, 12);
                Thread.sleep(2000);
                throw new IllegalStateException("rank 3 played a hostile peer");
            }
            Collectives.allReduce(c, s, s, 16, DataType.INT32, RedOp.SUM);
        });
        assertTrue(err[1] instanceof CollException, String.valueOf(err[1]));
        assertTrue(err[1].getMessage().contains("rank 3 wrote 12 bytes with header 0x1234"), err[1].getMessage());
        assertTrue(err[1].getMessage().startsWith("rank 1 "), err[1].getMessage());
    }

    @Test
    void theLayoutNeedsSeveralHostsWithAsManyRanksOnEach() {
        final HierCollectives.Layout two = HierCollectives.Layout.of(new int[] {0, 1, 0, 1, 0, 1});
        assertEquals("2 hosts x 3 ranks", two.why());
        assertArrayEquals(new int[] {0, 2, 4}, two.members()[0]);
        assertArrayEquals(new int[] {1, 3, 5}, two.members()[1]);
        assertNull(HierCollectives.Layout.of(new int[] {0, 0, 0}).members());
        assertEquals(HierCollectives.Layout.ONE_HOST, HierCollectives.Layout.of(new int[] {0, 0}).why());
        assertEquals("one rank per host: nothing to share within a host", HierCollectives.Layout.of(
            new int[] {0, 1, 2}).why());
        assertEquals("ranks per host differ (host 0: 2, host 1: 1, host 2: 2): the hierarchical path needs as many on "
            + "each host", HierCollectives.Layout.of(new int[] {0, 0, 1, 2, 2}).why());
        assertNull(HierCollectives.Layout.of(new int[] {0, 0, 1, 2, 2}).members());
    }
}
