/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static io.gdrkit.comm.ThreadRanks.shmRunFiles;
import static io.gdrkit.comm.ThreadRanks.assertNoErrors;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/**
 * Every collective through shared memory ({@link ShmCollectives}) when every rank is on one host: every operation
 * at 2, 3 and 4 ranks, sizes across the LL, direct and slot boundaries with odd element counts, every element of
 * every rank checked, in place and out of place; the tuning's choice and its overrides (NCCL_ALGO, NCCL_PROTO, bad
 * values named); a peer that dies or stalls, or writes a round that is not this one, ends the others with a named
 * error within the timeout and leaves nothing in /dev/shm.
 */
class ShmCollectivesTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());

    /** Element counts: one, odd small ones, across LL (8 KiB), the direct limit and the 256 KiB slot. */
    private static final long[] COUNTS = {1, 3, 2047, 2049, 21_847, 65_537, 150_001};

    private static Throwable[] ranks(final int np, final IntFunction<CollContext> ctx, final ThreadRanks.Body body)
        throws Exception {
        return ThreadRanks.run(np, CollWorld.TransportKind.IB, ctx, NONE, Duration.ofSeconds(120), body);
    }

    private static CollContext ctx() {
        return new CollContext().channels(1).timeout(Duration.ofSeconds(5)).settings(NONE);
    }

    /** Rank r's element i: small integers, exact in int32 sums over 4 ranks. */
    private static int in(final int r, final long i) {
        return (int) ((r * 7919L + i * 31L) % 100_003L) - 50_000;
    }

    private static void fill(final MemorySegment m, final int r, final long count) {
        for (long i = 0; i < count; i++) {
            m.setAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, i, in(r, i));
        }
    }

    private static int at(final MemorySegment m, final long i) {
        return m.getAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, i);
    }

    private static int sum(final int np, final long i) {
        int s = 0;
        for (int p = 0; p < np; p++) {
            s += in(p, i);
        }
        return s;
    }

    /** Runs every operation at every count on np ranks (through the tuning's choice) and checks every element. */
    private static void everyOp(final int np, final IntFunction<CollContext> ctx, final long[] counts,
                                final String path) throws Exception {
        assertNoErrors(ranks(np, ctx, (rank, c, a) -> {
            final long max = counts[counts.length - 1] * np;
            final MemorySegment sm = a.allocate(max * 4, 64);
            final MemorySegment rm = a.allocate(max * 4, 64);
            final RegisteredBuffer s = c.register(sm);
            final RegisteredBuffer d = c.register(rm);
            final RegisteredBuffer scratch = c.register(a.allocate(max * 4, 64));
            for (final long n : counts) {
                for (final boolean inPlace : new boolean[] {false, true}) {
                    final String what = np + " ranks, " + n + " elements" + (inPlace ? ", in place" : "");
                    assertEquals(path, c.choose(CollOp.ALLREDUCE, n * 4).path(), what);
                    // allreduce
                    fill(sm, rank, n);
                    rm.fill((byte) 0x5a);
                    Collectives.allReduce(c, s, inPlace ? s : d, n, DataType.INT32, RedOp.SUM);
                    final MemorySegment ar = inPlace ? sm : rm;
                    for (long i = 0; i < n; i++) {
                        if (at(ar, i) != sum(np, i)) {
                            throw new AssertionError("allreduce " + what + ": element " + i);
                        }
                    }
                    // reduce to the last rank
                    final int root = np - 1;
                    fill(sm, rank, n);
                    rm.fill((byte) 0x5a);
                    Collectives.reduce(c, s, inPlace ? s : d, n, DataType.INT32, RedOp.SUM, root);
                    if (rank == root) {
                        for (long i = 0; i < n; i++) {
                            if (at(inPlace ? sm : rm, i) != sum(np, i)) {
                                throw new AssertionError("reduce " + what + ": element " + i);
                            }
                        }
                    }
                    // broadcast from rank 1
                    fill(sm, rank, n);
                    rm.fill((byte) 0x5a);
                    Collectives.broadcast(c, s, inPlace ? s : d, n, DataType.INT32, 1);
                    for (long i = 0; i < n; i++) {
                        if (at(inPlace ? sm : rm, i) != in(1, i)) {
                            throw new AssertionError("broadcast " + what + ": element " + i);
                        }
                    }
                    // sendrecv: from rank - 1 (in place on the shm path only, as alltoall below)
                    final boolean srInPlace = inPlace && path.equals("shm");
                    fill(sm, rank, n);
                    rm.fill((byte) 0x5a);
                    Collectives.sendRecv(c, s, srInPlace ? s : d, n, DataType.INT32);
                    for (long i = 0; i < n; i++) {
                        if (at(srInPlace ? sm : rm, i) != in(Math.floorMod(rank - 1, np), i)) {
                            throw new AssertionError("sendrecv " + what + ": element " + i);
                        }
                    }
                    // allgather: n elements per rank
                    fill(sm, rank, n);
                    rm.fill((byte) 0x5a);
                    if (inPlace) {
                        MemorySegment.copy(sm, 0, rm, rank * n * 4, n * 4);
                        Collectives.allGather(c, c.register(rm.asSlice(rank * n * 4, n * 4)), d, n, DataType.INT32);
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
                    // reduce-scatter: np blocks of n; rank r gets block r; rank p's block b element i is in(p, b*n+i)
                    fill(sm, rank, n * np);
                    rm.fill((byte) 0x5a);
                    Collectives.reduceScatter(c, s, scratch, d, n, DataType.INT32, RedOp.SUM);
                    for (long i = 0; i < n; i++) {
                        if (at(rm, i) != sum(np, rank * n + i)) {
                            throw new AssertionError("reduce_scatter " + what + ": element " + i);
                        }
                    }
                    // alltoall: rank p's block b goes to rank b's block p (in place on the shm path only: the
                    // network path's pairwise steps, as NCCL's alltoall, take separate buffers)
                    final boolean a2aInPlace = inPlace && path.equals("shm");
                    fill(sm, rank, n * np);
                    rm.fill((byte) 0x5a);
                    Collectives.allToAll(c, s, a2aInPlace ? s : d, n, DataType.INT32);
                    for (int p = 0; p < np; p++) {
                        for (long i = 0; i < n; i++) {
                            if (at(a2aInPlace ? sm : rm, p * n + i) != in(p, rank * n + i)) {
                                throw new AssertionError("alltoall " + what + ": block " + p + " element " + i);
                            }
                        }
                    }
                }
            }
        }));
    }

    @Test
    void everyOperationAtTwoRanks() throws Exception {
        everyOp(2, r -> ctx(), COUNTS, "shm");
    }

    @Test
    void everyOperationAtThreeRanks() throws Exception {
        everyOp(3, r -> ctx(), COUNTS, "shm");
    }

    @Test
    void everyOperationAtFourRanks() throws Exception {
        everyOp(4, r -> ctx(), COUNTS, "shm");
    }

    /**
     * The root's own buffers: a broadcast root whose send and recv share memory in part (its chunks go out from recv
     * after one whole copy, not chunk by chunk, which would overwrite input not yet sent), and a reduce root, which
     * publishes nothing and reads its input where it lies, leaves that input as it was. Sizes span several slots.
     */
    @Test
    void theRootsOwnBuffersPartlySharedOrReadInPlace() throws Exception {
        for (final int np : new int[] {2, 3}) {
            assertNoErrors(ranks(np, r -> ctx(), (rank, c, a) -> {
                for (final long n : new long[] {3, 2049, 150_001}) {
                    final String what = np + " ranks, " + n + " elements";
                    final MemorySegment big = a.allocate((2 * n + 8) * 4, 64);
                    final RegisteredBuffer whole = c.register(big);
                    // broadcast from rank 0: its send is big[0, n), its recv big[5, 5 + n) (they share n - 5)
                    fill(big, rank, n);
                    final MemorySegment sendPart = big.asSlice(0, n * 4);
                    final MemorySegment recvPart = big.asSlice(5 * 4, n * 4);
                    final RegisteredBuffer send = new RegisteredBuffer(sendPart, whole.mr(), null);
                    final RegisteredBuffer recv = new RegisteredBuffer(recvPart, whole.mr(), null);
                    Collectives.broadcast(c, send, rank == 0 ? recv : send, n, DataType.INT32, 0);
                    final MemorySegment got = rank == 0 ? recvPart : sendPart;
                    for (long i = 0; i < n; i++) {
                        if (at(got, i) != in(0, i)) {
                            throw new AssertionError("broadcast, partly shared at the root, " + what + ": element "
                                + i + " is " + at(got, i) + ", not " + in(0, i));
                        }
                    }
                    c.deregister(whole);
                    // reduce to the last rank out of place: the result, and every input untouched
                    final MemorySegment sm = a.allocate(n * 4, 64);
                    final MemorySegment rm = a.allocate(n * 4, 64);
                    fill(sm, rank, n);
                    rm.fill((byte) 0x5a);
                    final RegisteredBuffer s = c.register(sm);
                    final RegisteredBuffer d = c.register(rm);
                    Collectives.reduce(c, s, d, n, DataType.INT32, RedOp.SUM, np - 1);
                    for (long i = 0; i < n; i++) {
                        if (at(sm, i) != in(rank, i)) {
                            throw new AssertionError("reduce " + what + ": input element " + i + " changed");
                        }
                        if (rank == np - 1 && at(rm, i) != sum(np, i)) {
                            throw new AssertionError("reduce " + what + ": element " + i);
                        }
                    }
                    c.deregister(s);
                    c.deregister(d);
                }
            }));
        }
    }

    /**
     * Reduce up the binomial tree ({@code gdrkit.coll.shm.tree.bytes}): 4, 5 and 8 ranks, every root, counts from one
     * element to the limit (4096 INT32 = 16 KiB) and one past it (direct), the root out of place, in place and with
     * send and recv partly shared; every element of the result, and every other rank's input untouched. The tuning
     * says tree up to the limit and direct past it, and with the tree off.
     */
    @Test
    void smallReducesGoUpABinomialTreeToEveryRoot() throws Exception {
        for (final int np : new int[] {4, 5, 8}) {
            assertNoErrors(ranks(np, r -> ctx(), (rank, c, a) -> {
                final int limit = 16384;
                final CollTuning.Choice tree = c.choose(CollOp.REDUCE, limit);
                assertEquals("tree/shm", tree.algo() + "/" + tree.path(), tree.why());
                assertTrue(tree.why().startsWith("auto: up to 16384 B (gdrkit.coll.shm.tree.bytes) with 4 or more "
                    + "ranks, a binomial tree"), tree.why());
                assertTrue(tree.why().contains("the root reads " + (np == 4 ? 2 : 3) + " of them instead of "
                    + (np - 1) + " inputs"), tree.why());
                final String past = c.choose(CollOp.REDUCE, limit + 8).algo(); // direct or rsag, by reduce threads
                assertTrue(past.equals("direct") || past.equals("rsag"), past);
                assertEquals("direct", c.choose(CollOp.ALLREDUCE, 64).algo(), "allreduce keeps its direct round");
                final MemorySegment big = a.allocate((2 * 4097 + 8) * 4, 64);
                final RegisteredBuffer whole = c.register(big);
                for (final long n : new long[] {1, 3, 17, 2049, 4096, 4097}) {
                    for (int root = 0; root < np; root++) {
                        for (final int shape : new int[] {0, 1, 2}) { // out of place, in place, partly shared
                            final String what = np + " ranks, root " + root + ", " + n + " elements, "
                                + new String[] {"out of place", "in place", "partly shared"}[shape];
                            big.fill((byte) 0x5a);
                            final MemorySegment sendPart = big.asSlice(0, n * 4);
                            final MemorySegment recvPart = big.asSlice(shape == 0 ? (n + 8) * 4
                                : shape == 1 ? 0 : 3 * 4, n * 4);
                            fill(sendPart, rank, n);
                            final RegisteredBuffer send = new RegisteredBuffer(sendPart, whole.mr(), null);
                            final RegisteredBuffer recv = new RegisteredBuffer(recvPart, whole.mr(), null);
                            Collectives.reduce(c, send, recv, n, DataType.INT32, RedOp.SUM, root);
                            for (long i = 0; i < n; i++) {
                                if (rank == root && at(recvPart, i) != sum(np, i)) {
                                    throw new AssertionError("reduce " + what + ": element " + i + " is "
                                        + at(recvPart, i) + ", not " + sum(np, i));
                                }
                                if (rank != root && at(sendPart, i) != in(rank, i)) {
                                    throw new AssertionError("reduce " + what + ": rank " + rank + "'s input "
                                        + "element " + i + " changed");
                                }
                            }
                        }
                    }
                }
                c.deregister(whole);
            }));
        }
        // off: the root reads every input in a direct round
        assertNoErrors(ranks(4, r -> ctx().treeBytes(0), (rank, c, a) -> {
            final CollTuning.Choice d = c.choose(CollOp.REDUCE, 64);
            assertEquals("direct", d.algo(), d.why());
        }));
    }

    /** Ranks that differ on the tree's limit would take different rounds: none uses the shared memory, and why. */
    @Test
    void ranksThatDifferOnTheTreeKeepTheTransportAndSayWhy() throws Exception {
        assertNoErrors(ranks(4, r -> ctx().treeBytes(r == 2 ? 4096 : 16384), (rank, c, a) -> {
            final CollTuning.Choice ch = c.choose(CollOp.REDUCE, 64);
            assertEquals("net", ch.path(), ch.why());
            assertTrue(ch.why().contains("gdrkit.coll.shm.tree.bytes"), ch.why());
        }));
    }

    @Test
    void forcedAlgorithmsAndProtocolsGiveTheSameElements() throws Exception {
        final long[] counts = {5, 70_001};
        everyOp(3, r -> ctx().algo(CollContext.Algo.RSAG), counts, "shm");
        everyOp(3, r -> ctx().algo(CollContext.Algo.DIRECT).proto(CollContext.Proto.LL), counts, "shm");
        everyOp(2, r -> ctx().proto(CollContext.Proto.SIMPLE), counts, "shm");
        // ring takes the exchanges over the transport (its direct rounds off here): the same elements over the NIC
        everyOp(3, r -> ctx().algo(CollContext.Algo.RING).directBytes(0), new long[] {5, 3001}, "net");
        everyOp(2, r -> ctx().shmDirect(false), new long[] {5, 3001}, "net");
    }

    @Test
    void theTuningSaysWhatItChoseAndWhy() throws Exception {
        assertNoErrors(ranks(4, r -> ctx(), (rank, c, a) -> {
            final CollTuning.Choice small = c.choose(CollOp.ALLREDUCE, 8);
            assertEquals("direct", small.algo());
            assertEquals("LL", small.proto());
            assertEquals("shm", small.path());
            // the reductions' direct limit depends on this host's reduce threads: the table says which it is
            final int limit = CollTuning.reductionDirect(4, c.reduceThreads().threads(), c.directBytes());
            final CollTuning.Choice mid = c.choose(CollOp.ALLREDUCE, limit);
            assertEquals("direct/Simple", mid.algo() + "/" + mid.proto());
            assertEquals("rsag", c.choose(CollOp.ALLREDUCE, limit + 8).algo());
            final CollTuning.Choice big = c.choose(CollOp.ALLREDUCE, 1 << 20);
            assertEquals("rsag/Simple/shm", big.algo() + "/" + big.proto() + "/" + big.path());
            assertTrue(big.why().contains("auto: above " + limit + " B"), big.why());
            assertEquals("direct", c.choose(CollOp.ALLTOALL, 1 << 24).algo());
            // the same object for the same kind: choosing allocates nothing
            assertTrue(big == c.choose(CollOp.ALLREDUCE, 1 << 24));
        }));
        assertNoErrors(ranks(2, r -> ctx().algo(CollContext.Algo.TREE), (rank, c, a) -> {
            final CollTuning.Choice t = c.choose(CollOp.ALLREDUCE, 8);
            assertEquals("tree/Simple/net", t.algo() + "/" + t.proto() + "/" + t.path());
            assertTrue(t.why().startsWith("NCCL_ALGO=tree takes the exchanges over the transport"), t.why());
        }));
    }

    @Test
    void reductionsGoDirectUpTo128KiBOfReadsPerReduceThreadWithinTheDirectLimit() {
        // 8 ranks with one reduce thread each: 16 KiB; 4 ranks with 3: 96 KiB, under 87376 B of direct limit
        assertEquals(16384, CollTuning.reductionDirect(8, 1, 65536));
        assertEquals(87376, CollTuning.reductionDirect(4, 3, 87376));
        // two ranks keep the direct limit: each reduces one pair either way
        assertEquals(262144, CollTuning.reductionDirect(2, 1, 262144));
        assertEquals(262144, CollTuning.reductionDirect(2, 4, 262144));
        // never below the LL round, never above the limit, a multiple of 8
        assertEquals(CollTuning.LL_BYTES, CollTuning.reductionDirect(64, 1, 65536));
        assertEquals(4096, CollTuning.reductionDirect(8, 1, 4096));
        assertEquals(43688, CollTuning.reductionDirect(3, 1, 65536));
        final CollTuning t = new CollTuning(CollContext.Algo.AUTO, CollContext.Proto.AUTO, 8, 262144, null, 65536, 1);
        assertEquals("direct", t.choose(CollOp.ALLREDUCE, 16384, true, 4096).algo());
        final CollTuning.Choice r = t.choose(CollOp.REDUCE, 16392, true, 4096);
        assertEquals("rsag", r.algo());
        assertEquals("auto: above 16384 B (8 inputs read per rank, 128 KiB per reduce thread; the direct limit is "
            + "65536 B), reduce-scatter + all-gather split the reduction over the 8 ranks; every rank on one host, "
            + "shared memory, no NIC; Simple above 8192 B", r.why());
        // other operations move data only: the direct limit is theirs
        assertEquals("direct", t.choose(CollOp.ALLGATHER, 65536, true, 4096).algo());
        // a reduce between 2 ranks stays direct at every size (the root reduces in place, the peer only publishes);
        // allreduce between 2 leaves at the direct limit, and NCCL_ALGO=rsag still forces rsag
        final CollTuning two = new CollTuning(CollContext.Algo.AUTO, CollContext.Proto.AUTO, 2, 262144, null, 262144,
            4);
        final CollTuning.Choice r2 = two.choose(CollOp.REDUCE, 1 << 24, true, 4096);
        assertEquals("direct/Simple/shm", r2.algo() + "/" + r2.proto() + "/" + r2.path());
        assertTrue(r2.why().startsWith("auto: 2 ranks, one round at every size"), r2.why());
        assertTrue(r2 == two.choose(CollOp.REDUCE, 1 << 10 | 1 << 16, true, 4096), "one choice for every size");
        assertEquals("rsag", two.choose(CollOp.ALLREDUCE, 1 << 24, true, 4096).algo());
        final CollTuning forced = new CollTuning(CollContext.Algo.RSAG, CollContext.Proto.AUTO, 2, 262144, null,
            262144, 4);
        assertEquals("rsag", forced.choose(CollOp.REDUCE, 1 << 24, true, 4096).algo());
    }

    @Test
    void ncclAlgoAndProtoFromTheEnvironmentAndBadValuesNamed() {
        final CollContext ok = new CollContext().settings(SettingsReader.ofEnv(Map.of("NCCL_ALGO", "RSAG",
            "NCCL_PROTO", "ll"))).conclude();
        assertEquals(CollContext.Algo.RSAG, ok.algo());
        assertEquals(CollContext.Proto.LL, ok.proto());
        final IllegalArgumentException a = assertThrows(IllegalArgumentException.class, () -> new CollContext()
            .settings(SettingsReader.ofEnv(Map.of("NCCL_ALGO", "collnet"))).conclude());
        assertTrue(a.getMessage().contains("NCCL_ALGO=collnet is not one of auto, ring, tree, direct, rsag, hier"),
            a.getMessage());
        final IllegalArgumentException p = assertThrows(IllegalArgumentException.class, () -> new CollContext()
            .settings(SettingsReader.ofEnv(Map.of("NCCL_PROTO", "LL128"))).conclude());
        assertTrue(p.getMessage().contains("NCCL_PROTO=LL128 is not one of auto, LL, Simple"), p.getMessage());
    }

    /** The NIC's progress and count on 2 ranks of one 16-processor host over the tcp fabric, with {@code algo}. */
    private static String[] standBy(final CollContext.Algo algo) throws Exception {
        final String[] seen = new String[2];
        final Throwable[] err = ThreadRanks.worlds(2, (rank, b) -> CollWorld.open(b, new WorldContext()
            .fabric(Fabric.TCP).transport(CollWorld.TransportKind.IB).coll(ctx().algo(algo))
            .settings(NONE).timeout(Duration.ofSeconds(20)), new CollWorld.Here(16, "boot:same")),
            Duration.ofSeconds(90), (rank, w, a) -> {
                final Communicator c = w.communicator();
                final RegisteredBuffer s = c.register(a.allocate(4096, 64));
                Collectives.allReduce(c, s, s, 1024, DataType.INT32, RedOp.SUM);
                seen[rank] = c.devices() + "|" + c.nicProgress() + "|" + c.spinning();
            });
        assertNoErrors(err);
        return seen;
    }

    @Test
    void whenTheShmPathCarriesEveryCollectiveNoNicThreadSpins() throws Exception {
        for (final String s : standBy(CollContext.Algo.AUTO)) {
            assertTrue(s.startsWith("1|own_device, backstop 10000 us (auto: every rank on one host: the shm path "
                + "carries every collective of host buffers; no NIC thread spins)"), s);
            // 2 ranks with their reduce threads stay within 16 processors: the default spin stands
            assertTrue(s.matches(".*\\|200000 polls, then 100 yields, then park \\([2-8] spinning threads on 16 "
                + "processors\\)"), s);
        }
        // NCCL_ALGO=ring keeps the transport: its NICs get threads of their own where the processors allow
        for (final String s : standBy(CollContext.Algo.RING)) {
            assertTrue(s.contains("|dedicated, idle spin (auto: "), s);
        }
    }

    @Test
    void aPeerThatDiesEndsTheOthersWithANamedErrorAndLeavesNoFile() throws Exception {
        final Set<String> before = shmRunFiles();
        final Throwable[] err = ranks(3, r -> ctx(), (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(1 << 20, 64));
            Collectives.allReduce(c, s, s, 1000, DataType.INT32, RedOp.SUM);
            if (rank == 2) {
                throw new IllegalStateException("rank 2 dies");
            }
            Collectives.allReduce(c, s, s, 200_000, DataType.INT32, RedOp.SUM);
        });
        assertNotNull(err[2]);
        for (int r = 0; r < 2; r++) {
            assertTrue(err[r] instanceof CollException, "rank " + r + ": " + err[r]);
            assertTrue(err[r].getMessage().contains("stopped waiting for"), err[r].getMessage());
        }
        final Set<String> after = shmRunFiles();
        after.removeAll(before);
        assertEquals(Set.of(), after, "files left in /dev/shm");
    }

    @Test
    void aPeerThatStallsEndsTheOthersWithinTheTimeout() throws Exception {
        final Throwable[] err = ranks(2, r -> ctx().timeout(Duration.ofMillis(800)), (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(4096, 64));
            if (rank == 1) {
                Thread.sleep(3000);
            }
            Collectives.allGather(c, s, c.register(a.allocate(8192, 64)), 16, DataType.INT32);
        });
        assertTrue(err[0] instanceof CollException, String.valueOf(err[0]));
        assertTrue(err[0].getMessage().contains("waited 800 ms for rank 1's shared-memory round"),
            err[0].getMessage());
    }

    @Test
    void aRoundThatIsNotThisOneIsNamed() throws Exception {
        final Throwable[] err = ranks(2, r -> ctx(), (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(4096, 64));
            if (rank == 1) {
                // a hostile rank 1 publishes a round of another operation and length in its own slot
                final ShmDirect shm = c.shmDirect();
                final long d = shm.nextRound();
                shm.publishWritten(d, 0x1234L, 12);
                Thread.sleep(2000);
                throw new IllegalStateException("rank 1 played a hostile peer");
            }
            Collectives.allReduce(c, s, s, 16, DataType.INT32, RedOp.SUM);
        });
        assertTrue(err[0] instanceof CollException, String.valueOf(err[0]));
        assertTrue(err[0].getMessage().contains("rank 1 wrote 12 bytes with header 0x1234"), err[0].getMessage());
        assertNull(null);
    }
}
