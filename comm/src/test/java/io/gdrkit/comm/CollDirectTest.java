/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static io.gdrkit.comm.ThreadRanks.assertNoErrors;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The direct round ({@code gdrkit.coll.direct.bytes}): a small allreduce, broadcast, reduce and allgather as one
 * exchange with every peer. Every type and reduction is byte-exact against the ring (exact data: small integers every
 * type holds; random data: against the ring at 2 ranks, where the ring's one combination is commutative, and
 * against a reduction in rank order worked out here at 3 and 4), the same bits on every rank, in-place and
 * out-of-place; the threshold's edges take the path they should (told by which peers a rank exchanged with); the
 * setting is validated and its source recorded; a peer running another operation or setting is a named error.
 */
class CollDirectTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());

    /** Runs {@code body} on {@code np} ranks (threads, in-JVM fabric), rank r with {@code direct[r]}; their errors. */
    private static Throwable[] ranks(final int np, final CollWorld.TransportKind kind, final int[] direct,
                                     final ThreadRanks.Body body) throws Exception {
        return ranks(np, kind, direct, true, body);
    }

    /** As above; {@code shm} false keeps the direct rounds on the NIC's eager connections (ShmDirect off). */
    private static Throwable[] ranks(final int np, final CollWorld.TransportKind kind, final int[] direct,
                                     final boolean shm, final ThreadRanks.Body body) throws Exception {
        return ThreadRanks.run(np, kind, rank -> new CollContext().algo(CollContext.Algo.RING)
            .buffSize(8192).steps(2).channels(1)
            .directBytes(direct[rank]).shmDirect(shm).timeout(Duration.ofSeconds(5)).settings(NONE), NONE,
            Duration.ofSeconds(120), body);
    }

    private static int[] all(final int np, final int direct) {
        final int[] d = new int[np];
        java.util.Arrays.fill(d, direct);
        return d;
    }

    /** Rank r's input element i: small integers (exact in every type, for every op), or seeded random values. */
    private static void fill(final MemorySegment m, final DataType t, final RedOp op, final int r, final long count,
                             final boolean random) {
        final SplittableRandom g = new SplittableRandom(1000L * r + t.ordinal() * 10L + op.ordinal());
        for (long i = 0; i < count; i++) {
            t.set(m, i, random ? (g.nextDouble() - 0.5) * 200 : CollRun.input(CollOp.ALLREDUCE, op, r, i));
        }
    }

    /** Element counts of the cases: one element, a few, and a size near the default threshold. */
    private static final long[] COUNTS = {1, 3, 17, 250};

    /**
     * Every type, op, count and placement once on each rank, exact and random data; results keyed by
     * mode/case/rank. Each result's direct-or-ring path is checked against the footprint it left.
     */
    private static void sweep(final int np, final CollWorld.TransportKind kind, final int direct, final boolean shm,
                              final Map<String, byte[]> out) throws Exception {
        assertNoErrors(ranks(np, kind, all(np, direct), shm, (rank, c, a) -> {
            assertEquals(shm, c.shmDirect() != null, c.directPath());
            final MemorySegment in = a.allocate(8 * 256, 64);
            final MemorySegment keep = a.allocate(8 * 256, 64);
            final RegisteredBuffer s = c.register(in);
            final RegisteredBuffer d = c.register(a.allocate(8 * 256, 64));
            for (final DataType t : DataType.values()) {
                for (final RedOp op : RedOp.values()) {
                    for (final long count : COUNTS) {
                        for (final boolean random : new boolean[] {false, true}) {
                            for (final boolean inPlace : new boolean[] {false, true}) {
                                final long bytes = count * t.size();
                                fill(in, t, op, rank, count, random);
                                MemorySegment.copy(in, 0, keep, 0, bytes);
                                d.seg().fill((byte) 0x7b);
                                final long sent = c.exchangesSentTo((rank + 1) % np);
                                final long sentBack = c.exchangesSentTo((rank + np - 1) % np);
                                Collectives.allReduce(c, s, inPlace ? s : d, count, t, op);
                                final boolean wentDirect = bytes <= direct;
                                // direct: one exchange with each peer; ring: 2(n-1) to the next rank only
                                assertEquals(wentDirect ? 1 : 2L * (np - 1), c.exchangesSentTo((rank + 1) % np)
                                    - sent, t + " " + count + " took the wrong path");
                                if (np > 2) {
                                    assertEquals(wentDirect ? 1 : 0, c.exchangesSentTo((rank + np - 1) % np)
                                        - sentBack, t + " " + count + " took the wrong path");
                                }
                                final MemorySegment res = inPlace ? in : d.seg();
                                if (!inPlace) {
                                    assertEquals(-1, in.asSlice(0, bytes).mismatch(keep.asSlice(0, bytes)),
                                        "out-of-place allreduce wrote into its input");
                                }
                                out.put(key(t, op, count, random, inPlace, rank),
                                    res.asSlice(0, bytes).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
                            }
                        }
                    }
                }
            }
        }));
    }

    private static String key(final DataType t, final RedOp op, final long count, final boolean random,
                              final boolean inPlace, final int rank) {
        return t + "/" + op + "/" + count + "/" + random + "/" + inPlace + "/" + rank;
    }

    /** The reduction in rank order 0..n-1, as the direct round promises, worked out here from the inputs. */
    private static byte[] rankOrder(final DataType t, final RedOp op, final long count, final boolean random,
                                    final int np) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment acc = a.allocate(8 * 256, 64);
            final MemorySegment next = a.allocate(8 * 256, 64);
            fill(acc, t, op, 0, count, random);
            for (int r = 1; r < np; r++) {
                fill(next, t, op, r, count, random);
                Reducer.reduce(acc, 0, acc, 0, next, 0, count, t, op);
            }
            return acc.asSlice(0, count * t.size()).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        }
    }

    @ParameterizedTest(name = "np={0} {1} shm={2}")
    @CsvSource({"2,IB,true", "2,IB,false", "3,IB,true", "4,IB,true", "4,IB,false", "3,SOCKET,false"})
    void everyTypeAndOpIsByteExactAgainstTheRingAndTheSameOnEveryRank(final int np,
                                                                       final CollWorld.TransportKind kind,
                                                                       final boolean shm)
        throws Exception {
        final Map<String, byte[]> direct = new ConcurrentHashMap<>();
        final Map<String, byte[]> ring = new ConcurrentHashMap<>();
        sweep(np, kind, 4096, shm, direct);
        sweep(np, kind, 0, shm, ring);
        int compared = 0;
        for (final DataType t : DataType.values()) {
            for (final RedOp op : RedOp.values()) {
                for (final long count : COUNTS) {
                    for (final boolean random : new boolean[] {false, true}) {
                        final byte[] expected = rankOrder(t, op, count, random, np);
                        for (final boolean inPlace : new boolean[] {false, true}) {
                            for (int r = 0; r < np; r++) {
                                final String k = key(t, op, count, random, inPlace, r);
                                assertArrayEquals(expected, direct.get(k), "direct " + k + " against rank order");
                                assertArrayEquals(direct.get(key(t, op, count, random, inPlace, 0)), direct.get(k),
                                    "direct " + k + ": not the same bits as rank 0's");
                                // the ring combines each block in another order: exact data always agrees, random
                                // floats where the one combination of 2 ranks commutes
                                if (!random || np == 2 || !t.name().startsWith("FLOAT") && t != DataType.BFLOAT16) {
                                    assertArrayEquals(ring.get(k), direct.get(k), "direct " + k + " against ring");
                                    compared++;
                                }
                            }
                        }
                    }
                }
            }
        }
        assertTrue(compared > 0);
    }

    @ParameterizedTest(name = "np={0}")
    @CsvSource({"2", "3"})
    void theThresholdsEdgesTakeTheirPath(final int np) throws Exception {
        // threshold 64 bytes: float counts 15 (60 B) and 16 (64 B) go direct, 17 (68 B) takes the ring; int8 at
        // 63, 64, 65 elements likewise; each checked against the sum worked out here
        final int threshold = 64;
        assertNoErrors(ranks(np, CollWorld.TransportKind.IB, all(np, threshold), (rank, c, a) -> {
            assertEquals(threshold, c.directBytes());
            final RegisteredBuffer s = c.register(a.allocate(1024, 64));
            final RegisteredBuffer d = c.register(a.allocate(1024, 64));
            for (final DataType t : new DataType[] {DataType.FLOAT32, DataType.INT8}) {
                final long edge = threshold / t.size();
                for (final long count : new long[] {edge - 1, edge, edge + 1}) {
                    fill(s.seg(), t, RedOp.SUM, rank, count, false);
                    final long before = c.exchangesSentTo((rank + 1) % np);
                    Collectives.allReduce(c, s, d, count, t, RedOp.SUM);
                    final long used = c.exchangesSentTo((rank + 1) % np) - before;
                    assertEquals(count * t.size() <= threshold ? 1 : 2L * (np - 1), used, t + " x " + count);
                    for (long i = 0; i < count; i++) {
                        assertEquals(CollRun.reduced(CollOp.ALLREDUCE, RedOp.SUM, np, i), t.get(d.seg(), i),
                            t + " x " + count + " element " + i);
                    }
                }
            }
        }));
    }

    @ParameterizedTest(name = "{0} np={1}")
    @CsvSource({"broadcast,3", "broadcast,4", "reduce,3", "reduce,4", "allgather,3", "allgather,4",
        "allreduce,4"})
    void broadcastReduceAndAllgatherGoDirectAndAreRight(final String name, final int np) {
        final CollOp op = CollOp.parse(name);
        final long[][] sent = new long[np][np];
        // 0..16384 bytes, factor 4: 0, 1, 4, 16, ... 4096 (rounded to whole elements; direct up to 4096) and 16384
        final CollRun.Config cfg = new CollRun.Config(op, DataType.INT32, op == CollOp.REDUCE ? RedOp.MAX : RedOp.SUM,
            1, 0, 16_384, 4, 0, 2, 1, true, "ib", "injvm", true);
        final List<CollResult> rows = CollLocal.run(np, CollWorld.TransportKind.IB, cfg, new CollContext().algo(CollContext.Algo.RING)
            
            .buffSize(65536).steps(4).channels(1).directBytes(4096).settings(NONE), NONE, Duration.ofSeconds(30),
            r -> { }, (rank, c) -> {
                for (int p = 0; p < np; p++) {
                    sent[rank][p] = c.exchangesSentTo(p);
                }
            }, null);
        assertEquals(CollRun.sizes(cfg, np).size(), rows.size());
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong(), r.toString());
            assertEquals(0, r.inPlaceWrong(), r.toString());
        }
        // a direct round is the only step in which rank 1 (the root) sends to rank 1 + 2 (the ring and the chains
        // send to the next rank only), and in which rank 2 sends to the root of a reduce (its chain runs 2, 3, ...)
        if (op == CollOp.REDUCE) {
            assertTrue(sent[2][1] > 0, "rank 2 never sent to the root: no direct round ran");
        } else {
            assertTrue(sent[1][(1 + 2) % np] > 0, "rank 1 never sent to rank " + (1 + 2) % np + ": no direct round");
        }
    }

    @Test
    void theSettingIsValidatedCappedAndItsSourceRecorded() {
        assertEquals(CollContext.DEFAULT_DIRECT, new CollContext().settings(NONE).conclude().directBytes());
        // capped at the eager slot less the header; off with the eager connection off
        assertEquals(8192 - 8, new CollContext().directBytes(1 << 20).settings(NONE).conclude().directBytes());
        assertEquals(1024 - 8, new CollContext().buffSize(4096).steps(4).directBytes(4096).settings(NONE).conclude()
            .directBytes());
        assertEquals(0, new CollContext().eagerBytes(0).settings(NONE).conclude().directBytes());
        assertEquals(0, new CollContext().directBytes(0).settings(NONE).conclude().directBytes());
        for (final String bad : new String[] {"-1", "1048577", "4k"}) {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new CollContext()
                .settings(new SettingsReader(Map.of(), Map.of("gdrkit.coll.direct.bytes", bad), Map.of()))
                .conclude(), bad);
            assertTrue(e.getMessage().contains("gdrkit.coll.direct.bytes"), e.getMessage());
        }
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new CollContext().directBytes(-5).settings(NONE).conclude());
        assertTrue(e.getMessage().contains("gdrkit.coll.direct.bytes=-5"), e.getMessage());
        final CollContext props = new CollContext().settings(new SettingsReader(Map.of(),
            Map.of("gdrkit.coll.direct.bytes", "256"), Map.of())).conclude();
        assertEquals(256, props.directBytes());
        assertTrue(props.recorded().stream().anyMatch(x -> x.name().equals("gdrkit.coll.direct.bytes")
            && x.value().equals(256) && x.source() != Source.DEFAULT), String.valueOf(props.recorded()));
        final CollContext flag = new CollContext().directBytes(128).settings(NONE).conclude();
        assertTrue(flag.recorded().stream().anyMatch(x -> x.name().equals("gdrkit.coll.direct.bytes")
            && x.source() == Source.FLAG), String.valueOf(flag.recorded()));
    }

    @Test
    void theSharedMemoryDefaultKeepsOneRoundsReadsAt256KiBAndAGivenValueStands() {
        final CollContext d = new CollContext().settings(NONE).conclude();
        // 256 KiB over the peers a round reads, a multiple of 8, never under 64 KiB; one rank reads nobody
        final int[][] want = {{1, 262144}, {2, 262144}, {3, 131072}, {4, 87376}, {5, 65536}, {8, 65536},
            {64, 65536}};
        for (final int[] w : want) {
            assertEquals(w[1], d.shmDirectBytes(w[0]), w[0] + " ranks");
            assertEquals(0, d.shmDirectBytes(w[0]) % 8, w[0] + " ranks");
        }
        // a value given is the value for every count: not capped by the eager head, not scaled
        for (final int given : new int[] {0, 4096, 1 << 20}) {
            final CollContext g = new CollContext().directBytes(given).settings(NONE).conclude();
            for (final int np : new int[] {2, 3, 9}) {
                assertEquals(given, g.shmDirectBytes(np), given + " B, " + np + " ranks");
            }
        }
        final CollContext p = new CollContext().settings(new SettingsReader(Map.of(),
            Map.of("gdrkit.coll.direct.bytes", "65536"), Map.of())).conclude();
        assertEquals(65536, p.shmDirectBytes(2));
    }

    @Test
    void theSpinSettingIsValidatedRecordedAndZeroStillRight() {
        assertEquals(CollContext.DEFAULT_SPINS, new CollContext().settings(NONE).conclude().spinRounds());
        for (final String bad : new String[] {"-1", "10000001", "many"}) {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new CollContext()
                .settings(new SettingsReader(Map.of(), Map.of("gdrkit.coll.spin.rounds", bad), Map.of()))
                .conclude(), bad);
            assertTrue(e.getMessage().contains("gdrkit.coll.spin.rounds"), e.getMessage());
        }
        final CollContext props = new CollContext().settings(new SettingsReader(Map.of(),
            Map.of("gdrkit.coll.spin.rounds", "0"), Map.of())).conclude();
        assertEquals(0, props.spinRounds());
        assertTrue(props.recorded().stream().anyMatch(x -> x.name().equals("gdrkit.coll.spin.rounds")
            && x.value().equals(0) && x.source() != Source.DEFAULT), String.valueOf(props.recorded()));
        // no spinning at all: every idle poll yields, then parks; the direct round and the ring stay right
        final CollRun.Config cfg = new CollRun.Config(CollOp.ALLREDUCE, DataType.FLOAT32, RedOp.SUM, 0, 8, 32_768, 8,
            0, 3, 1, true, "ib", "injvm", true);
        for (final CollResult r : CollLocal.run(2, CollWorld.TransportKind.IB, cfg, new CollContext().buffSize(65536)
            .steps(4).channels(1).spinRounds(0).settings(NONE), NONE, Duration.ofSeconds(30), x -> { })) {
            assertEquals(0, r.wrong() + r.inPlaceWrong(), r.toString());
        }
    }

    @ParameterizedTest(name = "{0} np={1} shm={2}")
    @CsvSource({"IB,3,false", "IB,4,false", "SOCKET,3,false", "IB,3,true", "IB,4,true"})
    void backToBackDirectRoundsEachCarryTheirOwnInput(final CollWorld.TransportKind kind, final int np,
                                                      final boolean shm)
        throws Exception {
        // a round's message is written once, into one of this rank's own EAGER_DEPTH slots, and every peer's send
        // reads it there: more rounds than slots in a row, each with inputs of its own (allreduce, in place every
        // other round, and broadcast from a moving root), each checked element by element on every rank, so a slot
        // written again before a send that reads it completed shows up as another round's numbers
        final int rounds = 3 * Communicator.EAGER_DEPTH + 1;
        final int count = 64;
        assertNoErrors(ranks(np, kind, all(np, 4096), shm, (rank, c, a) -> {
            assertEquals(shm, c.shmDirect() != null, c.directPath());
            final RegisteredBuffer s = c.register(a.allocate(4L * count, 64));
            final RegisteredBuffer d = c.register(a.allocate(4L * count, 64));
            final int ranksSum = np * (np - 1) / 2;
            final long skip = c.exchangesSentTo((rank + 2) % np);
            for (int t = 0; t < rounds; t++) {
                for (int i = 0; i < count; i++) {
                    s.seg().setAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, i, rank * 1_000_000 + t * 1000 + i);
                }
                final boolean inPlace = t % 2 == 1;
                Collectives.allReduce(c, s, inPlace ? s : d, count, DataType.INT32, RedOp.SUM);
                final MemorySegment out = (inPlace ? s : d).seg();
                for (int i = 0; i < count; i++) {
                    assertEquals(ranksSum * 1_000_000 + np * (t * 1000 + i),
                        out.getAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, i), "allreduce round " + t
                            + " element " + i);
                }
                final int root = t % np;
                for (int i = 0; i < count; i++) {
                    s.seg().setAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, i, rank * 1_000_000 + t * 1000 + i);
                }
                Collectives.broadcast(c, s, d, count, DataType.INT32, root);
                for (int i = 0; i < count; i++) {
                    assertEquals(root * 1_000_000 + t * 1000 + i, d.seg().getAtIndex(
                        java.lang.foreign.ValueLayout.JAVA_INT, i), "broadcast round " + t + " element " + i);
                }
            }
            // only a direct round sends to the rank after next (the ring and the chain send to the next rank):
            // every allreduce, and every broadcast this rank was the root of
            final long roots = java.util.stream.IntStream.range(0, rounds).filter(t -> t % np == rank).count();
            assertEquals(rounds + roots, c.exchangesSentTo((rank + 2) % np) - skip, "every round went direct");
        }));
    }

    @ParameterizedTest(name = "shm={0}")
    @CsvSource({"true", "false"})
    void aDirectRoundOfAnotherOperationIsNamed(final boolean shm) throws Exception {
        // rank 0 allreduces 8 bytes, rank 1 broadcasts 8 bytes from itself: rank 0 names the mismatch
        final Throwable[] err = ranks(2, CollWorld.TransportKind.IB, all(2, 4096), shm, (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(64, 64));
            final RegisteredBuffer d = c.register(a.allocate(64, 64));
            if (rank == 0) {
                final CollException first = org.junit.jupiter.api.Assertions.assertThrows(CollException.class,
                    () -> Collectives.allReduce(c, s, d, 2, DataType.FLOAT32, RedOp.SUM));
                // the communicator is left mid-way (a receive slot not posted again): the next call is refused by
                // name with the first error, not run on that state
                final CollException next = org.junit.jupiter.api.Assertions.assertThrows(CollException.class,
                    () -> Collectives.allReduce(c, s, d, 2, DataType.FLOAT32, RedOp.SUM));
                assertTrue(next.getMessage().contains("failed earlier") && next.getCause() == first, next::getMessage);
                throw first;
            } else {
                Collectives.broadcast(c, s, d, 2, DataType.FLOAT32, 1);
            }
        });
        assertNotNull(err[0], "rank 0 took a broadcast's data as an allreduce's");
        assertTrue(err[0] instanceof CollException, String.valueOf(err[0]));
        assertTrue(err[0].getMessage().contains("mismatched operations"), err[0].getMessage());
        assertNull(err[1], String.valueOf(err[1]));
    }

    @Test
    void ranksWithAnotherThresholdAreNamedNotMixed() throws Exception {
        // rank 0 goes direct (one 16-byte message), rank 1 rings (4-byte eager heads): both name the sizes
        final Throwable[] err = ranks(2, CollWorld.TransportKind.IB, new int[] {4096, 0}, (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(64, 64));
            final RegisteredBuffer d = c.register(a.allocate(64, 64));
            Collectives.allReduce(c, s, d, 2, DataType.FLOAT32, RedOp.SUM);
        });
        // whichever rank sees the other's message first names the sizes; the other stops with that error (through
        // the bootstrap) or names them too
        for (int r = 0; r < 2; r++) {
            assertNotNull(err[r], "rank " + r + " ended without an error");
            assertTrue(err[r] instanceof CollException, String.valueOf(err[r]));
            final String m = err[r].getMessage();
            assertTrue(m.contains("the eager head brought 16 bytes, expected 4") || m.contains("rank 1 sent 4 bytes")
                && m.contains("gdrkit.coll.direct.bytes"), m);
        }
    }
}
