/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code gdrkit.coll.reduce.threads} and {@code gdrkit.coll.reduce.parallel.bytes}: read once with their sources,
 * auto's choice from the processors per rank, the choice in every row, and a 2-rank allreduce whose reductions run
 * on 2 and 4 threads, every element checked.
 */
class ReduceThreadsTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());

    private static SettingsReader props(final String... kv) {
        final Map<String, String> m = new java.util.HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return new SettingsReader(Map.of(), m, Map.of());
    }

    private static Setting<?> recorded(final CollContext c, final String name) {
        final List<Setting<?>> s = c.recorded().stream().filter(x -> x.name().equals(name)).toList();
        assertEquals(1, s.size(), name + " recorded once in " + s);
        return s.get(0);
    }

    /** How auto, asked for as a flag (also the default), names itself. */
    private static final String AUTO = "auto, gdrkit.coll.reduce.threads=auto (flag): ";

    @ParameterizedTest(name = "{0} ranks, {1} processors: {2}")
    @CsvSource({"2,16,4", "2,10,4", "2,8,3", "1,4,3", "1,64,4", "4,16,3", "2,7,1", "2,2,1", "4,15,1", "8,16,1"})
    void autoFollowsTheNicsChoiceAndLeavesACoreForEachNicThread(final int ranks, final int cpus, final int want) {
        final CollContext c = new CollContext().settings(NONE).reduceThreads(0).conclude(); // 0: auto
        final ParallelReducer.Choice ch = c.chooseReduceThreads(ranks, cpus, 1);
        assertEquals(want, ch.threads());
        assertEquals(CollContext.DEFAULT_PARALLEL_BYTES, ch.minBytes());
        if (want == 1) {
            assertEquals(AUTO + cpus + " processors < 4 x " + ranks + " ranks on this host", ch.reason());
            assertEquals("1 (" + ch.reason() + ")", ch.describe());
        } else {
            assertEquals(AUTO + cpus + " processors >= 4 x " + ranks + " ranks on this host, min(4, " + cpus
                + " / " + ranks + " - 1 for the NIC thread)", ch.reason());
            assertEquals(want + " from 16384 B (" + ch.reason() + ")", ch.describe());
        }
        assertEquals(Source.FLAG, recorded(c, "gdrkit.coll.reduce.threads").source());
        assertEquals(Source.DEFAULT, recorded(c, "gdrkit.coll.reduce.parallel.bytes").source());
        // left alone, the setting is auto (measured on the 16-core host), and says so without a flag
        final CollContext dflt = new CollContext().settings(NONE).conclude();
        assertEquals(want, dflt.chooseReduceThreads(ranks, cpus, 1).threads());
        assertEquals(ch.reason().replace(AUTO, "auto: "), dflt.chooseReduceThreads(ranks, cpus, 1).reason());
        assertEquals(Source.DEFAULT, recorded(dflt, "gdrkit.coll.reduce.threads").source());
    }

    @Test
    void aValueGivenIsTakenAsIsWithItsSource() {
        final CollContext p = new CollContext().settings(props("gdrkit.coll.reduce.threads", "3",
            "gdrkit.coll.reduce.parallel.bytes", "65536")).conclude();
        assertEquals(new ParallelReducer.Choice(3, 65536, "gdrkit.coll.reduce.threads=3 (property)"),
            p.chooseReduceThreads(8, 2, 1), "a value given wins over the processors");
        assertEquals(Source.PROPERTY, recorded(p, "gdrkit.coll.reduce.parallel.bytes").source());
        assertEquals(65536, p.parallelBytes());

        final CollContext f = new CollContext().settings(NONE).reduceThreads(1).parallelBytes(1024).conclude();
        assertEquals("1 (gdrkit.coll.reduce.threads=1 (flag))", f.chooseReduceThreads(1, 64, 1).describe());
        assertEquals(Source.FLAG, recorded(f, "gdrkit.coll.reduce.threads").source());
        assertEquals(Source.FLAG, recorded(f, "gdrkit.coll.reduce.parallel.bytes").source());

        final CollContext auto = new CollContext().settings(props("gdrkit.coll.reduce.threads", " Auto ")).conclude();
        assertEquals("auto, gdrkit.coll.reduce.threads= Auto  (property): 16 processors >= 4 x 2 ranks on this "
            + "host, min(4, 16 / 2 - 1 for the NIC thread)", auto.chooseReduceThreads(2, 16, 1).reason());
        assertEquals(4, auto.chooseReduceThreads(2, 16, 1).threads());

        final CollContext copy = CollContext.copyOf(p);
        assertEquals(p.chooseReduceThreads(2, 16, 1), copy.chooseReduceThreads(2, 16, 1));
        assertEquals(p.recorded(), copy.recorded());
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "65", "-1", "two", "4.0"})
    void aMalformedThreadCountIsNamed(final String v) {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new CollContext().settings(props("gdrkit.coll.reduce.threads", v)).conclude());
        assertEquals("gdrkit.coll.reduce.threads=" + v + " is not auto or an integer in [1, 64]", e.getMessage());
    }

    @Test
    void outOfRangeValuesAreNamed() {
        assertEquals("gdrkit.coll.reduce.threads=65 is not auto or an integer in [1, 64]",
            assertThrows(IllegalArgumentException.class,
                () -> new CollContext().settings(NONE).reduceThreads(65).conclude()).getMessage());
        assertEquals("gdrkit.coll.reduce.parallel.bytes=1023 is not an integer in [1024, 1073741824]",
            assertThrows(IllegalArgumentException.class,
                () -> new CollContext().settings(props("gdrkit.coll.reduce.parallel.bytes", "1023")).conclude())
                .getMessage());
        assertThrows(IllegalStateException.class, () -> new CollContext().chooseReduceThreads(2, 16, 1));
        assertThrows(IllegalArgumentException.class,
            () -> new CollContext().settings(NONE).conclude().chooseReduceThreads(0, 16, 1));
        assertThrows(IllegalArgumentException.class,
            () -> new CollContext().settings(NONE).conclude().chooseReduceThreads(2, 0, 1));
    }

    @Test
    void everyRowSaysHowManyThreadsReducedAndWhy() {
        final List<CollResult> rows = new ArrayList<>();
        CollLocal.run(2, CollWorld.TransportKind.IB, new CollRun.Config(CollOp.ALLREDUCE, DataType.FLOAT32,
                RedOp.SUM, 0, 8, 64, 8, 0, 1, 1, true, "ib", "injvm", true),
            new CollContext().settings(props("gdrkit.coll.reduce.threads", "2")), NONE, Duration.ofSeconds(60),
            rows::add, (r, c) -> { }, null);
        assertEquals(2, rows.size());
        for (final CollResult r : rows) {
            assertEquals(new ParallelReducer.Choice(2, CollContext.DEFAULT_PARALLEL_BYTES,
                "gdrkit.coll.reduce.threads=2 (property)"), r.reduceThreads());
        }
    }

    @Test
    void aGpuReducesAndSaysSo() {
        final List<CollResult> rows = new ArrayList<>();
        CollLocal.run(2, CollWorld.TransportKind.IB, new CollRun.Config(CollOp.ALLREDUCE, DataType.FLOAT32,
                RedOp.SUM, 0, 1 << 16, 1 << 16, 8, 0, 1, 1, true, "ib", "injvm", true),
            new CollContext().settings(NONE).reduceThreads(4).parallelBytes(1024).buffSize(65536).steps(4), NONE,
            Duration.ofSeconds(60), rows::add, (r, c) -> assertEquals(0, c.hostReducer().workerThreads().length,
                "a host reduction thread started with a GPU attached"), "sim:h200");
        assertEquals(1, rows.size());
        assertEquals(0, rows.get(0).wrong() + rows.get(0).inPlaceWrong());
        assertEquals(new ParallelReducer.Choice(1, 1024, "the GPU reduces; host buffers would have 4 from 1024 B "
            + "(gdrkit.coll.reduce.threads=4 (flag))"), rows.get(0).reduceThreads());
    }

    /** Random elements without NaNs: both ranks' reduction orders (x0 op x1, x1 op x0) then give the same bits. */
    private static void fill(final MemorySegment m, final DataType t, final long count, final long seed) {
        final SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < count; i++) {
            final double v = (r.nextDouble() - 0.5) * 64;
            switch (t) {
                case INT32 -> m.setAtIndex(ValueLayout.JAVA_INT, i, r.nextInt());
                case INT64 -> m.setAtIndex(ValueLayout.JAVA_LONG, i, r.nextLong());
                case INT8 -> m.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
                default -> t.set(m, i, v);
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}, {2} threads")
    @CsvSource({"float,sum,2", "float,sum,4", "bfloat16,max,2", "half,prod,4", "int32,prod,4", "int64,sum,2",
        "double,min,4", "int8,sum,3"})
    void aTwoRankAllreduceOnReduceThreadsIsRightInEveryElement(final String type, final String red,
                                                               final int threads) throws Exception {
        final DataType t = DataType.parse(type);
        final RedOp op = RedOp.parse(red);
        final long count = 300_001 / t.size() * 2 + 1; // odd: blocks of unequal sizes; ~600 KB
        final long bytes = count * t.size();
        final Map<Integer, Thread[]> workers = new ConcurrentHashMap<>();
        final Throwable[] err = ThreadRanks.run(2, CollWorld.TransportKind.IB, rank -> new CollContext()
            .buffSize(1 << 18).steps(4).channels(2).reduceThreads(threads).parallelBytes(4096)
            .timeout(Duration.ofSeconds(30)).settings(NONE), NONE, Duration.ofSeconds(120), (rank, c, a) -> {
                assertEquals(threads, c.reduceThreads().threads());
                final MemorySegment[] in = new MemorySegment[2];
                for (int p = 0; p < 2; p++) {
                    in[p] = a.allocate(bytes, 64);
                    fill(in[p], t, count, 1000 + p);
                }
                final MemorySegment want = a.allocate(bytes, 64);
                Reducer.reduce(want, 0, in[0], 0, in[1], 0, count, t, op);
                final MemorySegment send = a.allocate(bytes, 64);
                MemorySegment.copy(in[rank], 0, send, 0, bytes);
                final RegisteredBuffer s = c.register(send);
                final RegisteredBuffer d = c.register(a.allocate(bytes, 64).fill((byte) 0x7b));
                Collectives.allReduce(c, s, d, count, t, op); // out of place: the reduction reads send, writes recv
                assertEquals(-1, d.seg().mismatch(want), "rank " + rank + " out of place: first wrong byte");
                assertEquals(-1, send.mismatch(in[rank]), "rank " + rank + ": the input changed");
                Collectives.allReduce(c, s, s, count, t, op); // in place
                assertEquals(-1, send.mismatch(want), "rank " + rank + " in place: first wrong byte");
                // every element, as numbers too (a NaN-free input gives the same bits in either order)
                for (long i = 0; i < count; i++) {
                    assertEquals(t.get(want, i), t.get(d.seg(), i), "rank " + rank + " element " + i);
                }
                workers.put(rank, c.hostReducer().workerThreads());
                assertEquals(ParallelReducer.DEFAULT_COLD_ALONE_BYTES, c.hostReducer().coldAloneBytes(),
                    "the communicator's reducer runs cold small reductions alone");
                c.deregister(s);
                c.deregister(d);
            });
        for (final Throwable e : err) {
            if (e != null) {
                throw new AssertionError(e);
            }
        }
        assertEquals(2, workers.size());
        for (final Thread[] w : workers.values()) {
            assertEquals(threads - 1, w.length, "the reductions were split");
            for (final Thread th : w) {
                assertFalse(th.isAlive(), th.getName() + " outlived the communicator's close()");
            }
        }
        assertNull(err[0]);
    }
}
