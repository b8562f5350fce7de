/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * /dev/shm as a hostile directory: planted symlinks, foreign modes, pre-created files, corrupt ring headers and
 * truncated files, as a local attacker (or a crashed peer) leaves them. Each gives a named error or is ignored,
 * never a hang, a crash or a write outside the fabric's directory.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmAttackTest {
    private static final int CAP = 1 << 12;

    @Test
    void directoryMustBePrivate(@TempDir final Path tmp) throws IOException {
        final Path open = Files.createDirectory(tmp.resolve("open"));
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxr-xr-x"));
        final IllegalStateException mode = assertThrows(IllegalStateException.class,
            () -> new ShmFabric(open, CAP, 2, null));
        assertTrue(mode.getMessage().contains("lets other users in"), mode::getMessage);
        final Path target = Files.createDirectory(tmp.resolve("target"));
        Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwx------"));
        final Path link = Files.createSymbolicLink(tmp.resolve("link"), target);
        final IllegalStateException sym = assertThrows(IllegalStateException.class,
            () -> new ShmFabric(link, CAP, 2, null));
        assertTrue(sym.getMessage().contains("symbolic link"), sym::getMessage);
        final Path missing = tmp.resolve("fresh");
        try (ShmFabric f = new ShmFabric(missing, CAP, 2, null)) {
            assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(missing)));
            f.attach(1);
            assertEquals("rw-------", PosixFilePermissions.toString(
                Files.getPosixFilePermissions(missing.resolve("link-2-1"))));
        }
    }

    @Test
    void privateDirectoryNamesAreUnpredictableAndFilesAreRemovedOnClose(@TempDir final Path tmp) {
        final Path a = ShmFabric.createPrivateDirectory(tmp, "gdrkit-x-");
        final Path b = ShmFabric.createPrivateDirectory(tmp, "gdrkit-x-");
        assertFalse(a.equals(b));
        assertTrue(a.getFileName().toString().matches("gdrkit-x-[0-9a-f]{32}"));
        try (ShmFabric f = new ShmFabric(a, CAP, 2, null)) {
            f.attach(1);
            assertTrue(Files.exists(a.resolve("port-1")));
        }
        assertFalse(Files.exists(a), "port file, links and the emptied directory are removed on close");
    }

    @Test
    void plantedSymlinkIsReplacedNeverFollowed(@TempDir final Path tmp) throws IOException {
        final Path dir = ShmFabric.createPrivateDirectory(tmp, "gdrkit-s-");
        final Path victim = Files.writeString(tmp.resolve("victim"), "precious");
        Files.createSymbolicLink(dir.resolve("link-2-1"), victim);
        try (ShmFabric f = new ShmFabric(dir, CAP, 2, null)) {
            f.attach(1);
            assertFalse(Files.isSymbolicLink(dir.resolve("link-2-1")));
        }
        assertEquals("precious", Files.readString(victim), "the symlink's target is untouched");
    }

    @Test
    void staleFilesOfDeadProcessesAreSwept(@TempDir final Path tmp) throws IOException {
        final Path dir = ShmFabric.createPrivateDirectory(tmp, "gdrkit-d-");
        // a port file naming a process that cannot exist, and its inbound links (as kill -9 leaves them)
        Files.writeString(dir.resolve("port-2"), "2147483647");
        Files.write(dir.resolve("link-1-2"), new byte[16]);
        try (ShmFabric f = new ShmFabric(dir, CAP, 2, null)) {
            f.attach(1);
            assertFalse(Files.exists(dir.resolve("port-2")));
            assertFalse(Files.exists(dir.resolve("link-1-2")));
        }
    }

    @Test
    void staleDirectoriesOfDeadProcessesAreSweptLiveOnesKept(@TempDir final Path tmp) throws IOException {
        final Path dead = ShmFabric.createPrivateDirectory(tmp, "gdrkit-z-");
        Files.writeString(dead.resolve("port-1"), "2147483647");
        Files.write(dead.resolve("link-2-1"), new byte[64]);
        final Path live = ShmFabric.createPrivateDirectory(tmp, "gdrkit-z-");
        Files.writeString(live.resolve("port-1"), Long.toString(ProcessHandle.current().pid()));
        final Path fresh = ShmFabric.createPrivateDirectory(tmp, "gdrkit-z-");
        final Path foreignMode = Files.createDirectory(tmp.resolve("gdrkit-z-open"));
        Files.setPosixFilePermissions(foreignMode, PosixFilePermissions.fromString("rwxr-xr-x"));
        assertEquals(1, ShmFabric.sweepStaleDirectories(tmp, "gdrkit-z-"));
        assertFalse(Files.exists(dead));
        assertTrue(Files.exists(live) && Files.exists(fresh) && Files.exists(foreignMode));
    }

    /**
     * The processes of one run (here two fabrics of this process on one directory): each removes only its own files,
     * the last one out the directory, and a sweep while one is still open removes nothing of it. Before, rank 0
     * walked the directory at its end while the peers removed their own files, and a file gone mid-walk failed a
     * run that had succeeded ("link-2-2: no such file").
     */
    @Test
    void eachPortRemovesOnlyItsOwnFilesAndTheLastOneOutTheDirectory(@TempDir final Path tmp) throws IOException {
        final Path dir = ShmFabric.createPrivateDirectory(tmp, "gdrkit-o-");
        final ShmFabric a = new ShmFabric(dir, CAP, 2, null);
        final ShmFabric b = new ShmFabric(dir, CAP, 2, null);
        try {
            a.attach(1);
            b.attach(2);
            final String me = Long.toString(ProcessHandle.current().pid());
            assertEquals(me, Files.readString(dir.resolve("port-1")));
            assertEquals(me, Files.readString(dir.resolve("port-2")));
            try (var files = Files.list(dir)) {
                assertEquals(List.of("link-1-1", "link-1-2", "link-2-1", "link-2-2", "port-1", "port-2"),
                    files.map(f -> f.getFileName().toString()).sorted().toList(), "no claim file is left behind");
            }
            a.close();
            try (var files = Files.list(dir)) {
                assertEquals(List.of("link-1-2", "link-2-2", "port-2"),
                    files.map(f -> f.getFileName().toString()).sorted().toList(), "a closed port's files only");
            }
            assertEquals(0, ShmFabric.sweepStaleDirectories(tmp, "gdrkit-o-"), "a live port's run is not stale");
            assertTrue(Files.exists(dir.resolve("link-2-2")));
        } finally {
            a.close();
            b.close();
        }
        assertFalse(Files.exists(dir), "the last one out removes the directory");
    }

    /** A claim is atomic: a port file names its process from the start. A taken LID is refused by name. */
    @Test
    void aTakenLidIsRefusedAndLeavesNoClaimFile(@TempDir final Path tmp) throws IOException {
        final Path dir = ShmFabric.createPrivateDirectory(tmp, "gdrkit-c-");
        try (ShmFabric a = new ShmFabric(dir, CAP, 2, null); ShmFabric b = new ShmFabric(dir, CAP, 2, null)) {
            a.attach(1);
            final IllegalStateException e = assertThrows(IllegalStateException.class, () -> b.attach(1));
            assertTrue(e.getMessage().contains("LID 1 on " + dir + " is held by live process "
                + ProcessHandle.current().pid()), e.getMessage());
            try (var files = Files.list(dir)) {
                assertTrue(files.noneMatch(f -> f.getFileName().toString().startsWith("claim-")));
            }
        }
    }

    @Test
    void truncatedOrForeignLinkFileIsUnroutableNotACrash(@TempDir final Path tmp) throws IOException {
        final Path dir = ShmFabric.createPrivateDirectory(tmp, "gdrkit-t-");
        try (ShmFabric f = new ShmFabric(dir, CAP, 2, null)) {
            final FabricPort p = f.attach(1);
            // a "peer" whose inbound link file is truncated before we map it
            Files.writeString(dir.resolve("port-2"), Long.toString(ProcessHandle.current().pid()));
            Files.write(dir.resolve("link-1-2"), new byte[100]);
            assertEquals(-2, p.tryClaim(2, 64), "a link file of the wrong size is unroutable");
        }
    }

    /** A ring as a peer's producer would leave it, written by hand. */
    private static SpscRingBuffer ring(final Arena arena) {
        return new SpscRingBuffer(arena.allocate(SpscRingBuffer.segmentSize(1024), 64));
    }

    private static void tail(final MemorySegment s, final long tail) {
        s.set(ValueLayout.JAVA_LONG, 1024, tail);
    }

    @Test
    void corruptRingHeadersAreNamedAndNeverHang() {
        try (Arena arena = Arena.ofConfined()) {
            final List<String> why = new ArrayList<>();
            // padding with skip 0: the old reader looped here forever
            SpscRingBuffer r = ring(arena);
            r.buffer().set(ValueLayout.JAVA_INT, 0, -1);
            r.buffer().set(ValueLayout.JAVA_INT, 4, 0);
            tail(r.buffer(), 64);
            why.add(corrupt(r));
            // a length beyond the record limit
            r = ring(arena);
            r.buffer().set(ValueLayout.JAVA_INT, 0, 1 << 20);
            tail(r.buffer(), 64);
            why.add(corrupt(r));
            // a negative length other than padding
            r = ring(arena);
            r.buffer().set(ValueLayout.JAVA_INT, 0, -7);
            tail(r.buffer(), 64);
            why.add(corrupt(r));
            // a tail far beyond the head
            r = ring(arena);
            tail(r.buffer(), 1L << 40);
            why.add(corrupt(r));
            // a record that runs past the committed tail
            r = ring(arena);
            r.buffer().set(ValueLayout.JAVA_INT, 0, 100);
            tail(r.buffer(), 16);
            why.add(corrupt(r));
            assertTrue(why.get(0).contains("skips 0 bytes"), why::toString);
            assertTrue(why.get(1).contains("claims 1048576 bytes"), why::toString);
            assertTrue(why.get(2).contains("claims -7 bytes"), why::toString);
            assertTrue(why.get(3).contains("capacity 1024"), why::toString);
            assertTrue(why.get(4).contains("committed tail"), why::toString);
        }
    }

    private static String corrupt(final SpscRingBuffer r) {
        final RingCorruptException e = assertThrows(RingCorruptException.class, () -> r.read((b, o, l) -> { }, 10));
        assertEquals(0, r.read((b, o, l) -> { }, 10), "a corrupt ring reads as empty from then on");
        assertEquals(e.getMessage(), "corrupt ring: " + r.corruption());
        return e.getMessage();
    }

    private static final ValueLayout.OfShort BIG_U16 =
        ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    /** A packet of {@code length} bytes with an LRH naming {@code dlid} and {@code slid}, the rest {@code fill}. */
    private static void send(final FabricPort from, final int dlid, final int slid, final int length,
                             final byte fill) {
        final long off = from.tryClaim(dlid, length);
        assertTrue(off >= 0, "claimed");
        final MemorySegment b = from.claimBuffer();
        b.asSlice(off, length).fill(fill);
        b.set(BIG_U16, off, (short) dlid);
        b.set(BIG_U16, off + 2, (short) slid);
        from.commit();
    }

    /** Maps link file {@code name} of {@code dir} as the producing process would. */
    private static MemorySegment mapLink(final Path dir, final String name, final Arena a) throws IOException {
        try (FileChannel ch = FileChannel.open(dir.resolve(name), StandardOpenOption.READ, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, SpscRingBuffer.segmentSize(CAP), a);
        }
    }

    /** Writes one record of {@code length} bytes at the ring's start with the given LRH, and publishes it. */
    private static void plant(final MemorySegment m, final int dlid, final int slid, final int length,
                              final byte fill) {
        m.set(ValueLayout.JAVA_INT, 0, length);
        m.set(ValueLayout.JAVA_INT, 4, 0);
        m.asSlice(8, length).fill(fill);
        m.set(BIG_U16, 8, (short) dlid);
        m.set(BIG_U16, 10, (short) slid);
        m.set(ValueLayout.JAVA_LONG, CAP, (long) ((length + 8 + 7) & ~7));
    }

    @Test
    void aPacketSpoofingAnotherLidOnItsLinkKillsThatLinkByNameOthersFlow(@TempDir final Path tmp)
        throws IOException {
        final Path dir = ShmFabric.createPrivateDirectory(tmp, "gdrkit-l-");
        try (ShmFabric f = new ShmFabric(dir, CAP, 3, null, false); Arena a = Arena.ofConfined()) {
            final RingPort p1 = (RingPort) f.attach(1);
            final FabricPort p3 = f.attach(3);
            // LID 2 (a hostile process of this user) writes into its own link to LID 1 a packet claiming SLID 3
            plant(mapLink(dir, "link-2-1", a), 1, 3, 40, (byte) 9);
            send(p3, 1, 3, 32, (byte) 5);
            final List<Integer> got = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                p1.poll((b, o, l) -> got.add(l), 10);
            }
            assertEquals(List.of(32), got, "only LID 3's own packet arrives; the spoofed one never");
            assertEquals(1, p1.spoofedPackets());
            assertEquals(1, p1.corruptRings());
            assertTrue(p1.lastRingError().contains("in the link from LID 2 claims DLID 1 SLID 3"),
                p1::lastRingError);
        }
    }

    @Test
    void aWrongDlidOnAnInboundLinkIsRefusedByName(@TempDir final Path tmp) throws IOException {
        final Path dir = ShmFabric.createPrivateDirectory(tmp, "gdrkit-w-");
        try (ShmFabric f = new ShmFabric(dir, CAP, 3, null, false); Arena a = Arena.ofConfined()) {
            final RingPort p1 = (RingPort) f.attach(1);
            plant(mapLink(dir, "link-2-1", a), 3, 2, 24, (byte) 1);
            final List<Integer> got = new ArrayList<>();
            p1.poll((b, o, l) -> got.add(l), 10);
            assertEquals(List.of(), got);
            assertTrue(p1.lastRingError().contains("claims DLID 3 SLID 2 (this port is LID 1)"), p1::lastRingError);
        }
    }

    /**
     * The producer rewrites a record after the consumer checked it (here: from inside the handler, the worst
     * moment). The handler must see the bytes that were checked: a copy, not the shared memory.
     */
    @Test
    void aRecordRewrittenAfterItsCheckDoesNotReachTheHandler(@TempDir final Path tmp) throws IOException {
        final Path dir = ShmFabric.createPrivateDirectory(tmp, "gdrkit-r-");
        try (ShmFabric f = new ShmFabric(dir, CAP, 2, null, true); Arena a = Arena.ofConfined()) {
            final RingPort p1 = (RingPort) f.attach(1);
            final FabricPort p2 = f.attach(2);
            send(p2, 1, 2, 64, (byte) 0x11); // a good packet with its link CRC
            final MemorySegment shared = mapLink(dir, "link-2-1", a);
            final byte[] seen = new byte[64];
            final int n = p1.poll((b, o, l) -> {
                shared.asSlice(8 + 4, 60).fill((byte) 0x66); // the other process strikes between check and use
                MemorySegment.copy(b, ValueLayout.JAVA_BYTE, o, seen, 0, l);
            }, 10);
            assertEquals(1, n);
            assertEquals(0, p1.crcErrors(), "the packet passed its CRC");
            for (int i = 4; i < 64; i++) {
                assertEquals((byte) 0x11, seen[i], "byte " + i + " is what was checked, not what was written later");
            }
        }
    }

    @Test
    void corruptInboundRingIsIgnoredByThePortOthersFlow(@TempDir final Path tmp) throws IOException {
        final Path dir = ShmFabric.createPrivateDirectory(tmp, "gdrkit-c-");
        try (ShmFabric f = new ShmFabric(dir, CAP, 3, null, false)) {
            final RingPort p1 = (RingPort) f.attach(1);
            final FabricPort p3 = f.attach(3);
            // LID 2 is a hostile process of the same user: it writes a skip-0 padding into its link to LID 1
            try (FileChannel ch = FileChannel.open(dir.resolve("link-2-1"), StandardOpenOption.READ,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS); Arena a = Arena.ofConfined()) {
                final MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, SpscRingBuffer.segmentSize(CAP),
                    a);
                m.set(ValueLayout.JAVA_INT, 0, -1);
                m.set(ValueLayout.JAVA_INT, 4, 0);
                m.set(ValueLayout.JAVA_LONG, CAP, 64L);
            }
            send(p3, 1, 3, 32, (byte) 5);
            final List<Integer> got = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                p1.poll((b, o, l) -> got.add(l), 10);
            }
            assertEquals(List.of(32), got, "LID 3's packet still arrives");
            assertEquals(1, p1.corruptRings());
            assertTrue(p1.lastRingError().contains("skips 0 bytes"), p1::lastRingError);
        }
    }
}
