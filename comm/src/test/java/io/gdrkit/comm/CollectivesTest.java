/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CollectivesTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());

    private static CollRun.Config cfg(final CollOp op, final DataType t, final RedOp r, final int root,
                                      final long min, final long max, final String transport) {
        return new CollRun.Config(op, t, r, root, min, max, 4, 0, 2, 1, true, transport, "injvm", true);
    }

    private static List<CollResult> run(final int np, final CollWorld.TransportKind kind, final CollRun.Config c,
                                        final CollContext ctx) {
        return CollLocal.run(np, kind, c, ctx, NONE, Duration.ofSeconds(20), r -> { });
    }

    @ParameterizedTest(name = "{0} {1} {2} np={3} {4}")
    @CsvSource({
        "allreduce,float,sum,3,IB", "allreduce,int8,prod,2,SOCKET", "allreduce,bfloat16,max,4,IB",
        "allreduce,half,min,2,IB", "allreduce,int64,sum,3,SOCKET", "allreduce,double,prod,3,IB",
        "allgather,int32,sum,3,IB", "allgather,half,sum,2,SOCKET",
        "reduce-scatter,float,sum,4,IB", "reduce-scatter,int32,max,3,SOCKET",
        "broadcast,int8,sum,3,IB", "reduce,float,sum,3,IB", "reduce,int32,min,2,SOCKET",
        "alltoall,int32,sum,4,IB", "alltoall,double,sum,3,SOCKET", "sendrecv,float,sum,3,IB",
        "allreduce,float,sum,1,IB"})
    void everyElementIsRightOutOfPlaceAndInPlace(final String op, final String type, final String red,
                                                 final int np, final CollWorld.TransportKind kind) {
        final CollOp o = CollOp.parse(op);
        // small staging (4 KiB, 4 steps: 1 KiB chunks) so that sizes up to 40 KiB go through many chunks
        final List<CollResult> rows = run(np, kind, cfg(o, DataType.parse(type), RedOp.parse(red), np - 1, 0,
            40_000, kind.name().toLowerCase()), new CollContext().buffSize(4096).steps(4).channels(2)
            .settings(NONE));
        assertEquals(CollRun.sizes(cfg(o, DataType.parse(type), RedOp.parse(red), 0, 0, 40_000, "x"), np).size(),
            rows.size());
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong(), r.toString());
            assertEquals(0, r.inPlaceWrong(), r.toString());
            assertEquals(np, r.np());
            assertTrue(r.timeUs() > 0 || r.bytes() == 0, r.toString());
        }
    }

    /**
     * Rank 0's peers, as (sent to, received from) exchange counts, after an allreduce sweep of 5 ranks (the ring
     * with the direct round off, so that small sizes ring too; the tree with it on: the tree never takes it).
     */
    private static long[][] rank0Footprint(final CollContext.Algo algo) {
        final long[][] seen = new long[2][5];
        final List<CollResult> rows = CollLocal.run(5, CollWorld.TransportKind.IB, cfg(CollOp.ALLREDUCE,
            DataType.INT32, RedOp.SUM, 0, 4, 100_000, "ib"), new CollContext().algo(algo).buffSize(8192).steps(2)
            .channels(1).directBytes(algo == CollContext.Algo.RING ? 0 : 4096).settings(NONE), NONE, Duration.ofSeconds(20), r -> { }, (rank, c) -> {
                if (rank == 0) {
                    for (int p = 0; p < 5; p++) {
                        seen[0][p] = c.exchangesSentTo(p);
                        seen[1][p] = c.exchangesReceivedFrom(p);
                    }
                }
            }, null);
        assertFalse(rows.isEmpty());
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong() + r.inPlaceWrong(), r.toString());
        }
        return seen;
    }

    @Test
    void treeAllreduceIsRightAndRanTheBinomialTree() {
        final long[][] tree = rank0Footprint(CollContext.Algo.TREE);
        // binomial tree rooted at 0 over 5 ranks: 0's children are 1, 2 and 4; 3 hangs below 2
        for (final int child : new int[] {1, 2, 4}) {
            assertTrue(tree[0][child] > 0 && tree[1][child] > 0, "tree: no exchange with child " + child);
        }
        assertEquals(0, tree[0][3] + tree[1][3], "tree: rank 0 talked to rank 3, its grandchild");
        final long[][] ring = rank0Footprint(CollContext.Algo.RING);
        // ring: 0 sends only to 1 and receives only from 4
        assertTrue(ring[0][1] > 0 && ring[1][4] > 0);
        assertEquals(0, ring[0][2] + ring[0][3] + ring[0][4] + ring[1][1] + ring[1][2] + ring[1][3],
            "ring: rank 0 talked to a rank that is not its ring neighbour");
    }

    /** The right output of rank r (of n, root 1, int32 sum) at element i, worked out here, not by the checker. */
    private static double right(final CollOp op, final int r, final int n, final long count, final long i) {
        final long per = count / n;
        return switch (op) {
            case ALLREDUCE, REDUCE -> {
                double s = 0;
                for (int p = 0; p < n; p++) {
                    s += CollRun.input(op, RedOp.SUM, p, i);
                }
                yield s;
            }
            case BROADCAST -> CollRun.input(op, RedOp.SUM, 1, i);
            case ALLGATHER -> CollRun.input(op, RedOp.SUM, (int) (i / per), i % per);
            case REDUCE_SCATTER -> {
                double s = 0;
                for (int p = 0; p < n; p++) {
                    s += CollRun.input(op, RedOp.SUM, p, r * per + i);
                }
                yield s;
            }
            case ALLTOALL -> CollRun.input(op, RedOp.SUM, (int) (i / per) * n + r, i % per);
            case SENDRECV -> CollRun.input(op, RedOp.SUM, Math.floorMod(r - 1, n), i);
        };
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"allreduce", "reduce", "broadcast", "allgather", "reduce-scatter", "alltoall", "sendrecv"})
    void theCheckerCountsEveryWrongElement(final String name) {
        final CollOp op = CollOp.parse(name);
        final int n = 3;
        final int r = 1;
        final long count = 30;
        final long outCount = op == CollOp.REDUCE_SCATTER ? count / n : count;
        final CollRun.Config c = cfg(op, DataType.INT32, RedOp.SUM, 1, 0, 120, "ib");
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment m = a.allocate(count * 4);
            for (long i = 0; i < outCount; i++) {
                DataType.INT32.set(m, i, right(op, r, n, count, i));
            }
            assertEquals(0, CollRun.check(r, n, c, count * 4, m, false), "a right result counted wrong");
            final long[] bad = {0, outCount / 2, outCount - 1};
            for (final long i : bad) {
                DataType.INT32.set(m, i, DataType.INT32.get(m, i) + 1);
            }
            assertEquals(bad.length, CollRun.check(r, n, c, count * 4, m, false), "wrong elements miscounted");
            DataType.INT32.set(m, 1, DataType.INT32.get(m, 1) - 1000);
            assertEquals(bad.length + 1, CollRun.check(r, n, c, count * 4, m, false));
        }
    }

    @ParameterizedTest(name = "{0} {1} {2} np={3} {4} on sim:h200")
    @CsvSource({
        "allreduce,float,sum,3,IB", "allreduce,bfloat16,max,2,IB", "allreduce,half,prod,2,SOCKET",
        "allreduce,int8,min,2,IB", "allreduce,int64,sum,2,IB", "allreduce,double,prod,2,IB",
        "allgather,int32,sum,3,IB", "reduce-scatter,float,sum,3,IB", "reduce-scatter,int32,max,2,SOCKET",
        "broadcast,int8,sum,3,IB", "reduce,float,sum,3,IB", "alltoall,int32,sum,3,IB", "sendrecv,float,sum,2,IB"})
    void gpuBuffersOnASimulatedGpuAreRightAndTheSmWorkersReduced(final String op, final String type,
                                                                  final String red, final int np,
                                                                  final CollWorld.TransportKind kind) {
        final CollOp o = CollOp.parse(op);
        final long[] launches = new long[np];
        final List<CollResult> rows = CollLocal.run(np, kind, cfg(o, DataType.parse(type), RedOp.parse(red), np - 1,
            0, 20_000, kind.name().toLowerCase()), new CollContext().buffSize(4096).steps(4).channels(2)
            .settings(NONE), NONE, Duration.ofSeconds(30), r -> { }, (rank, c) -> {
                launches[rank] = c.deviceReducer().launches();
                assertTrue(c.deviceReducer().gpu().isSimulated());
            }, "sim:h200");
        assertFalse(rows.isEmpty());
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong(), r.toString());
            assertEquals(0, r.inPlaceWrong(), r.toString());
            assertEquals("gpu", r.placement().mem());
            assertEquals("sim-sm-workers", r.placement().reduceOn());
            // the gates allow GDR on a simulated H200 beside a software NIC; NET/Socket has no GPU pointers
            assertEquals(kind == CollWorld.TransportKind.IB ? "gdr" : "host-bounce", r.placement().dataPath());
            assertTrue(r.simulated());
        }
        long total = 0;
        for (final long l : launches) {
            total += l;
        }
        if (o.reduces()) {
            assertTrue(total > 0, "no reduction kernel ran on any rank");
        } else {
            assertEquals(0, total, "a reduction kernel ran for " + op);
        }
    }

    @Test
    void aGpuSpecThatIsNotThereIsNamed() {
        final CollException e = assertThrows(CollException.class, () -> CollLocal.run(2, CollWorld.TransportKind.IB,
            cfg(CollOp.ALLREDUCE, DataType.FLOAT32, RedOp.SUM, 0, 8, 8, "ib"), new CollContext().settings(NONE), NONE,
            Duration.ofSeconds(20), r -> { }, (r, c) -> { }, "sim:nosuchgpu"));
        assertTrue(e.getMessage().contains("nosuchgpu"), e.getMessage());
    }

    @Test
    void sizesFollowNcclTestsRounding() {
        final CollRun.Config c = cfg(CollOp.ALLGATHER, DataType.FLOAT32, RedOp.SUM, 0, 8, 100, "ib");
        assertEquals(List.of(0L, 24L), CollRun.sizes(c, 3)); // 8 and 32 bytes rounded down to 3 floats
        assertEquals(2.0 * 3 / 4, CollOp.ALLREDUCE.busFactor(4));
        assertEquals(3.0 / 4, CollOp.ALLGATHER.busFactor(4));
        assertEquals(1.0, CollOp.BROADCAST.busFactor(4));
        assertThrows(IllegalArgumentException.class, () -> CollOp.parse("allsum"));
        assertThrows(IllegalArgumentException.class, () -> DataType.parse("int16"));
    }

    @Test
    void bfloat16RoundsToNearestEven() {
        assertEquals((short) 0x3f80, DataType.toBf16(1.0f));
        assertEquals((short) 0x3f80, DataType.toBf16(Float.intBitsToFloat(0x3f808000))); // tie to even (down)
        assertEquals((short) 0x3f82, DataType.toBf16(Float.intBitsToFloat(0x3f818000))); // tie to even (up)
        assertEquals((short) 0x7fc0, DataType.toBf16(Float.NaN));
    }
}
