/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The automatic choices count only the ranks of a rank's own host ({@link HostRanks}): ranks say where they are
 * through the bootstrap, every record is checked, and every rank gets the same NIC count even where hosts differ.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HostRanksTest {
    private static final SettingsReader NONE = new SettingsReader(Map.of(), Map.of(), Map.of());

    private static byte[][] records(final String... r) {
        final byte[][] b = new byte[r.length][];
        for (int i = 0; i < r.length; i++) {
            b[i] = r[i].getBytes(StandardCharsets.US_ASCII);
        }
        return b;
    }

    @Test
    void hostsAreNumberedByTheirLowestRankAndCountTheirRanks() {
        final HostRanks h = HostRanks.of(records("host1 16 boot:a", "host1 8 boot:b", "host1 16 boot:a",
            "host1 8 boot:b", "host1 32 name:c"));
        assertArrayEquals(new int[] {0, 1, 0, 1, 2}, h.hostOf());
        assertArrayEquals(new int[] {16, 8, 16, 8, 32}, h.cpus());
        assertEquals(3, h.hosts());
        assertEquals(2, h.localRanks(0));
        assertEquals(2, h.localRanks(3));
        assertEquals(1, h.localRanks(4));
        assertTrue(h.identified());
        final HostRanks u = HostRanks.of(records("host1 4 unknown", "host1 4 unknown"));
        assertFalse(u.identified(), "unknown hosts count as one, and say so");
        assertEquals(2, u.localRanks(1));
        assertEquals(HostRanks.of(records(new String(HostRanks.record(12, "boot:x"), StandardCharsets.US_ASCII))),
            new HostRanks(new int[] {0}, new int[] {12}, true), "a record reads back as written");
        assertEquals(1, HostRanks.oneHost(3, 2).hosts());
        assertEquals(3, HostRanks.oneHost(3, 2).localRanks(2));
    }

    @Test
    void everyBadRecordIsRefusedByNameAndRank() {
        final String[][] bad = {
            {"", "its length 0 is outside 1..128"},
            {"host1 16 " + "x".repeat(130), "its length 139 is outside 1..128"},
            {"host1 16 boot:\u00e9", "not printable ASCII"},
            {"host1 16 boot:a\n", "not printable ASCII"},
            {"host2 16 boot:a", "it is not 'host1 CPUS HOST'"},
            {"host1 16", "it is not 'host1 CPUS HOST'"},
            {"host1 16 boot:a extra", "it is not 'host1 CPUS HOST'"},
            {"host1  16 boot:a", "it is not 'host1 CPUS HOST'"},
            {"host1 0 boot:a", "processor count '0' is not a number in 1..65536"},
            {"host1 -4 boot:a", "processor count '-4'"},
            {"host1 016 boot:a", "processor count '016'"},
            {"host1 65537 boot:a", "processor count '65537'"},
            {"host1 99999999999 boot:a", "processor count '99999999999'"},
            {"host1 +8 boot:a", "processor count '+8'"},
            {"host1 16 ", "its host identity is empty"},
            {"host1 16 " + "h".repeat(97), "longer than 96 characters"},
        };
        for (final String[] c : bad) {
            final byte[] b = c[0].getBytes(StandardCharsets.ISO_8859_1);
            final CollException e = assertThrows(CollException.class, () -> HostRanks.of(new byte[][] {
                "host1 4 boot:ok".getBytes(StandardCharsets.US_ASCII), b}), c[0]);
            assertTrue(e.getMessage().startsWith(HostRanks.BAD_RECORD + ": rank 1's host record is refused: "),
                e.getMessage());
            assertTrue(e.getMessage().contains(c[1]), c[0] + ": " + e.getMessage());
        }
        final CollException nul = assertThrows(CollException.class, () -> HostRanks.of(new byte[][] {null}));
        assertTrue(nul.getMessage().contains("rank 0's host record"), nul.getMessage());
    }

    @Test
    void theNicCountIsTheFewestOverTheHostsAndTheSameOnEveryRank() {
        final CollContext c = new CollContext().settings(NONE).conclude();
        // one host: as before
        final HostRanks one = HostRanks.oneHost(2, 16);
        assertEquals(CollWorld.chooseNics(c, "tcp", 2, 16), CollWorld.chooseNics(c, "tcp", one, 0));
        // 8 ranks on two 32-processor hosts: counted as 8 local ranks they got 1 NIC; 4 per host get 4
        final HostRanks two = HostRanks.of(records("host1 32 boot:a", "host1 32 boot:a", "host1 32 boot:a",
            "host1 32 boot:a", "host1 32 boot:b", "host1 32 boot:b", "host1 32 boot:b", "host1 32 boot:b"));
        assertEquals(1, CollWorld.chooseNics(c, "tcp", 8, 32).count(), "every rank counted as local");
        for (int r = 0; r < 8; r++) {
            final CollWorld.NicChoice k = CollWorld.chooseNics(c, "tcp", two, r);
            assertEquals(4, k.count(), "rank " + r);
            assertEquals("auto: 32 processors >= 7 x 4 ranks on this host, tcp prefers 4; the fewest over 2 hosts",
                k.why());
        }
        // hosts of 16 and 12 processors, one rank each: counted as local, they chose 4 and 3 and the communicator
        // refused the mismatch; now both choose 4
        assertEquals(4, CollWorld.chooseNics(c, "tcp", 2, 16).count());
        assertEquals(3, CollWorld.chooseNics(c, "tcp", 2, 12).count());
        final HostRanks uneven = HostRanks.of(records("host1 16 boot:a", "host1 12 boot:b"));
        assertEquals(4, CollWorld.chooseNics(c, "tcp", uneven, 0).count());
        assertEquals(4, CollWorld.chooseNics(c, "tcp", uneven, 1).count());
        // the smaller host sets the count for all, and the others are told which host did
        final HostRanks small = HostRanks.of(records("host1 16 boot:a", "host1 16 boot:a", "host1 8 boot:b",
            "host1 8 boot:b"));
        final CollWorld.NicChoice atBig = CollWorld.chooseNics(c, "tcp", small, 0);
        final CollWorld.NicChoice atSmall = CollWorld.chooseNics(c, "tcp", small, 2);
        assertEquals(1, atBig.count());
        assertEquals(1, atSmall.count());
        assertEquals("auto: 8 processors < 5 x 2 ranks on rank 2's host; the fewest over 2 hosts, set by rank 2's host",
            atBig.why());
        assertEquals("auto: 8 processors < 5 x 2 ranks on this host; the fewest over 2 hosts", atSmall.why());
        // a count given is the count, whatever the hosts
        final CollContext set = new CollContext().settings(new SettingsReader(Map.of(),
            Map.of("gdrkit.coll.nics", "3"), Map.of())).conclude();
        assertEquals(3, CollWorld.chooseNics(set, "tcp", small, 0).count());
    }

    /** Rank processes over tcp, as threads that say they are on other hosts or have other processor counts. */
    private static String[] run(final CollWorld.Here... here) throws Exception {
        final int np = here.length;
        final String[] seen = new String[np];
        final Throwable[] err = ThreadRanks.worlds(np, (rank, b) -> CollWorld.open(b, new WorldContext()
            .fabric(Fabric.TCP).transport(CollWorld.TransportKind.IB).coll(new CollContext()
                .algo(CollContext.Algo.RING).buffSize(65536).steps(4))
            .settings(NONE).timeout(Duration.ofSeconds(20)), here[rank]), Duration.ofSeconds(90), (rank, w, a) -> {
                final Communicator c = w.communicator();
                final MemorySegment s = a.allocate(4096 * 4L, 64);
                for (int i = 0; i < 4096; i++) {
                    s.setAtIndex(ValueLayout.JAVA_INT, i, rank * 100_000 + i);
                }
                final RegisteredBuffer buf = c.register(s);
                Collectives.allReduce(c, buf, buf, 4096, DataType.INT32, RedOp.SUM);
                for (int i = 0; i < 4096; i++) {
                    assertEquals(np * i + 100_000 * np * (np - 1) / 2, s.getAtIndex(ValueLayout.JAVA_INT, i),
                        "element " + i);
                }
                seen[rank] = c.devices() + "|" + c.nicProgress() + "|" + c.reduceThreads().reason();
            });
        for (int r = 0; r < np; r++) {
            assertNull(err[r], "rank " + r + ": " + err[r]);
        }
        return seen;
    }

    @Test
    void ranksOfOneHostWithOtherProcessorLimitsAgreeOnTheNics() throws Exception {
        // one kernel, two limits (containers): 10 processors gave 2 NICs for 2 local ranks, 9 gave 1, and the
        // communicator refused the mismatch; the fewest wins on both
        final String[] seen = run(new CollWorld.Here(10, "boot:same"), new CollWorld.Here(9, "boot:same"));
        for (final String s : seen) {
            assertTrue(s.startsWith("1|"), s);
            assertTrue(s.contains("1 NIC per rank (auto: 9 processors < 5 x 2 ranks on this host"), s);
        }
        assertTrue(seen[0].contains("ranks on this host, rank 1's processors)"), seen[0]);
        assertTrue(seen[0].contains("10 processors >= 4 x 2 ranks on this host"), "rank 0's own NIC progress: "
            + seen[0]);
    }

    @Test
    void ranksOnOtherHostsDoNotCompeteForThisHostsProcessors() throws Exception {
        // 5 processors each: 2 ranks on one host get 1 NIC (5 < 5 x 2); one rank per host gets 2 (5 >= 5 x 1)
        assertEquals(1, CollWorld.chooseNics(new CollContext().settings(NONE).conclude(), "tcp", 2, 5).count());
        final String[] seen = run(new CollWorld.Here(5, "boot:a"), new CollWorld.Here(5, "boot:b"));
        for (final String s : seen) {
            assertTrue(s.startsWith("2|"), s);
            assertTrue(s.contains("5 processors >= 5 x 1 ranks on this host, tcp prefers 4; the fewest over 2 hosts"),
                s);
        }
    }

    @Test
    void gdrkitHostIdNamesTheHostWhereTheBootIdWouldBeWrongAndABadOneIsNamed() {
        final CollWorld.Here set = CollWorld.Here.probe(io.gdrkit.core.config.SettingsReader.ofEnv(
            java.util.Map.of("GDRKIT_HOST_ID", " netns-b ")));
        org.junit.jupiter.api.Assertions.assertEquals("set:netns-b", set.hostIdentity());
        final CollWorld.Here unset = CollWorld.Here.probe(io.gdrkit.core.config.SettingsReader.ofEnv(
            java.util.Map.of()));
        org.junit.jupiter.api.Assertions.assertEquals(GpuSharing.hostIdentity(), unset.hostIdentity());
        for (final String bad : new String[] {"a b", "x/y", "ho\u0000st", "h".repeat(65)}) {
            final IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalArgumentException.class, () -> CollWorld.Here.probe(io.gdrkit.core.config.SettingsReader
                    .ofEnv(java.util.Map.of("GDRKIT_HOST_ID", bad))));
            org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("GDRKIT_HOST_ID=")
                && e.getMessage().contains("is not 1..64 of A-Z a-z 0-9 . _ -"), e.getMessage());
        }
    }
}
