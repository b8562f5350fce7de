/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.auth.Token;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.BootstrapRoot;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The collectives' TCP fabric against a stranger (issue 18): LIDs are the bootstrap's ranks + 1, each rank's
 * fabric admits only the LIDs of the ranks that connect to it, and every hello must prove the run (its token, and
 * its run id, the secret of a run without a token). A stranger cannot claim a LID; the ranks go on.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class CollFabricAttackTest {

    /**
     * A peer's fabric address is IP:port with a literal IP, as ranks send it; anything else is a named error, and a
     * host name is never looked up (a peer's word must not make this rank ask DNS).
     */
    @Test
    void aPeersFabricAddressMustBeALiteralIpAndAPort() {
        assertEquals(new InetSocketAddress(java.net.InetAddress.ofLiteral("127.0.0.1"), 4711),
            CollWorld.parse("127.0.0.1:4711".getBytes(StandardCharsets.US_ASCII), 1));
        assertEquals(new InetSocketAddress(java.net.InetAddress.ofLiteral("::1"), 80),
            CollWorld.parse("0:0:0:0:0:0:0:1:80".getBytes(StandardCharsets.US_ASCII), 1));
        for (final String bad : List.of("localhost:4711", "evil.example.invalid:4711", "10.0.0.300:1", "")) {
            final CollException e = org.junit.jupiter.api.Assertions.assertThrows(CollException.class,
                () -> CollWorld.parse(bad.getBytes(StandardCharsets.US_ASCII), 3), bad);
            assertTrue(e.getMessage().startsWith("rank 3 sent a fabric address"), e::getMessage);
        }
        for (final String bad : List.of("127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", ":80", "127.0.0.1:x",
            "127.0.0.1:-1")) {
            final CollException e = org.junit.jupiter.api.Assertions.assertThrows(CollException.class,
                () -> CollWorld.parse(bad.getBytes(StandardCharsets.US_ASCII), 2), bad);
            assertEquals("rank 2 sent a fabric address that is not IP:port", e.getMessage(), bad);
        }
        final CollException name = org.junit.jupiter.api.Assertions.assertThrows(CollException.class,
            () -> CollWorld.parse("localhost:4711".getBytes(StandardCharsets.US_ASCII), 3));
        assertTrue(name.getMessage().contains("not a literal IP address"), name::getMessage);
    }
    private static final Duration T = Duration.ofSeconds(30);

    /** Sends a hello claiming {@code lid}, proving {@code token}; returns the refusal, or null when accepted. */
    private static String hello(final InetSocketAddress at, final int lid, final Token token) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(at, 5000);
            s.setSoTimeout(20_000);
            final DataInputStream in = new DataInputStream(s.getInputStream());
            final byte[] chal = new byte[24];
            in.readFully(chal);
            final ByteBuffer h = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
            h.putInt('G' | 'D' << 8 | 'R' << 16 | 'T' << 24).putShort((short) 2).putShort((short) 0).putInt(lid)
                .putInt(4242).putShort((short) 0).putShort((short) 1).putInt(CollWorld.LINK_CAPACITY);
            final byte[] mac = token.isSet() ? token.answer(Arrays.copyOfRange(chal, 8, 24), h.array())
                : new byte[32];
            s.getOutputStream().write(h.array());
            s.getOutputStream().write(mac);
            final byte[] v = new byte[128];
            in.readFully(v);
            final int n = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN).getInt(4);
            return n == 0 ? null : new String(v, 8, n, StandardCharsets.UTF_8);
        }
    }

    /**
     * A rank's listen-handle blob (its device count, then a handle per peer and connection) is a peer's word: a raw
     * rank 1 that joins the bootstrap and gathers a short blob, another device count, the right count with the wrong
     * length, or seeded random bytes stops rank 0's communicator with a named error, never a connect to what the
     * bytes say and never a hang.
     */
    /**
     * Rank 0 of a 2-rank run opens its world on {@code fabric} (IbTransport, defaults) on {@code ex}, while the test
     * plays rank 1 by hand; the future holds what the open threw (null: it opened, and was closed again).
     */
    private static Future<Throwable> rankZeroOpens(final ExecutorService ex, final BootstrapRoot root,
                                                   final String fabric, final io.gdrkit.softnic.SoftNicDriver driver) {
        final SettingsReader none = SettingsReader.ofEnv(Map.of());
        return ex.submit(() -> {
            final Bootstrap b = Bootstrap.init(new BootstrapContext().id(root.id()).rank(0).nranks(2).timeout(T));
            try (CollWorld w = CollWorld.open(b, new WorldContext().fabric(Fabric.parse(fabric)).sharedDriver(driver)
                .transport(CollWorld.TransportKind.IB).coll(new CollContext().settings(none)).settings(none)
                .timeout(T))) {
                return null;
            } catch (final Throwable e) {
                return e;
            } finally {
                b.close();
            }
        });
    }

    @Test
    void aRanksListenHandlesAreCheckedBeforeUse() throws Exception {
        final java.util.Random rnd = new java.util.Random(41);
        final List<byte[]> blobs = new ArrayList<>(List.of(new byte[0], new byte[3],
            ByteBuffer.allocate(516).putInt(7).array(), ByteBuffer.allocate(515).putInt(1).array(),
            ByteBuffer.allocate(4).putInt(1).array()));
        for (int i = 0; i < 8; i++) {
            final byte[] b = new byte[rnd.nextInt(700)];
            rnd.nextBytes(b);
            blobs.add(b);
        }
        final ExecutorService ex = Executors.newSingleThreadExecutor();
        // one driver for every round: a failed open takes its devices off the shared driver again, so the next
        // round's rank 0 can use the same names (it failed with "device name 'coll-rank0' already used" before)
        try (io.gdrkit.softnic.SoftNicDriver driver = io.gdrkit.softnic.SoftNicDriver.launch(
            CollWorld.nicContext())) {
            for (final byte[] blob : blobs) {
                try (BootstrapRoot root = BootstrapRoot.startLoopback(2, T)) {
                    final Future<Throwable> real = rankZeroOpens(ex, root, "injvm", driver);
                    try (Bootstrap raw = Bootstrap.init(new BootstrapContext().id(root.id()).rank(1).nranks(2)
                        .timeout(T))) {
                        try {
                            raw.allGather(blob);
                        } catch (final RuntimeException x) {
                            throw new AssertionError("rank 0: " + real.get(60, TimeUnit.SECONDS), x);
                        }
                        final Throwable e = real.get(60, TimeUnit.SECONDS);
                        assertTrue(e instanceof CollException, blob.length + " bytes: " + e);
                        assertTrue(e.getMessage().contains("rank 1 has ") && e.getMessage().contains(
                            " network devices, rank 0 has 1") || e.getMessage().contains("rank 1 sent " + blob.length
                            + " bytes of listen handles, expected 516"), e::getMessage);
                    }
                    assertEquals(List.of(), driver.devices(), "rank 0's failed open left devices on the driver");
                }
            }
        } finally {
            ex.shutdownNow();
        }
    }

    /**
     * The first thing rank processes exchange is where they are (HostRanks): a raw rank 1 sends bad host records, and
     * rank 0 stops with BAD_HOST_RECORD naming rank 1 before it makes a NIC, over shm and over tcp, never hanging.
     */
    @Test
    void aRanksHostRecordIsCheckedBeforeAnythingIsChosen() throws Exception {
        final String[][] bad = {{"tcp", ""}, {"shm", "host1 0 boot:x"}, {"tcp", "host1 16"},
            {"shm", "host9 16 boot:x"}, {"tcp", "host1 16 boot:x\u0001"}};
        final ExecutorService ex = Executors.newSingleThreadExecutor();
        try {
            for (final String[] c : bad) {
                try (BootstrapRoot root = BootstrapRoot.startLoopback(2, T)) {
                    final Future<Throwable> real = rankZeroOpens(ex, root, c[0], null);
                    try (Bootstrap raw = Bootstrap.init(new BootstrapContext().id(root.id()).rank(1).nranks(2)
                        .timeout(T))) {
                        raw.allGather(c[1].getBytes(StandardCharsets.ISO_8859_1));
                        final Throwable e = real.get(60, TimeUnit.SECONDS);
                        assertTrue(e instanceof CollException, c[0] + " '" + c[1] + "': " + e);
                        assertTrue(e.getMessage().startsWith(HostRanks.BAD_RECORD + ": rank 1's host record is "
                            + "refused: "), e::getMessage);
                    }
                }
            }
        } finally {
            ex.shutdownNow();
        }
    }

    @Test
    void aStrangerCanNeitherJoinNorClaimALidOfTheRanksFabric() throws Exception {
        final int n = 2;
        final SettingsReader none = SettingsReader.ofEnv(Map.of());
        try (BootstrapRoot root = BootstrapRoot.startLoopback(n, T)) {
            final ExecutorService ex = Executors.newFixedThreadPool(n);
            final List<Future<CollWorld>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                final int rank = r;
                fs.add(ex.submit(() -> CollWorld.open(Bootstrap.init(new BootstrapContext().id(root.id()).rank(rank)
                    .nranks(n).timeout(T)), new WorldContext().fabric(Fabric.TCP).transport(CollWorld.TransportKind.IB)
                        .coll(new CollContext().buffSize(8192).steps(4).channels(1).settings(none)).settings(none)
                        .timeout(T))));
            }
            final CollWorld w0 = fs.get(0).get(60, TimeUnit.SECONDS);
            final CollWorld w1 = fs.get(1).get(60, TimeUnit.SECONDS);
            try {
                final InetSocketAddress at = w1.tcpFabric().localAddress();
                // without the run's proof: refused before any LID is looked at
                final String anon = hello(at, 3, Token.NONE);
                assertTrue(anon != null && anon.contains("authentication failed"), String.valueOf(anon));
                // even with it (an insider of another rank count), a LID no rank was given is refused
                final Token run = CollWorld.fabricToken(w1.communicator().bootstrap());
                final String unassigned = hello(at, 3, run);
                assertTrue(unassigned != null && unassigned.contains("LID 3 was not assigned by this listener"),
                    String.valueOf(unassigned));
                // and rank 0's LID is held by rank 0's live connection
                final String taken = hello(at, 1, run);
                assertTrue(taken != null && taken.contains("LID 1 is held by a live connection"), String.valueOf(taken));
                assertTrue(w1.tcpFabric().rejectedConnections() >= 3);
                // the ranks still work together: an allreduce, checked
                final List<Future<Long>> wrong = new ArrayList<>();
                for (final CollWorld w : List.of(w0, w1)) {
                    wrong.add(ex.submit(() -> {
                        long bad = 0;
                        for (final CollResult r : CollRun.run(w.communicator(), new CollRun.Config(CollOp.ALLREDUCE,
                            DataType.FLOAT32, RedOp.SUM, 0, 1024, 1024, 2, 0, 2, 1, true, "ib", "tcp", true),
                            x -> { })) {
                            bad += r.wrong() + r.inPlaceWrong();
                        }
                        return bad;
                    }));
                }
                for (final Future<Long> f : wrong) {
                    assertEquals(0L, f.get(60, TimeUnit.SECONDS));
                }
            } finally {
                final Future<?> c0 = ex.submit(() -> closeAll(w0));
                closeAll(w1);
                c0.get(60, TimeUnit.SECONDS);
                ex.shutdownNow();
            }
        }
    }

    private static void closeAll(final CollWorld w) {
        final Bootstrap b = w.communicator().bootstrap();
        w.close();
        b.close();
    }
}
