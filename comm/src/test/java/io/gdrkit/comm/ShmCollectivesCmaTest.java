/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static io.gdrkit.comm.ThreadRanks.shmRunFiles;
import static io.gdrkit.comm.ThreadRanks.assertNoErrors;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.softnic.fabric.RemoteMemoryReader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Single-copy rounds through process_vm_readv ({@link CmaPull}) on the shm path: allgather, broadcast (root 0 and
 * another), sendrecv and alltoall at 2 to 4 ranks, byte counts across the 64 KiB threshold with odd sizes, every
 * byte of every rank checked, in place and out of place, the same bytes with single copy off; heap buffers beside
 * native ones; a probe that fails (EPERM) keeps every rank on the copy path and says why; a pull that fails (EFAULT,
 * a short read) is a named error and leaves no file in /dev/shm; a record of another length is named; a writer
 * whose reader is slower than the timeout ends with a named error.
 */
class ShmCollectivesCmaTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());
    private static final RemoteMemoryReader REAL = RemoteMemoryReader.processVmReadv();
    /** Bytes per block: one, odd small ones, just below, at and above the threshold, several slots. */
    private static final long[] COUNTS = {1, 4097, 65_535, 65_536, 65_537, 262_145, 600_001};

    @AfterEach
    void realReader() {
        CmaPull.readerFor = r -> REAL;
    }

    private static Throwable[] ranks(final int np, final IntFunction<CollContext> ctx, final ThreadRanks.Body body)
        throws Exception {
        return ThreadRanks.run(np, CollWorld.TransportKind.IB, ctx, NONE, Duration.ofSeconds(120), body);
    }

    private static CollContext ctx(final int cma) {
        return new CollContext().channels(1).timeout(Duration.ofSeconds(5)).settings(NONE).cmaBytes(cma);
    }

    /** Rank r's byte i. */
    private static byte in(final int r, final long i) {
        return (byte) (r * 131 + i * 7 + (i >> 9));
    }

    private static void fill(final MemorySegment m, final int r, final long count) {
        for (long i = 0; i < count; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, in(r, i));
        }
    }

    private static void expect(final MemorySegment m, final long at, final int r, final long from, final long count,
                               final String what) {
        for (long i = 0; i < count; i++) {
            if (m.get(ValueLayout.JAVA_BYTE, at + i) != in(r, from + i)) {
                throw new AssertionError(what + ": byte " + i + " of " + count);
            }
        }
    }

    /** Counts the pulls of every rank (the probe's included). */
    private static AtomicLong counting() {
        final AtomicLong n = new AtomicLong();
        CmaPull.readerFor = r -> (pid, dst, off, addr, len) -> {
            n.incrementAndGet();
            return REAL.read(pid, dst, off, addr, len);
        };
        return n;
    }

    private static void dataOps(final int np, final int cma) throws Exception {
        assertNoErrors(ranks(np, r -> ctx(cma), (rank, c, a) -> {
            final long max = COUNTS[COUNTS.length - 1] * np;
            final MemorySegment sm = a.allocate(max, 64);
            final MemorySegment rm = a.allocate(max, 64);
            final RegisteredBuffer s = c.register(sm);
            final RegisteredBuffer d = c.register(rm);
            final CollTuning.Choice ch = c.choose(CollOp.SENDRECV, 1 << 20);
            // allgather and broadcast pull only between 2 ranks (one reader per region)
            assertEquals(np == 2 && cma > 0, c.choose(CollOp.ALLGATHER, 1 << 20).why().contains("; single copy"));
            assertTrue(ch.why().endsWith(cma > 0 ? "; single copy (process_vm_readv) from " + cma + " B per block"
                : "; no single copy (rank 0 has it off (gdrkit.coll.cma.bytes=0))"), ch.why());
            for (final long n : COUNTS) {
                for (final boolean inPlace : new boolean[] {false, true}) {
                    final String what = np + " ranks, " + n + " B, cma " + cma + (inPlace ? ", in place" : "");
                    for (final int root : new int[] {0, np - 1}) {
                        fill(sm, rank, n);
                        rm.fill((byte) 0x5a);
                        Collectives.broadcast(c, s, inPlace ? s : d, n, DataType.INT8, root);
                        expect(inPlace ? sm : rm, 0, root, 0, n, "broadcast from " + root + ", " + what);
                    }
                    fill(sm, rank, n);
                    rm.fill((byte) 0x5a);
                    Collectives.sendRecv(c, s, inPlace ? s : d, n, DataType.INT8);
                    expect(inPlace ? sm : rm, 0, Math.floorMod(rank - 1, np), 0, n, "sendrecv " + what);
                    fill(sm, rank, n);
                    rm.fill((byte) 0x5a);
                    if (inPlace) {
                        MemorySegment.copy(sm, 0, rm, rank * n, n);
                        Collectives.allGather(c, c.register(rm.asSlice(rank * n, n)), d, n, DataType.INT8);
                    } else {
                        Collectives.allGather(c, s, d, n, DataType.INT8);
                    }
                    for (int p = 0; p < np; p++) {
                        expect(rm, p * n, p, 0, n, "allgather block " + p + ", " + what);
                    }
                    fill(sm, rank, n * np);
                    rm.fill((byte) 0x5a);
                    Collectives.allToAll(c, s, inPlace ? s : d, n, DataType.INT8);
                    for (int p = 0; p < np; p++) {
                        expect(inPlace ? sm : rm, p * n, p, rank * n, n, "alltoall block " + p + ", " + what);
                    }
                }
            }
        }));
    }

    @Test
    void everyDataOperationWithSingleCopyAtTwoThreeAndFourRanks() throws Exception {
        final AtomicLong pulls = counting();
        dataOps(2, 65536);
        dataOps(3, 65536);
        dataOps(4, 65536);
        assertTrue(pulls.get() > 100, pulls.get() + " pulls");
    }

    @Test
    void singleCopyOffGivesTheSameBytesAndPullsNothing() throws Exception {
        final AtomicLong pulls = counting();
        dataOps(3, 0);
        assertEquals(0, pulls.get());
    }

    @Test
    void heapBuffersBesideNativeOnesCopyOrBounce() throws Exception {
        final long n = 200_001;
        assertNoErrors(ranks(3, r -> ctx(65536), (rank, c, a) -> {
            final ShmCollectives sc = c.shmColl();
            // rank 0 sends from the heap (it cannot be pulled: it copies), rank 1 receives into the heap (it pulls
            // through its bounce buffer), rank 2 is native both ways
            final MemorySegment send = rank == 0 ? MemorySegment.ofArray(new byte[(int) n]) : a.allocate(n, 64);
            final MemorySegment recv = rank == 1 ? MemorySegment.ofArray(new byte[(int) n * 3]) : a.allocate(n * 3);
            fill(send, rank, n);
            sc.allGather(send, recv, n, DataType.INT8, sc.slotBytes());
            for (int p = 0; p < 3; p++) {
                expect(recv, p * n, p, 0, n, "allgather block " + p);
            }
            sc.broadcast(send, rank == 0 ? send : recv, n, DataType.INT8, 0, sc.slotBytes());
            expect(rank == 0 ? send : recv, 0, 0, 0, n, "broadcast from the heap");
            fill(send, rank, n);
            sc.broadcast(send, rank == 2 ? send : recv, n, DataType.INT8, 2, sc.slotBytes());
            expect(rank == 2 ? send : recv, 0, 2, 0, n, "broadcast to the heap");
            // sendrecv pulls at any rank count (one reader per region): every source native here, so rank 1
            // pulls rank 0's buffer through its bounce buffer into the heap, the others straight into theirs
            final MemorySegment native1 = a.allocate(n, 64);
            fill(native1, rank, n);
            sc.sendRecv(native1, recv, n, DataType.INT8, sc.slotBytes());
            expect(recv, 0, (rank + 2) % 3, 0, n, "sendrecv from rank " + (rank + 2) % 3);
        }));
    }

    @Test
    void aProbeThatFailsKeepsEveryRankOnTheCopyPathAndSaysWhy() throws Exception {
        CmaPull.readerFor = r -> r == 1 ? (pid, dst, off, addr, len) -> -RemoteMemoryReader.EPERM : REAL;
        assertNoErrors(ranks(3, r -> ctx(65536), (rank, c, a) -> {
            final String why = c.choose(CollOp.SENDRECV, 1 << 20).why();
            assertTrue(why.contains("; no single copy (rank 1 cannot read rank 2's memory (pid "), why);
            assertTrue(why.contains("EPERM (no ptrace permission"), why);
            assertTrue(c.directPath().contains("no single copy (rank 1 cannot read"), c.directPath());
            final long n = 300_001;
            final MemorySegment sm = a.allocate(n * 3);
            final MemorySegment rm = a.allocate(n * 3);
            fill(sm, rank, n);
            Collectives.allGather(c, c.register(sm), c.register(rm), n, DataType.INT8);
            for (int p = 0; p < 3; p++) {
                expect(rm, p * n, p, 0, n, "allgather block " + p);
            }
        }));
    }

    /** Rank 1's pulls of more than the probe's word answer {@code bad(len)}; the named error it ends with. */
    private static Throwable failingPull(final java.util.function.LongUnaryOperator bad) throws Exception {
        final Set<String> before = shmRunFiles();
        CmaPull.readerFor = r -> r != 1 ? REAL : (pid, dst, off, addr, len) -> len <= 8
            ? REAL.read(pid, dst, off, addr, len) : bad.applyAsLong(len);
        final Throwable[] err = ranks(3, r -> ctx(65536), (rank, c, a) -> {
            final long n = 100_003;
            final RegisteredBuffer s = c.register(a.allocate(n));
            final RegisteredBuffer d = c.register(a.allocate(n));
            Collectives.sendRecv(c, s, d, n, DataType.INT8); // rank 1 pulls rank 0's buffer
        });
        final Set<String> after = shmRunFiles();
        after.removeAll(before);
        assertEquals(Set.of(), after, "files left in /dev/shm");
        assertTrue(err[1] instanceof CollException, String.valueOf(err[1]));
        assertNotNull(err[0], "rank 0 waits for rank 1's pull: it ends too");
        return err[1];
    }

    @Test
    void aPullAtABadAddressIsANamedError() throws Exception {
        final String m = failingPull(len -> -RemoteMemoryReader.EFAULT).getMessage();
        assertTrue(m.contains("rank 1 sendrecv single-copy round "), m);
        assertTrue(m.contains(" in rank 0 (pid "), m);
        assertTrue(m.contains("EFAULT (an address outside that process's memory)"), m);
    }

    @Test
    void aShortPullIsANamedError() throws Exception {
        final String m = failingPull(len -> len - 1).getMessage();
        assertTrue(m.contains("rank 1 sendrecv single-copy round "), m);
        assertTrue(m.contains("a short read of 100002 bytes"), m);
    }

    @Test
    void theWriterWaitsForItsReadersAndEndsAtTheTimeoutNamingTheWait() throws Exception {
        // rank 1 takes 3 s over its pull: the root may not return (and change its buffer) before it is through
        CmaPull.readerFor = r -> r != 1 ? REAL : (pid, dst, off, addr, len) -> {
            if (len > 8) {
                try {
                    Thread.sleep(3000);
                } catch (final InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return REAL.read(pid, dst, off, addr, len);
        };
        final Throwable[] err = ranks(2, r -> ctx(65536).timeout(Duration.ofMillis(800)), (rank, c, a) -> {
            final long n = 70_001;
            final RegisteredBuffer s = c.register(a.allocate(n));
            Collectives.broadcast(c, s, c.register(a.allocate(n)), n, DataType.INT8, 0);
        });
        assertTrue(err[0] instanceof CollException, String.valueOf(err[0]));
        assertTrue(err[0].getMessage().contains("every rank to finish pulling single-copy round "),
            err[0].getMessage());
    }

    @Test
    void aPeerThatOffersAnotherLengthIsNamed() throws Exception {
        final Throwable[] err = ranks(2, r -> ctx(65536), (rank, c, a) -> {
            final long n = 70_001;
            final RegisteredBuffer s = c.register(a.allocate(n));
            if (rank == 1) {
                // a hostile root publishes a single-copy record of another length in its own slot
                final ShmDirect shm = c.shmDirect();
                final long d = shm.nextRound();
                shm.own().set(ValueLayout.JAVA_LONG, shm.dataAt(d), s.seg().address());
                shm.own().set(ValueLayout.JAVA_LONG, shm.dataAt(d) + 8, n + 100);
                shm.publishWritten(d, ShmCollectives.cmaHeader(ShmCollectives.header(CollOp.BROADCAST,
                    DataType.INT8, null, 0, 1)), 16);
                Thread.sleep(2000);
                throw new IllegalStateException("rank 1 played a hostile peer");
            }
            Collectives.broadcast(c, s, c.register(a.allocate(n)), n, DataType.INT8, 1);
        });
        assertTrue(err[0] instanceof CollException, String.valueOf(err[0]));
        assertTrue(err[0].getMessage().contains("rank 0 broadcast single-copy round 1: rank 1 offers 70101 bytes, "
            + "expected 70001"), err[0].getMessage());
    }
}
