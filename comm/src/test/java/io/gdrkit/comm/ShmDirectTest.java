/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.BootstrapRoot;
import io.gdrkit.softnic.fabric.ShmFabric;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Direct rounds through shared memory ({@link ShmDirect}): used only when every rank wants it and every rank mapped
 * every rank's file (else every rank keeps the NIC, and says why); nothing is left on disk once set up; and what a
 * hostile peer writes into its own file (a round number from nowhere, a length or header not this round's) is a
 * named error on the reader, never a wrong result or a crash. The data path itself is checked element by element
 * in CollDirectTest, with the shared memory on and off.
 */
class ShmDirectTest {
    private static final SettingsReader NONE = SettingsReader.ofEnv(Map.of());

    private static Throwable[] ranks(final int np, final ThreadRanks.Body body) throws Exception {
        return ThreadRanks.run(np, CollWorld.TransportKind.IB, rank -> new CollContext().algo(CollContext.Algo.RING)
            .buffSize(8192).steps(2)
            .channels(1).timeout(Duration.ofSeconds(5)).settings(NONE), NONE, Duration.ofSeconds(60), body);
    }

    /** Opens ShmDirect on {@code np} bootstrapped threads, rank r with {@code wanted[r]} under {@code base(r)}. */
    private static ShmDirect.Opened[] open(final int np, final boolean[] wanted, final IntFunction<Path> base)
        throws Exception {
        final ShmDirect.Opened[] out = new ShmDirect.Opened[np];
        final AtomicReferenceArray<Throwable> err = new AtomicReferenceArray<>(np);
        try (BootstrapRoot root = BootstrapRoot.startLoopback(np, Duration.ofSeconds(20))) {
            final Thread[] t = new Thread[np];
            for (int r = 0; r < np; r++) {
                final int rank = r;
                t[r] = Thread.ofPlatform().start(() -> {
                    try (Bootstrap b = Bootstrap.init(new BootstrapContext().id(root.id()).rank(rank).nranks(np)
                        .timeout(Duration.ofSeconds(20)))) {
                        out[rank] = ShmDirect.open(b, wanted[rank], 64, base.apply(rank));
                        b.barrier();
                    } catch (final Throwable e) {
                        err.set(rank, e);
                    }
                });
            }
            for (final Thread th : t) {
                th.join(60_000);
                assertFalse(th.isAlive(), "a rank hung in ShmDirect.open");
            }
        }
        for (int r = 0; r < np; r++) {
            assertNull(err.get(r), "rank " + r + ": " + err.get(r));
        }
        return out;
    }

    private static void closeAll(final ShmDirect.Opened[] o) {
        for (final ShmDirect.Opened x : o) {
            if (x.direct() != null) {
                x.direct().close();
            }
        }
    }

    @Test
    void everyRankOnOneHostGetsItAndNothingStaysOnDisk() throws Exception {
        final ShmDirect.Opened[] o = open(3, new boolean[] {true, true, true}, r -> ShmFabric.defaultBase());
        try {
            for (final ShmDirect.Opened x : o) {
                assertNotNull(x.direct(), x.why());
                assertEquals("all 3 ranks on one host", x.why());
                assertEquals(o[0].dir(), x.dir());
            }
            assertTrue(o[0].dir().getFileName().toString().matches("gdrkit-colld-[0-9a-f]{32}"), o[0].dir()
                .toString());
            assertFalse(Files.exists(o[0].dir()), "the run's directory was removed once every rank mapped it");
            // the mappings outlive the files: a round published by rank 2 is read by rank 0
            final MemorySegment in = Arena.ofAuto().allocate(8);
            in.set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
            assertTrue(o[2].direct().slotFree(1));
            assertFalse(o[0].direct().arrived(2, 1, 0xabcL, 8), "nothing published yet");
            o[2].direct().publish(1, 0xabcL, in, 0, 8);
            assertTrue(o[0].direct().arrived(2, 1, 0xabcL, 8));
            assertEquals(0x1122334455667788L, o[0].direct().seg(2).get(ValueLayout.JAVA_LONG, o[0].direct()
                .dataAt(1)));
            // slot reuse waits for every reader: round 1 + DEPTH is not free until ranks 0 and 1 are done with 1
            assertFalse(o[2].direct().slotFree(1 + ShmDirect.DEPTH));
            o[0].direct().done(1);
            assertFalse(o[2].direct().slotFree(1 + ShmDirect.DEPTH));
            o[1].direct().done(1);
            assertTrue(o[2].direct().slotFree(1 + ShmDirect.DEPTH));
        } finally {
            closeAll(o);
        }
    }

    /**
     * Seeded fuzz of what a hostile rank 1 can write into its own slot (round number, header, length): the reader
     * either waits (an earlier round of the slot, or none), takes exactly this round's header and length, or names
     * the peer in a CollException; nothing else escapes, and a "yes" never comes with a length it did not expect.
     */
    @Test
    void aFuzzedSlotIsWaitedForTakenOrNamedNeverMore() throws Exception {
        final ShmDirect.Opened[] o = open(2, new boolean[] {true, true}, r -> ShmFabric.defaultBase());
        try {
            final java.util.SplittableRandom g = new java.util.SplittableRandom(0x5eedL);
            final MemorySegment hostile = o[1].direct().seg(1);
            int waited = 0;
            int taken = 0;
            int named = 0;
            for (int i = 0; i < 20_000; i++) {
                final long d = 1 + g.nextInt(64);
                final long slot = o[0].direct().dataAt(d) - 24;
                final long round = switch (g.nextInt(4)) {
                    case 0 -> d;
                    case 1 -> Math.max(0, d - ShmDirect.DEPTH * g.nextInt(3));
                    default -> g.nextLong();
                };
                final long what = g.nextBoolean() ? 0x77L : g.nextLong();
                final int len = g.nextBoolean() ? 16 : g.nextInt();
                hostile.set(ValueLayout.JAVA_LONG, slot + 8, what);
                hostile.set(ValueLayout.JAVA_INT, slot + 16, len);
                hostile.set(ValueLayout.JAVA_LONG, slot, round);
                try {
                    if (o[0].direct().arrived(1, d, 0x77L, 16)) {
                        assertEquals(d, round);
                        assertEquals(0x77L, what);
                        assertEquals(16, len);
                        taken++;
                    } else {
                        assertTrue(round == 0 || round < d && (d - round) % ShmDirect.DEPTH == 0, "waited on "
                            + round + " for round " + d);
                        waited++;
                    }
                } catch (final CollException e) {
                    assertTrue(e.getMessage().contains("rank 1"), e.getMessage());
                    named++;
                }
            }
            assertTrue(waited > 0 && taken > 0 && named > 0, waited + " " + taken + " " + named);
        } finally {
            closeAll(o);
        }
    }

    @Test
    void oneRankWithItOffKeepsEveryRankOnTheNic() throws Exception {
        final ShmDirect.Opened[] o = open(3, new boolean[] {true, false, true}, r -> ShmFabric.defaultBase());
        for (final ShmDirect.Opened x : o) {
            assertNull(x.direct());
            assertEquals("rank 1 has it off (gdrkit.coll.shm.direct)", x.why());
        }
        if (o[0].dir() != null) {
            assertFalse(Files.exists(o[0].dir()), "rank 0's directory is removed when it goes unused");
        }
    }

    @Test
    void aRankThatCannotSeeRankZerosDirectoryKeepsEveryRankOnTheNic(@TempDir final Path otherHost)
        throws Exception {
        // rank 1 looks under another base, as a rank on another host finds no such directory in its /dev/shm
        final Path elsewhere = Files.createDirectory(otherHost.resolve("shm"),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        final ShmDirect.Opened[] o = open(2, new boolean[] {true, true}, r -> r == 1 ? elsewhere
            : ShmFabric.defaultBase());
        for (final ShmDirect.Opened x : o) {
            assertNull(x.direct());
            assertTrue(x.why().startsWith("rank 1 cannot make its file in rank 0's shared directory (another host, "
                + "or a full /dev/shm?)"), x.why());
        }
        assertFalse(Files.exists(o[0].dir()), "rank 0's directory is removed");
        try (var left = Files.list(elsewhere)) {
            assertEquals(0, left.count(), "rank 1 created nothing where it looked");
        }
    }

    @Test
    void aPeersFileThatIsALinkOrTheWrongSizeIsRefused(@TempDir final Path dir) throws Exception {
        final Path real = dir.resolve("real");
        Files.write(real, new byte[(int) ShmDirect.fileBytes(64)]);
        final Path link = Files.createSymbolicLink(dir.resolve("rank-1"), real);
        final IllegalStateException l = assertThrows(IllegalStateException.class, () -> ShmDirect.openPeer(link,
            64));
        assertTrue(l.getMessage().contains("rank-1"), l.getMessage());
        final IllegalStateException s = assertThrows(IllegalStateException.class, () -> ShmDirect.openPeer(real,
            128));
        assertTrue(s.getMessage().contains("bytes, expected " + ShmDirect.fileBytes(128)), s.getMessage());
        final IllegalStateException m = assertThrows(IllegalStateException.class, () -> ShmDirect.openPeer(
            dir.resolve("rank-9"), 64));
        assertTrue(m.getMessage().endsWith("does not exist"), m.getMessage());
    }

    @Test
    void aRoundNumberFromNowhereIsNamed() throws Exception {
        final Throwable[] err = ranks(2, (rank, c, a) -> {
            assertNotNull(c.shmDirect(), c.directPath());
            assertEquals("shm, up to 262144 B (all 2 ranks on one host; single copy (process_vm_readv) from "
                + "16384 B per block)", c.directPath());
            final RegisteredBuffer s = c.register(a.allocate(64, 64));
            if (rank == 0) {
                Collectives.allReduce(c, s, s, 2, DataType.FLOAT32, RedOp.SUM);
            } else {
                // a hostile rank 1 claims round 7 in the slot of round 1 (7 - 1 is no multiple of the depth)
                final MemorySegment own = c.shmDirect().seg(1);
                own.set(ValueLayout.JAVA_LONG, c.shmDirect().dataAt(1) - 24, 7L);
            }
        });
        assertTrue(err[0] instanceof CollException, String.valueOf(err[0]));
        assertTrue(err[0].getMessage().contains("rank 1's slot holds round 7 (not this round or an earlier one"),
            err[0].getMessage());
    }

    @Test
    void aLengthOrHeaderThatIsNotTheRoundsIsNamed() throws Exception {
        final Throwable[] err = ranks(2, (rank, c, a) -> {
            final RegisteredBuffer s = c.register(a.allocate(64, 64));
            if (rank == 0) {
                Collectives.allReduce(c, s, s, 2, DataType.FLOAT32, RedOp.SUM);
            } else {
                // round 1 published with a length of 4000 bytes (the reader must never read that far on its word)
                final MemorySegment own = c.shmDirect().seg(1);
                final long slot = c.shmDirect().dataAt(1) - 24;
                own.set(ValueLayout.JAVA_INT, slot + 16, 4000);
                own.set(ValueLayout.JAVA_LONG, slot, 1L);
            }
        });
        assertTrue(err[0] instanceof CollException, String.valueOf(err[0]));
        assertTrue(err[0].getMessage().contains("rank 1 wrote 4000 bytes with header 0x0, expected 8"),
            err[0].getMessage());
        assertTrue(err[0].getMessage().contains("mismatched operations"), err[0].getMessage());
    }
}
