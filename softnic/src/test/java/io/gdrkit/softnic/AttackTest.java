/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.core.auth.Token;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import io.gdrkit.verbs.cm.CmConnection;
import io.gdrkit.verbs.cm.CmException;
import io.gdrkit.verbs.cm.CmListener;
import io.gdrkit.verbs.cm.ConnectionManager;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Each attack of issue 18 against the connection manager, the TCP fabric and the verbs API, driven from raw
 * sockets or misuse as a hostile peer or a careless program would. Every one must end in a named error for the
 * attacker's connection only, with the service still serving a well-behaved peer afterwards.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AttackTest {
    private static final InetAddress LO = InetAddress.getLoopbackAddress();
    private static final Duration T = Duration.ofSeconds(20);

    // ------------------------------------------------------------------ connection manager

    /** Raw bytes of a CM v2 message (header, zero authenticator, private data). */
    private static byte[] cm(final int type, final int qpn, final int psn, final int lid, final int mtu,
                             final byte[] pd) {
        return ByteBuffer.allocate(56 + pd.length).putInt(0x4744434D).put((byte) 2).put((byte) type)
            .putShort((short) pd.length).putInt(qpn).putInt(psn).putShort((short) lid).putShort((short) 0)
            .putInt(mtu).put(new byte[32]).put(pd).array();
    }

    /** Connects, reads the CHAL (56 + 16 bytes), sends {@code bytes}; returns the socket. */
    private static Socket rawCm(final InetSocketAddress at, final byte[] bytes) throws IOException {
        final Socket s = new Socket();
        s.connect(at, 5000);
        s.setSoTimeout(10_000);
        new DataInputStream(s.getInputStream()).readFully(new byte[72]);
        s.getOutputStream().write(bytes);
        s.getOutputStream().flush();
        return s;
    }

    /** A real client's REQ through the CM, accepted on another thread: the listener still serves. */
    private static void realClientIsServed(final Fixture f, final CmListener listener, final Token token) {
        final QueuePair qa = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
        final QueuePair qb = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, f.b.rcq));
        final CmConnection[] server = new CmConnection[1];
        final Thread t = Thread.ofPlatform().start(() -> {
            final CmListener.Request r = listener.accept(T);
            server[0] = r.accept(qb, f.b.dev.lid(), QpBringUp.rcDefaults(), new byte[] {7});
        });
        final CmConnection client = ConnectionManager.connect(listener.localAddress(), qa, f.a.dev.lid(),
            QpBringUp.rcDefaults(), new byte[] {1, 2}, T, token);
        try {
            t.join(20_000);
        } catch (final InterruptedException e) {
            throw new IllegalStateException(e);
        }
        assertNotNull(server[0], "the listener accepted the real client");
        assertEquals(qb.qpNum(), client.remoteQpn());
        final Thread answer = Thread.ofPlatform().start(server[0]::awaitDisconnect);
        client.close();
        try {
            answer.join(20_000);
        } catch (final InterruptedException e) {
            throw new IllegalStateException(e);
        }
        assertTrue(server[0].isDisconnected());
    }

    @Test
    void cmRejectsOutOfRangeFieldsAndKeepsServing() throws Exception {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096);
             CmListener listener = new CmListener(new InetSocketAddress(LO, 0), Token.NONE, Duration.ofSeconds(5),
                 16)) {
            final byte[][] attacks = {
                cm(1, 0, 1, 2, 4096, new byte[0]),                    // QP number 0
                cm(1, 0x1000000, 1, 2, 4096, new byte[0]),            // QP number beyond 24 bits
                cm(1, 100, 1, 0, 4096, new byte[0]),                  // LID 0
                cm(1, 100, 1, 0xFFFF, 4096, new byte[0]),             // multicast LID
                cm(1, 100, 0x7FFFFFFF, 2, 4096, new byte[0]),         // PSN beyond 24 bits
                cm(1, 100, 1, 2, 3000, new byte[0]),                  // MTU not a power of two
                cm(1, 100, 1, 2, 1 << 30, new byte[0]),               // MTU 1 GiB
                cm(99, 100, 1, 2, 4096, new byte[0]),                 // unknown type
                cm(3, 100, 1, 2, 4096, new byte[0]),                  // RTU instead of REQ
            };
            final String[] named = {"QP number 0", "QP number 16777216", "LID 0", "LID 65535", "start PSN",
                "path MTU 3000", "path MTU 1073741824", "unknown CM message type 99", "expected REQ or INFO"};
            for (int i = 0; i < attacks.length; i++) {
                final long before = listener.protocolErrors();
                try (Socket s = rawCm(listener.localAddress(), attacks[i])) {
                    assertEquals(-1, s.getInputStream().read(), "the listener closes the attacker's connection");
                }
                final int k = i;
                awaitTrue(() -> listener.protocolErrors() > before, "protocol error counted");
                assertTrue(listener.lastError().contains(named[k]), listener::lastError);
            }
            // private data length beyond 256: refused from the header, before any allocation
            final byte[] big = cm(1, 100, 1, 2, 4096, new byte[0]);
            big[6] = (byte) 0xFF;
            big[7] = (byte) 0xFF;
            try (Socket s = rawCm(listener.localAddress(), big)) {
                assertEquals(-1, s.getInputStream().read());
            }
            awaitTrue(() -> listener.lastError().contains("65535 bytes"), "private-data limit named");
            realClientIsServed(f, listener, Token.NONE);
        }
    }

    @Test
    void cmTruncatedRequestTimesOutAloneAndStrayConnectionsAreCapped() throws Exception {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096);
             CmListener listener = new CmListener(new InetSocketAddress(LO, 0), Token.NONE,
                 Duration.ofMillis(1500), 4)) {
            final List<Socket> stray = new ArrayList<>();
            try {
                // a REQ cut off mid-header, then silence: it must not block a real client
                final byte[] req = cm(1, 100, 1, 2, 4096, new byte[0]);
                stray.add(rawCm(listener.localAddress(), java.util.Arrays.copyOf(req, 10)));
                // connections that never send anything, beyond the pending cap
                for (int i = 0; i < 20; i++) {
                    final Socket s = new Socket();
                    s.connect(listener.localAddress(), 5000);
                    stray.add(s);
                }
                awaitTrue(() -> listener.evictedSilent() > 0, "silent connections over the cap closed");
                awaitTrue(() -> listener.lastError().contains("handshake timeout"), "the truncated REQ timed out");
            } finally {
                for (final Socket s : stray) {
                    s.close();
                }
            }
            // the strays cost nothing lasting: once they are gone (closed or timed out) a real client is served;
            // each of the 21 ends refused over the cap or as a handshake error, and until all have, some may still
            // be in the kernel's accept backlog (pending 0 for a moment) and fill the cap again when the client comes
            awaitTrue(() -> listener.refusedOverCap() + listener.evictedSilent() + listener.protocolErrors()
                >= stray.size(),
                "every stray connection accounted for");
            awaitTrue(() -> listener.pendingConnections() == 0, "no connection pending");
            realClientIsServed(f, listener, Token.NONE);
        }
    }

    /**
     * 16 silent connections, each renewed as soon as the listener closes it (at its handshake timeout, or to make
     * room), hold the CM's pending cap full all the time; real clients arriving meanwhile must still be served: at
     * the cap the oldest connection that has sent nothing is closed for the newcomer, so the silent ones churn among
     * themselves. Before, every newcomer over the cap was closed at once and the real clients were locked out for
     * as long as the attack went on.
     */
    @Test
    void cmSilentConnectionsRenewedAtThePendingCapNeverLockOutRealClients() throws Exception {
        final int cap = CmListener.DEFAULT_MAX_PENDING;
        try (Fixture f = new Fixture(new SoftNicContext(), 4096);
             CmListener listener = new CmListener(new InetSocketAddress(LO, 0), Token.NONE,
                 Duration.ofSeconds(3), cap)) {
            final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            final AtomicLong renewed = new AtomicLong();
            final Thread attacker = Thread.ofPlatform().daemon(true).name("silent-renewer").start(() -> {
                final Socket[] silent = new Socket[cap];
                try {
                    while (!stop.get()) {
                        for (int i = 0; i < cap; i++) {
                            if (silent[i] == null || closedByPeer(silent[i])) {
                                if (silent[i] != null) {
                                    silent[i].close();
                                    renewed.incrementAndGet();
                                }
                                silent[i] = new Socket();
                                silent[i].connect(listener.localAddress(), 5000);
                                silent[i].setSoTimeout(1);
                            }
                        }
                        Thread.sleep(200); // a sweep: each closed one renewed (a real client's REQ needs far less)
                    }
                } catch (final IOException | InterruptedException e) {
                    throw new IllegalStateException("the attacker itself failed", e);
                } finally {
                    for (final Socket s : silent) {
                        try {
                            if (s != null) {
                                s.close();
                            }
                        } catch (final IOException ignored) {
                            // closing anyway
                        }
                    }
                }
            });
            try {
                awaitTrue(() -> listener.pendingConnections() >= cap, "the pending cap full of silent connections");
                for (int i = 0; i < 3; i++) {
                    realClientIsServed(f, listener, Token.NONE);
                    assertTrue(attacker.isAlive(), "the attacker still runs");
                }
                assertTrue(listener.evictedSilent() > 0, "silent connections made room");
                assertEquals(0, listener.refusedOverCap(), "no newcomer refused while silent ones were pending");
            } finally {
                stop.set(true);
                attacker.join(20_000);
            }
        }
    }

    /**
     * Out of file descriptors (EMFILE), {@code accept} fails at once while the connection stays in the backlog; the
     * CM's acceptor must neither spin on it nor die: it counts the failure, backs off (the pause doubles), and
     * serves the waiting connection as soon as descriptors are free again.
     */
    @Test
    void cmAcceptOutOfDescriptorsBacksOffAndServesAgain() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(io.gdrkit.core.host.FileDescriptorLimit.unavailable().isEmpty(),
            "no RLIMIT_NOFILE here");
        try (Fixture f = new Fixture(new SoftNicContext(), 4096);
             CmListener listener = new CmListener(new InetSocketAddress(LO, 0), Token.NONE, T, 8)) {
            realClientIsServed(f, listener, Token.NONE); // loads what the listener runs: no class file opens later
            final List<java.nio.channels.SocketChannel> probes = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                probes.add(java.nio.channels.SocketChannel.open()); // their descriptors now, connected later
            }
            java.nio.channels.SocketChannel waiting = null;
            try {
                try (var x = io.gdrkit.core.host.FileDescriptorLimit.exhaust()) {
                    // a descriptor closed late elsewhere in the JVM (a socket's deferred close) may still free up
                    // and take one connection: then take it up and try the next, until accept fails for want of one
                    for (final java.nio.channels.SocketChannel p : probes) {
                        x.refill();
                        final long failures = listener.acceptBackoff().failures();
                        final int pending = listener.pendingConnections();
                        p.connect(listener.localAddress()); // completes into the backlog
                        awaitTrue(() -> listener.acceptBackoff().failures() >= failures + 3
                            || listener.pendingConnections() > pending, "accept failed and retried, or accepted");
                        if (listener.pendingConnections() == pending) {
                            waiting = p;
                            break;
                        }
                    }
                    assertNotNull(waiting, "accept still found a descriptor after 4 refills");
                }
                final var b = listener.acceptBackoff();
                assertTrue(b.lastError().contains("Too many open files"), b::lastError);
                // the listener serves the connection that waited in the backlog: its CHAL comes
                waiting.socket().setSoTimeout(20_000);
                new DataInputStream(waiting.socket().getInputStream()).readFully(new byte[72]);
                assertEquals(0, b.delayNanos(), "the pause ends with the next accept");
            } finally {
                for (final java.nio.channels.SocketChannel p : probes) {
                    p.close();
                }
            }
            try {
                realClientIsServed(f, listener, Token.NONE);
            } catch (final RuntimeException e) {
                throw new AssertionError("a real client after the exhaustion failed; the listener's last error: "
                    + listener.lastError() + ", evicted " + listener.evictedSilent() + ", refused "
                    + listener.refusedOverCap(), e);
            }
        }
    }

    /** True when the far side closed {@code s} (its SO_TIMEOUT is short: a read that times out is still open). */
    private static boolean closedByPeer(final Socket s) {
        try {
            return s.getInputStream().read() < 0;
        } catch (final java.net.SocketTimeoutException e) {
            return false;
        } catch (final IOException e) {
            return true;
        }
    }

    /**
     * Drips {@code bytes} one at a time, {@code gapMs} apart (each well inside any per-read timeout), until the
     * far side closes or {@code stop} is set; returns the thread doing it.
     */
    private static Thread drip(final Socket s, final byte[] bytes, final long gapMs,
                               final java.util.concurrent.atomic.AtomicBoolean stop) {
        return Thread.ofPlatform().daemon(true).name("dripper").start(() -> {
            try {
                for (int i = 0; i < bytes.length - 1 && !stop.get(); i++) {
                    s.getOutputStream().write(bytes[i]);
                    s.getOutputStream().flush();
                    Thread.sleep(gapMs);
                }
            } catch (final IOException | InterruptedException e) {
                // closed by the listener: expected
            }
        });
    }

    @Test
    void cmRequestDrippedByteByByteEndsAtTheHandshakeDeadline() throws Exception {
        final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        try (Fixture f = new Fixture(new SoftNicContext(), 4096);
             CmListener listener = new CmListener(new InetSocketAddress(LO, 0), Token.NONE,
                 Duration.ofMillis(2000), 4);
             Socket s = new Socket()) {
            s.connect(listener.localAddress(), 5000);
            s.setSoTimeout(30_000);
            new DataInputStream(s.getInputStream()).readFully(new byte[72]); // CHAL
            // a REQ of 56 + 256 bytes at 500 ms a byte: 2.5 minutes, each byte within the 2 s of a per-read timeout
            final Thread t = drip(s, cm(1, 100, 1, 2, 4096, new byte[256]), 500, stop);
            try {
                awaitTrue(() -> listener.lastError().contains("no complete REQ within the handshake timeout (2000 "
                    + "ms from accept"), "the dripping REQ ended at the deadline");
                assertEquals(0, listener.pendingConnections(), "its slot is free again");
                realClientIsServed(f, listener, Token.NONE);
            } finally {
                stop.set(true);
                t.join(10_000);
            }
        }
    }

    @Test
    void cmTokenIsCheckedAndNeverSent() throws Exception {
        final Token token = Token.of("correct horse battery staple");
        try (Fixture f = new Fixture(new SoftNicContext(), 4096);
             CmListener listener = new CmListener(new InetSocketAddress(LO, 0), token, Duration.ofSeconds(5), 16)) {
            final QueuePair q = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final CmException none = assertThrows(CmException.class, () -> ConnectionManager.connect(
                listener.localAddress(), q, f.a.dev.lid(), QpBringUp.rcDefaults(), new byte[0], T, Token.NONE));
            assertEquals(CmException.Reason.REJECTED, none.reason());
            assertTrue(none.getMessage().contains("authentication failed"), none::getMessage);
            final CmException wrong = assertThrows(CmException.class, () -> ConnectionManager.connect(
                listener.localAddress(), q, f.a.dev.lid(), QpBringUp.rcDefaults(), new byte[0], T,
                Token.of("a wrong token")));
            assertEquals(CmException.Reason.REJECTED, wrong.reason());
            // INFO needs the token too
            assertThrows(CmException.class, () -> ConnectionManager.query(listener.localAddress(), T, Token.NONE));
            listener.info("hello".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            assertEquals("hello", new String(ConnectionManager.query(listener.localAddress(), T, token),
                java.nio.charset.StandardCharsets.US_ASCII));
            realClientIsServed(f, listener, token);
        }
    }

    // ------------------------------------------------------------------ TCP fabric

    /** Reads the fabric's challenge, sends a forged hello (+ zero MAC), returns the verdict's reason or null. */
    private static String rawHello(final InetSocketAddress at, final int lid, final int session, final int index,
                                   final int count, final int capacity, final boolean crc) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(at, 5000);
            s.setSoTimeout(10_000);
            final DataInputStream in = new DataInputStream(s.getInputStream());
            in.readFully(new byte[24]);
            final ByteBuffer h = ByteBuffer.allocate(24 + 32).order(ByteOrder.LITTLE_ENDIAN);
            h.putInt('G' | 'D' << 8 | 'R' << 16 | 'T' << 24).putShort((short) 2).putShort((short) (crc ? 1 : 0))
                .putInt(lid).putInt(session).putShort((short) index).putShort((short) count).putInt(capacity);
            s.getOutputStream().write(h.array());
            final byte[] v = new byte[128];
            in.readFully(v);
            final ByteBuffer vb = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN);
            vb.getInt();
            final int n = vb.getInt();
            return n == 0 ? null : new String(v, 8, n, java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    @Test
    void tcpFabricRefusesForgedHellosByName() throws Exception {
        final int cap = 1 << 16;
        try (TcpFabric f = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, Token.NONE)) {
            f.attach(1);
            final InetSocketAddress at = f.localAddress();
            assertTrue(rawHello(at, 0x7FFFFFFF, 1, 0, 1, cap, false).contains("LID 2147483647 outside"));
            assertTrue(rawHello(at, 1 << 28, 1, 0, 1, cap, false).contains("outside"));
            assertTrue(rawHello(at, 0, 1, 0, 1, cap, false).contains("LID 0 outside"));
            assertTrue(rawHello(at, 1, 1, 0, 1, cap, false).contains("this fabric's own"));
            assertTrue(rawHello(at, 5, 1, 3, 2, cap, false).contains("connection 3 of 2"));
            assertTrue(rawHello(at, 5, 1, 0, 0, cap, false).contains("connection 0 of 0"));
            assertTrue(rawHello(at, 5, 1, 0, 1, cap * 2, false).contains("link capacity mismatch"));
            assertTrue(rawHello(at, 5, 1, 0, 1, cap, true).contains("link CRC mismatch: the peer has it on"));
            assertTrue(f.rejectedConnections() >= 8);
            assertFalse(f.lidInUse(5), "no refused hello holds a LID");
        }
    }

    @Test
    void tcpFabricNamesCrcCapacityAndTokenMismatchesToTheConnectingSide() {
        try (TcpFabric server = new TcpFabric(new InetSocketAddress(LO, 0), 1 << 16, null, true, 1,
                 Token.of("the server's token"));
             TcpFabric crcOff = new TcpFabric(new InetSocketAddress(LO, 0), 1 << 16, null, false, 1,
                 Token.of("the server's token"));
             TcpFabric bigger = new TcpFabric(new InetSocketAddress(LO, 0), 1 << 17, null, true, 1,
                 Token.of("the server's token"));
             TcpFabric noToken = new TcpFabric(new InetSocketAddress(LO, 0), 1 << 16, null, true, 1, Token.NONE)) {
            server.attach(1);
            crcOff.attach(2);
            bigger.attach(3);
            noToken.attach(4);
            final UncheckedIOException crc = assertThrows(UncheckedIOException.class,
                () -> crcOff.connect(1, server.localAddress()));
            assertTrue(crc.getMessage().contains("link CRC mismatch"), crc::getMessage);
            final UncheckedIOException size = assertThrows(UncheckedIOException.class,
                () -> bigger.connect(1, server.localAddress()));
            assertTrue(size.getMessage().contains("link capacity mismatch"), size::getMessage);
            final UncheckedIOException auth = assertThrows(UncheckedIOException.class,
                () -> noToken.connect(1, server.localAddress()));
            assertTrue(auth.getMessage().contains("authentication failed"), auth::getMessage);
        }
    }

    @Test
    void tcpFabricLidsCannotBeHijackedNorSpoofed() throws Exception {
        final int cap = 1 << 16;
        final Token none = Token.NONE;
        try (TcpFabric server = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, none);
             TcpFabric victim = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, none);
             SoftNicDriver sd = SoftNicDriver.launch(new SoftNicContext(), server);
             SoftNicDriver vd = SoftNicDriver.launch(new SoftNicContext(), victim)) {
            final SoftDevice s = sd.addDevice("server", 1);
            vd.addDevice("victim", 2);
            victim.connect(1, server.localAddress());
            for (int i = 0; i < 1000 && !server.lidInUse(2); i++) {
                s.doWork();
                Thread.sleep(1);
            }
            assertTrue(server.lidInUse(2), "the victim's hello was accepted");
            // another session claiming the victim's LID is refused by name
            assertTrue(rawHello(server.localAddress(), 2, 12345, 0, 1, cap, false).contains("held by a live"));
            // with admission, an unassigned LID cannot join at all
            server.requireAdmission();
            assertTrue(rawHello(server.localAddress(), 9, 1, 0, 1, cap, false).contains("not assigned"));
            server.admit(9);
            // LID 9 is admitted: its hello is accepted, and then it sends a packet claiming SLID 2 (the victim)
            try (Socket spoof = new Socket()) {
                spoof.connect(server.localAddress(), 5000);
                spoof.setSoTimeout(10_000);
                final DataInputStream in = new DataInputStream(spoof.getInputStream());
                in.readFully(new byte[24]);
                final ByteBuffer h = ByteBuffer.allocate(56).order(ByteOrder.LITTLE_ENDIAN);
                h.putInt('G' | 'D' << 8 | 'R' << 16 | 'T' << 24).putShort((short) 2).putShort((short) 0).putInt(9)
                    .putInt(77).putShort((short) 0).putShort((short) 1).putInt(cap);
                final OutputStream out = spoof.getOutputStream();
                out.write(h.array());
                final byte[] v = new byte[128];
                in.readFully(v);
                assertEquals(0, ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN).getInt(4), "LID 9 admitted");
                final ByteBuffer frame = ByteBuffer.allocate(8 + 24).order(ByteOrder.LITTLE_ENDIAN);
                frame.putInt(24).putInt(0);
                frame.order(ByteOrder.BIG_ENDIAN).putShort((short) 1).putShort((short) 2).putInt(24);
                out.write(frame.array());
                out.flush();
                final long before = server.spoofedPackets();
                for (int i = 0; i < 2000 && server.spoofedPackets() == before; i++) {
                    s.doWork();
                    Thread.sleep(1);
                }
                assertEquals(before + 1, server.spoofedPackets());
                assertTrue(server.lastError().contains("claims DLID 1 SLID 2"), server::lastError);
                assertEquals(-1, in.read(), "the spoofing connection is closed");
            }
            assertTrue(server.lidInUse(2), "the victim's connection is untouched");
        }
    }

    @Test
    void tcpFabricLidReachedByConnectCannotBeTakenOverByAnIncomingHello() throws Exception {
        final int cap = 1 << 16;
        try (TcpFabric a = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, Token.NONE);
             TcpFabric b = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, Token.NONE);
             SoftNicDriver ad = SoftNicDriver.launch(new SoftNicContext(), a);
             SoftNicDriver bd = SoftNicDriver.launch(new SoftNicContext(), b)) {
            ad.addDevice("a", 1);
            final SoftDevice bdev = bd.addDevice("b", 2);
            a.connect(2, b.localAddress()); // A reaches LID 2 through its own outgoing session
            awaitTrue(() -> {
                bdev.doWork();
                return b.lidInUse(1);
            }, "B took A's hello");
            // no token: a stranger's hello claiming LID 2 at A would have replaced A's session to B
            final String why = rawHello(a.localAddress(), 2, 4242, 0, 1, cap, false);
            assertNotNull(why, "a hello claiming a LID A connected to must be refused");
            assertTrue(why.contains("LID 2 is held by a live connection"), why);
            assertTrue(a.lastError().contains("held by a live connection"), a::lastError);
            assertTrue(a.lidInUse(2), "connect holds the LID it reaches");
            // a second connect to a live LID is refused by name, never a silent replacement
            final IllegalStateException again = assertThrows(IllegalStateException.class,
                () -> a.connect(2, b.localAddress()));
            assertTrue(again.getMessage().contains("LID 2 is held by a live connection"), again::getMessage);
            assertTrue(a.lidInUse(2), "A's session to B is untouched");
            assertTrue(b.lidInUse(1), "B still has A");
        }
    }

    @Test
    void tcpFabricConnectThatFailsReleasesTheLid() throws Exception {
        try (TcpFabric a = new TcpFabric(new InetSocketAddress(LO, 0), 1 << 16, null, false, 1, Token.NONE)) {
            a.attach(1);
            final InetSocketAddress nobody;
            try (java.net.ServerSocket ss = new java.net.ServerSocket(0, 1, LO)) {
                nobody = new InetSocketAddress(LO, ss.getLocalPort());
            }
            assertThrows(UncheckedIOException.class, () -> a.connect(3, nobody));
            assertFalse(a.lidInUse(3), "a failed connect holds no LID");
        }
    }

    @Test
    void tcpFabricHelloDrippedByteByByteEndsAtTheHelloDeadline() throws Exception {
        final int cap = 1 << 16;
        final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        try (TcpFabric server = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, Token.NONE);
             TcpFabric good = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, Token.NONE);
             Socket s = new Socket()) {
            server.attach(1);
            good.attach(2);
            s.connect(server.localAddress(), 5000);
            s.setSoTimeout(30_000);
            new DataInputStream(s.getInputStream()).readFully(new byte[24]); // the challenge
            final ByteBuffer h = ByteBuffer.allocate(56).order(ByteOrder.LITTLE_ENDIAN);
            h.putInt('G' | 'D' << 8 | 'R' << 16 | 'T' << 24).putShort((short) 2).putShort((short) 0).putInt(7)
                .putInt(1).putShort((short) 0).putShort((short) 1).putInt(cap);
            // 56 bytes at 1 s a byte, each inside the 5 s a per-read timeout would allow
            final Thread t = drip(s, h.array(), 1000, stop);
            try {
                awaitTrue(() -> server.lastError().contains("no hello within " + TcpFabric.HELLO_TIMEOUT_MS
                    + " ms of accept"), "the dripping hello ended at the deadline");
                good.connect(1, server.localAddress());
                assertTrue(good.lidInUse(1), "a real peer still joins");
            } finally {
                stop.set(true);
                t.join(10_000);
            }
            assertFalse(server.lidInUse(7), "the dripper never joined");
        }
    }

    @Test
    void tcpFabricHelloTimeoutAndPendingCapKeepItServing() throws Exception {
        final int cap = 1 << 16;
        try (TcpFabric server = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, Token.NONE);
             TcpFabric good = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, Token.NONE)) {
            server.attach(1);
            good.attach(2);
            final List<Socket> silent = new ArrayList<>();
            try {
                for (int i = 0; i < TcpFabric.MAX_PENDING + 40; i++) {
                    final Socket s = new Socket();
                    s.connect(server.localAddress(), 5000);
                    silent.add(s);
                }
                awaitTrue(() -> server.evictedSilent() >= 40, "silent connections over the cap made room");
                // the silent ones time out; then a real peer gets in
                awaitTrue(() -> server.lastError().contains("no hello within"), "hello timeout");
                good.connect(1, server.localAddress());
                awaitTrue(() -> server.lidInUse(2), "the real peer joined");
            } finally {
                for (final Socket s : silent) {
                    s.close();
                }
            }
        }
    }

    /**
     * {@link TcpFabric#MAX_PENDING} silent connections, each renewed as soon as the fabric closes it, hold its
     * hello cap full; a real peer arriving meanwhile still joins: at the cap the oldest connection that has sent
     * nothing is closed for the newcomer. Before, the newcomer was closed at once for as long as the attack went on.
     */
    @Test
    void tcpFabricSilentConnectionsRenewedAtThePendingCapNeverLockOutAPeer() throws Exception {
        final int cap = TcpFabric.MAX_PENDING;
        try (TcpFabric server = new TcpFabric(new InetSocketAddress(LO, 0), 1 << 16, null, false, 1, Token.NONE);
             TcpFabric good = new TcpFabric(new InetSocketAddress(LO, 0), 1 << 16, null, false, 1, Token.NONE)) {
            server.attach(1);
            good.attach(2);
            final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            final Thread attacker = Thread.ofPlatform().daemon(true).name("silent-renewer").start(() -> {
                final Socket[] silent = new Socket[cap];
                try {
                    while (!stop.get()) {
                        for (int i = 0; i < cap; i++) {
                            if (silent[i] == null || closedByPeer(silent[i])) {
                                if (silent[i] != null) {
                                    silent[i].close();
                                }
                                silent[i] = new Socket();
                                silent[i].connect(server.localAddress(), 5000);
                                silent[i].setSoTimeout(1);
                            }
                        }
                        Thread.sleep(200); // a sweep: each closed one renewed (a real client's REQ needs far less)
                    }
                } catch (final IOException | InterruptedException e) {
                    throw new IllegalStateException("the attacker itself failed", e);
                } finally {
                    for (final Socket s : silent) {
                        try {
                            if (s != null) {
                                s.close();
                            }
                        } catch (final IOException ignored) {
                            // closing anyway
                        }
                    }
                }
            });
            try {
                awaitTrue(() -> server.pendingConnections() >= cap, "the hello cap full of silent connections");
                good.connect(1, server.localAddress());
                awaitTrue(() -> server.lidInUse(2), "the real peer joined");
                assertTrue(attacker.isAlive(), "the attacker still runs");
                assertTrue(server.evictedSilent() > 0, "silent connections made room");
            } finally {
                stop.set(true);
                attacker.join(20_000);
            }
        }
    }

    /**
     * Out of file descriptors, the fabric's blocking accept fails with EMFILE at once, over and over (Linux takes the
     * descriptor before it looks at the backlog): the acceptor backs off instead of spinning or ending, and a real
     * peer joins once descriptors are free.
     */
    @Test
    void tcpFabricAcceptOutOfDescriptorsBacksOffAndAPeerJoinsAfter() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(io.gdrkit.core.host.FileDescriptorLimit.unavailable().isEmpty(),
            "no RLIMIT_NOFILE here");
        final int cap = 1 << 16;
        try (TcpFabric server = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, Token.NONE);
             TcpFabric good = new TcpFabric(new InetSocketAddress(LO, 0), cap, null, false, 1, Token.NONE)) {
            server.attach(1);
            good.attach(2);
            final var b = server.acceptBackoff();
            final List<java.nio.channels.SocketChannel> probes = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    probes.add(java.nio.channels.SocketChannel.open()); // their descriptors now, connected later
                }
                try (var x = io.gdrkit.core.host.FileDescriptorLimit.exhaust()) {
                    // a connection waits in the backlog while accept has no descriptor for it; one closed late
                    // elsewhere in the JVM may still take a probe: then the next one
                    for (int i = 0; i < probes.size() && b.failures() < 3; i++) {
                        x.refill();
                        probes.get(i).connect(server.localAddress());
                        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                        while (b.failures() < 3 && System.nanoTime() < deadline) {
                            Thread.sleep(1);
                        }
                    }
                }
            } finally {
                for (final java.nio.channels.SocketChannel p : probes) {
                    p.close();
                }
            }
            assertTrue(b.failures() >= 3, "accept failed and was retried: " + b.failures());
            assertTrue(b.lastError().contains("Too many open files"), b::lastError);
            good.connect(1, server.localAddress());
            awaitTrue(() -> server.lidInUse(2), "the real peer joined");
            assertEquals(0, b.delayNanos(), "the pause ended with the next accept");
        }
    }

    // ------------------------------------------------------------------ API misuse

    @Test
    void concurrentPostSendFailsLoudlyAndLosesNothing() throws Exception {
        final QpInitAttr init = new QpInitAttr();
        init.cap.maxSendWr(1024);
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DEDICATED),
            1 << 16, init, QpBringUp.rcDefaults())) {
            final int threads = 4;
            final int each = 2000;
            final AtomicLong posted = new AtomicLong();
            final AtomicLong busy = new AtomicLong();
            final CountDownLatch start = new CountDownLatch(1);
            final List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                ts.add(Thread.ofPlatform().start(() -> {
                    final SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE)
                        .flags(SendFlags.SIGNALED).sge(f.a.mr, 0, 64).remote(f.b.mr.address(), f.b.mr.rkey());
                    try {
                        start.await();
                    } catch (final InterruptedException e) {
                        return;
                    }
                    for (int i = 0; i < each; i++) {
                        try {
                            f.a.qp.postSend(wr);
                            posted.incrementAndGet();
                        } catch (final PostException e) {
                            if (e.errno() == Errno.EBUSY) {
                                busy.incrementAndGet();
                            } else if (e.errno() != Errno.ENOMEM) {
                                throw e; // ENOMEM: the send queue is full for now
                            }
                        }
                    }
                }));
            }
            start.countDown();
            long completed = 0;
            final WorkCompletion[] wcs = new WorkCompletion[64];
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new WorkCompletion();
            }
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (ts.stream().anyMatch(Thread::isAlive) || completed < posted.get()) {
                assertTrue(System.nanoTime() < deadline, "completions for every accepted post");
                final int n = f.a.scq.poll(wcs);
                for (int i = 0; i < n; i++) {
                    assertEquals(WcStatus.SUCCESS, wcs[i].status, wcs[i]::toString);
                }
                completed += n;
            }
            // every post that returned normally completed exactly once; the others were refused by name (EBUSY
            // when they overlapped, ENOMEM when the queue was full): nothing vanished
            assertEquals(posted.get(), completed);
            assertTrue(posted.get() > 0);
        }
    }

    @Test
    void concurrentPollIsRefusedWithEbusy() throws Exception {
        // The overlap is forced, not hoped for: in INVOKER mode a poll that finds the CQ empty moves the NICs on the
        // polling thread, and a link hook holds that thread inside its poll (on the WRITE's first packet) until the
        // second poll has been tried. Without the one-poller guard the second poll returns 0 and this test fails.
        final CountDownLatch inside = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final Thread[] holder = new Thread[1];
        final LinkHook hold = (src, dst, buf, off, len) -> {
            if (Thread.currentThread() == holder[0] && inside.getCount() > 0) {
                inside.countDown();
                try {
                    if (!release.await(20, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("timed out waiting for the second poll to be tried");
                    }
                } catch (final InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return LinkHook.DELIVER;
        };
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER)
            .linkHook(hold), 1 << 16)) {
            Fixture.fill(f.a.buf.asSlice(0, 256), 77);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(5)
                .sge(f.a.mr, 0, 256).remote(f.b.mr.address() + 1024, f.b.mr.rkey()));
            final int[] firstPolled = {-1};
            final Throwable[] firstFailed = {null};
            final WorkCompletion[] firstWc = WorkCompletion.array(4);
            final Thread first = Thread.ofPlatform().unstarted(() -> {
                try {
                    firstPolled[0] = f.a.scq.poll(firstWc);
                } catch (final Throwable t) {
                    firstFailed[0] = t;
                }
            });
            holder[0] = first;
            first.start();
            assertTrue(inside.await(20, TimeUnit.SECONDS), "the first poll never reached the link");
            final VerbsException e;
            try {
                e = assertThrows(VerbsException.class, () -> f.a.scq.poll(WorkCompletion.array(4)),
                    "a second poll while the first is inside poll()");
            } finally {
                release.countDown();
                first.join(20_000);
            }
            assertEquals(Errno.EBUSY, e.errno(), e::getMessage);
            assertTrue(e.getMessage().contains("nothing was consumed"), e.getMessage());
            assertFalse(first.isAlive(), "the first poll returned");
            assertEquals(null, firstFailed[0], "the first poll itself succeeds");
            // the refused poll consumed nothing: the WRITE completes exactly once, to whoever polls next
            final WorkCompletion wc = firstPolled[0] == 1 ? firstWc[0] : f.awaitSuccess(f.a.scq, "the WRITE");
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            assertEquals(5, wc.wrId);
            f.assertNoCompletion(f.a.scq, "a second completion of one WRITE");
            Fixture.assertBytes(f.a.buf.asSlice(0, 256), f.b.buf.asSlice(1024, 256), "WRITE data");
        }
    }

    @Test
    void nicEngineThatThrowsIsDeviceFatalWithFlushes() throws Exception {
        final boolean[] armed = {false};
        final LinkHook bomb = (src, dst, buf, off, len) -> {
            if (armed[0]) {
                throw new IllegalStateException("injected engine failure");
            }
            return LinkHook.DELIVER;
        };
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DEDICATED)
            .linkHook(bomb), 1 << 16)) {
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, 64).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "a WRITE before the failure");
            armed[0] = true;
            for (int i = 0; i < 4; i++) {
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .wrId(10 + i).sge(f.a.mr, 0, 64).remote(f.b.mr.address(), f.b.mr.rkey()));
            }
            final AsyncEvent e = awaitEvent(f, AsyncEventType.DEVICE_FATAL);
            assertTrue(e.toString().contains("injected engine failure"), e::toString);
            final WorkCompletion[] wc = {new WorkCompletion()};
            int flushed = 0;
            VerbsException reported = null;
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (reported == null && System.nanoTime() < deadline) {
                try {
                    if (f.a.scq.poll(wc) == 1) {
                        assertEquals(WcStatus.WR_FLUSH_ERR, wc[0].status, wc[0]::toString);
                        flushed++;
                    }
                } catch (final VerbsException v) {
                    reported = v;
                }
            }
            assertEquals(4, flushed, "every posted WR flushed");
            assertNotNull(reported, "poll reports the failure once the flushes are read");
            assertEquals(Errno.EIO, reported.errno());
            assertTrue(reported.getMessage().contains("DEVICE_FATAL"), reported::getMessage);
        }
    }

    /**
     * A WR posted after the failed device's last flush cycle (the race a dedicated NIC thread loses now and then)
     * is still flushed: the poll that finds the CQ empty flushes what is queued before it reports DEVICE_FATAL.
     * Deterministic: nobody steps the NICs after the late posts, so only the poll can flush them.
     */
    @Test
    void wrPostedAfterTheLastFlushCycleIsFlushedBeforeThePollReportsTheFailure() {
        final boolean[] armed = {false};
        final LinkHook bomb = (src, dst, buf, off, len) -> {
            if (armed[0]) {
                throw new IllegalStateException("injected engine failure");
            }
            return LinkHook.DELIVER;
        };
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DETERMINISTIC)
            .linkHook(bomb), 1 << 16)) {
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, 64).remote(f.b.mr.address(), f.b.mr.rkey()));
            assertEquals(WcStatus.SUCCESS, f.awaitOne(f.a.scq, "a WRITE before the failure").status);
            armed[0] = true;
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(10)
                .sge(f.a.mr, 0, 64).remote(f.b.mr.address(), f.b.mr.rkey()));
            AsyncEvent e = null;
            for (int i = 0; i < 100 && e == null; i++) {
                f.driver.progress();
                final AsyncEvent any = f.a.ctx.pollAsyncEvent();
                e = any != null && any.type() == AsyncEventType.DEVICE_FATAL ? any : null;
            }
            assertNotNull(e, "DEVICE_FATAL after the engine threw");
            for (int i = 0; i < 4; i++) {
                f.driver.progress(); // the flush cycles that run before the late posts
            }
            for (int i = 1; i <= 3; i++) {
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .wrId(10 + i).sge(f.a.mr, 0, 64).remote(f.b.mr.address(), f.b.mr.rkey()));
            }
            final WorkCompletion[] wc = {new WorkCompletion()};
            final List<Long> flushed = new ArrayList<>();
            VerbsException reported = null;
            for (int i = 0; i < 100 && reported == null; i++) {
                try {
                    if (f.a.scq.poll(wc) == 1) {
                        assertEquals(WcStatus.WR_FLUSH_ERR, wc[0].status, wc[0]::toString);
                        flushed.add(wc[0].wrId);
                    }
                } catch (final VerbsException v) {
                    reported = v;
                }
            }
            assertEquals(List.of(10L, 11L, 12L, 13L), flushed, "every posted WR flushed, in order");
            assertNotNull(reported, "poll reports the failure once the flushes are read");
            assertEquals(Errno.EIO, reported.errno());
        }
    }

    private static AsyncEvent awaitEvent(final Fixture f, final int type) {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            final AsyncEvent e = f.a.ctx.pollAsyncEvent();
            if (e != null && e.type() == type) {
                return e;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("no " + AsyncEventType.name(type) + " event within 20 s");
    }

    @Test
    void closedArenaUnderAnMrGivesLocalAndRemoteProtectionErrors() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 16)) {
            final Arena local = Arena.ofShared();
            final MemoryRegion lmr = f.a.pd.registerMr(local.allocate(4096, 4096), AccessFlags.LOCAL_WRITE);
            local.close();
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(lmr, 0, 64).remote(f.b.mr.address(), f.b.mr.rkey()));
            assertEquals(WcStatus.LOC_PROT_ERR, f.awaitOne(f.a.scq, "WRITE from closed memory").status);
        }
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 16)) {
            final Arena remote = Arena.ofShared();
            final MemoryRegion rmr = f.b.pd.registerMr(remote.allocate(4096, 4096),
                AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            remote.close();
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(2)
                .sge(f.a.mr, 0, 64).remote(rmr.address(), rmr.rkey()));
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "WRITE into closed memory").status);
        }
    }

    @Test
    void confinedMemoryIsRefusedForDedicatedNicThreads() {
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DEDICATED),
            1 << 16); Arena confined = Arena.ofConfined()) {
            final VerbsException e = assertThrows(VerbsException.class,
                () -> f.a.pd.registerMr(confined.allocate(4096), AccessFlags.LOCAL_WRITE));
            assertTrue(e.getMessage().contains("confined arena"), e::getMessage);
        }
    }

    @Test
    void driverCloseDuringTransfersFlushes() {
        final QpInitAttr init = new QpInitAttr();
        init.cap.maxSendWr(512);
        final Fixture f = new Fixture(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DEDICATED),
            1 << 20, init, QpBringUp.rcDefaults());
        try {
            for (int i = 0; i < 256; i++) {
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(i)
                    .sge(f.a.mr, 0, 1 << 20).remote(f.b.mr.address(), f.b.mr.rkey()));
            }
            f.driver.close();
            final WorkCompletion[] wc = new WorkCompletion[64];
            for (int i = 0; i < wc.length; i++) {
                wc[i] = new WorkCompletion();
            }
            int done = 0;
            int flushed = 0;
            for (int rounds = 0; rounds < 1000 && done < 256; rounds++) {
                final int n = f.a.scq.poll(wc);
                for (int i = 0; i < n; i++) {
                    assertTrue(wc[i].status == WcStatus.SUCCESS || wc[i].status == WcStatus.WR_FLUSH_ERR,
                        wc[i]::toString);
                    flushed += wc[i].status == WcStatus.WR_FLUSH_ERR ? 1 : 0;
                }
                done += n;
            }
            assertEquals(256, done, "every WR completes: success before the close, WR_FLUSH_ERR after");
            assertTrue(flushed > 0, "some WRs were still in flight at close");
        } finally {
            f.arena.close();
        }
    }

    private static void awaitTrue(final java.util.function.BooleanSupplier c, final String what)
        throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!c.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            Thread.sleep(5);
        }
    }
}
