/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The eager head (receives posted ahead on each pair's eager connection) and the copy-free ring: results are
 * right byte for byte with the head off, smaller than an element's worth of chunks, and larger than a chunk
 * (capped); the input of an out-of-place allreduce and reduce-scatter is left as it was; and a peer whose heads do
 * not fit what this rank posted (other sizes, an eager setting of its own) ends in a named error within the
 * timeout, never mixed data or a hang.
 */
class CollEagerTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());

    @ParameterizedTest(name = "{0} np={1} {2} eager={3}")
    @CsvSource({
        "allreduce,2,IB,0", "allreduce,3,IB,8", "allreduce,2,IB,1048576", "allreduce,3,SOCKET,24",
        "reduce-scatter,3,IB,8", "reduce-scatter,2,SOCKET,0", "allgather,3,IB,1048576", "alltoall,3,IB,8",
        "broadcast,3,SOCKET,1048576", "reduce,3,IB,24", "sendrecv,2,IB,8"})
    void resultsAreRightWithTheEagerHeadOffSmallAndCapped(final String op, final int np,
                                                          final CollWorld.TransportKind kind, final int eager) {
        final CollOp o = CollOp.parse(op);
        // 1 KiB chunks: 0..40 000 bytes go as a head alone, a head and chunks, and chunks only (eager 0); the direct
        // round off, or the small sizes would take it instead of the head
        final CollRun.Config cfg = new CollRun.Config(o, DataType.INT32, RedOp.SUM, np - 1, 0, 40_000, 4, 0, 2, 1,
            true, kind.name().toLowerCase(), "injvm", true);
        final List<CollResult> rows = CollLocal.run(np, kind, cfg, new CollContext().algo(CollContext.Algo.RING)
            .buffSize(4096).steps(4)
            .channels(2).eagerBytes(eager).directBytes(0).settings(NONE), NONE, Duration.ofSeconds(20), r -> { });
        assertFalse(rows.isEmpty());
        for (final CollResult r : rows) {
            assertEquals(0, r.wrong(), r.toString());
            assertEquals(0, r.inPlaceWrong(), r.toString());
        }
    }

    @Test
    void theEagerHeadIsCappedAtAChunkAndAMultipleOfEight() {
        assertEquals(1024, new CollContext().buffSize(4096).steps(4).eagerBytes(1 << 20).settings(NONE).conclude()
            .eagerBytes());
        assertEquals(8192, new CollContext().settings(NONE).conclude().eagerBytes());
        assertEquals(0, new CollContext().eagerBytes(0).settings(NONE).conclude().eagerBytes());
        final IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, () -> new CollContext().eagerBytes(12).settings(NONE).conclude());
        assertTrue(e.getMessage().contains("gdrkit.coll.eager.bytes=12"), e.getMessage());
        final CollContext fromProps = new CollContext().settings(new SettingsReader(Map.of(),
            Map.of("gdrkit.coll.eager.bytes", "64"), Map.of())).conclude();
        assertEquals(64, fromProps.eagerBytes());
        assertTrue(fromProps.recorded().stream().anyMatch(x -> x.name().equals("gdrkit.coll.eager.bytes")
            && x.value().equals(64)), String.valueOf(fromProps.recorded()));
    }

    /**
     * Runs {@code body} on 2 ranks (threads, in-JVM fabric) with their own eager settings and the direct round off
     * (these tests are about the eager heads; CollDirectTest has the direct round's); their errors.
     */
    private static Throwable[] twoRanks(final CollWorld.TransportKind kind, final int[] eager,
                                        final ThreadRanks.Body body) throws Exception {
        return ThreadRanks.run(2, kind, rank -> new CollContext().algo(CollContext.Algo.RING)
            .buffSize(4096).steps(4).channels(1)
            .eagerBytes(eager[rank]).directBytes(0).timeout(Duration.ofSeconds(5)).settings(NONE), NONE,
            Duration.ofSeconds(90), body);
    }

    private static void fill(final MemorySegment m, final long seed) {
        final SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < m.byteSize() / 4; i++) {
            m.setAtIndex(ValueLayout.JAVA_INT, i, r.nextInt(1000) - 500);
        }
    }

    @ParameterizedTest
    @EnumSource(CollWorld.TransportKind.class)
    void outOfPlaceAllreduceAndReduceScatterLeaveTheirInputAlone(final CollWorld.TransportKind kind)
        throws Exception {
        final int count = 3001; // odd: blocks of unequal sizes, a head and several chunks each
        final Throwable[] err = twoRanks(kind, new int[] {256, 256}, (rank, c, a) -> {
            final MemorySegment in = a.allocate(count * 4L, 64);
            final MemorySegment keep = a.allocate(count * 4L, 64);
            final MemorySegment other = a.allocate(count * 4L, 64);
            fill(in, 100 + rank);
            fill(other, 100 + (1 - rank));
            MemorySegment.copy(in, 0, keep, 0, in.byteSize());
            final RegisteredBuffer s = c.register(in);
            final RegisteredBuffer d = c.register(a.allocate(count * 4L, 64).fill((byte) 0x7b));
            final RegisteredBuffer scratch = c.register(a.allocate(count * 4L, 64));
            Collectives.allReduce(c, s, d, count, DataType.INT32, RedOp.SUM);
            for (int i = 0; i < count; i++) {
                assertEquals(in.getAtIndex(ValueLayout.JAVA_INT, i) + other.getAtIndex(ValueLayout.JAVA_INT, i),
                    d.seg().getAtIndex(ValueLayout.JAVA_INT, i), "allreduce element " + i);
            }
            assertEquals(-1, in.mismatch(keep), "allreduce wrote into its input");
            final int per = count / 2;
            final RegisteredBuffer rs = c.register(a.allocate(per * 4L, 64).fill((byte) 0x7b));
            Collectives.reduceScatter(c, s, scratch, rs, per, DataType.INT32, RedOp.MAX);
            for (int i = 0; i < per; i++) {
                final int e = rank * per + i;
                assertEquals(Math.max(in.getAtIndex(ValueLayout.JAVA_INT, e), other.getAtIndex(ValueLayout.JAVA_INT,
                    e)), rs.seg().getAtIndex(ValueLayout.JAVA_INT, i), "reduce-scatter element " + i);
            }
            assertEquals(-1, in.mismatch(keep), "reduce-scatter wrote into its input");
        });
        assertNull(err[0], String.valueOf(err[0]));
        assertNull(err[1], String.valueOf(err[1]));
    }

    @ParameterizedTest
    @EnumSource(CollWorld.TransportKind.class)
    void aHeadSmallerThanPostedIsANamedErrorAtTheReceiver(final CollWorld.TransportKind kind) throws Exception {
        // rank 1 (root) cuts 64-byte heads, rank 0 expects the whole 80-byte message as its head: rank 0 must name
        // the size, not take the bytes
        final Throwable[] err = twoRanks(kind, new int[] {128, 64}, (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(80, 64).fill((byte) 1));
            final RegisteredBuffer d = c.register(a.allocate(80, 64));
            Collectives.broadcast(c, s, d, 20, DataType.INT32, 1);
        });
        assertNotNull(err[0], "rank 0 took a 64-byte head where it expected 80");
        assertTrue(err[0] instanceof CollException, String.valueOf(err[0]));
        assertTrue(err[0].getMessage().contains("eager head brought 64 bytes, expected 80"), err[0].getMessage());
        if (kind == CollWorld.TransportKind.IB) {
            // its last chunk is never received (a socket sender may finish without its receiver)
            assertNotNull(err[1], "rank 1 ended without an error while rank 0 failed");
        }
    }

    @ParameterizedTest
    @EnumSource(CollWorld.TransportKind.class)
    void aHeadLargerThanPostedIsTruncationNamedOnBothRanks(final CollWorld.TransportKind kind) throws Exception {
        // rank 1 (root) sends an 80-byte head into the 64-byte receive rank 0 posted ahead
        final Throwable[] err = twoRanks(kind, new int[] {64, 128}, (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(80, 64).fill((byte) 1));
            final RegisteredBuffer d = c.register(a.allocate(80, 64));
            Collectives.broadcast(c, s, d, 20, DataType.INT32, 1);
        });
        // IB: the sender sees the CTS's size and names the truncation; sockets: the receiver sees the header's
        final int named = kind == CollWorld.TransportKind.IB ? 1 : 0;
        assertNotNull(err[named], "rank " + named + " did not name the truncation");
        assertTrue(err[named] instanceof CollException, String.valueOf(err[named]));
        assertTrue(err[named].getMessage().contains("rank " + named) && err[named].getMessage().contains(
            "truncated"), err[named].getMessage());
        assertNotNull(err[0], "rank 0 ended without an error");
    }

    @Test
    void ranksThatDisagreeOnTheEagerConnectionAreNamedAtSetUp() throws Exception {
        final Throwable[] err = twoRanks(CollWorld.TransportKind.IB, new int[] {0, 64}, (rank, c, a) -> { });
        for (int r = 0; r < 2; r++) {
            assertNotNull(err[r], "rank " + r + " built a communicator with a peer of another eager setting");
            assertTrue(err[r] instanceof CollException, String.valueOf(err[r]));
            assertTrue(err[r].getMessage().contains("(a different channel count or eager setting?)"),
                err[r].getMessage());
        }
    }
}
