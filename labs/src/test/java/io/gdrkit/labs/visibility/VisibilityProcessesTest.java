/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.labs.visibility.VisConfig.Consumer;
import io.gdrkit.labs.visibility.VisConfig.Flag;
import io.gdrkit.labs.visibility.VisConfig.Injection;
import io.gdrkit.labs.visibility.VisConfig.Poll;
import io.gdrkit.labs.visibility.VisConfig.Readback;
import io.gdrkit.labs.visibility.VisConfig.Source;
import org.junit.jupiter.api.Test;

/** Sender processes started by the receiver, over the shared-memory and the TCP fabric. */
class VisibilityProcessesTest {
    private static VisConfig cfg(final Flag flag, final Readback rb) {
        return new VisConfig().flag(flag).readback(rb).wrSplit(16).size(16384).rounds(5).senders(4).seed(7)
            .conclude();
    }

    @Test
    void separateSenderProcessesOverSharedMemory() {
        try (VisibilityLab lab = VisibilityLab.start(VisibilityLab.Transport.SHM, 2, 0, false)) {
            assertTrue(lab.processes().contains("2 sender process(es), shm fabric"), lab.processes());
            final VisResult off = lab.run(cfg(Flag.RECEIVER, Readback.OFF), null);
            assertTrue(off.failures() > 0, off.toString());
            final VisResult on = lab.run(cfg(Flag.RECEIVER, Readback.ON), null);
            assertTrue(on.passed(), on.toString());
            assertEquals(20, on.checks());
            final VisResult skip = lab.run(new VisConfig().gpu("sim:h200").consumer(Consumer.LAUNCH).size(4096)
                .rounds(3).seed(7).inject(Injection.parse("skip-write@2")).conclude(), null);
            assertEquals(2, skip.firstFailingRound(), skip.toString());
            assertEquals(1, skip.failuresToldSenders(), "reported back to the sender process");
        }
    }

    @Test
    void separateSenderProcessesOverTcp() {
        try (VisibilityLab lab = VisibilityLab.start(VisibilityLab.Transport.TCP, 1, 0, false)) {
            final VisResult r = lab.run(cfg(Flag.SENDER_OTHER_QP, Readback.ON), null);
            assertTrue(r.passed(), r.toString());
        }
    }

    @Test
    void aReceiverListeningForSendersStartedElsewhere() throws Exception {
        final int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        // the sender is started "by hand" (here: a thread doing what `gdrkit visibility-sender --connect` does)
        final Thread sender = Thread.ofPlatform().daemon(true).start(() -> {
            for (int attempt = 0; attempt < 100; attempt++) {
                try {
                    SenderHost.serve(new java.net.InetSocketAddress("127.0.0.1", port), VisibilityLab::openFabric);
                    return;
                } catch (final IllegalStateException e) {
                    if (!e.getMessage().contains("cannot reach")) {
                        throw e;
                    }
                    java.util.concurrent.locks.LockSupport.parkNanos(100_000_000L);
                }
            }
        });
        try (VisibilityLab lab = VisibilityLab.start(VisibilityLab.Transport.TCP, 1, port, true)) {
            assertTrue(lab.processes().contains("tcp fabric (remote)"), lab.processes());
            final VisResult r = lab.run(cfg(Flag.IMM, Readback.ON), null);
            assertTrue(r.passed(), r.toString());
        }
        sender.join(10_000);
        assertTrue(!sender.isAlive(), "the sender ends on BYE");
    }

    /** A sender host that says HELLO with {@code version}, reads ASSIGN and then vanishes. */
    private static Thread vanishingSender(final int port, final int version) {
        return vanishingSender(port, version, io.gdrkit.core.auth.Token.NONE, null);
    }

    /**
     * A sender that says HELLO (proving {@code token}), reads the answer into {@code answer} (ASSIGN's LID and
     * fabric, or REFUSED's reason) and vanishes.
     */
    private static Thread vanishingSender(final int port, final int version, final io.gdrkit.core.auth.Token token,
                                          final java.util.concurrent.atomic.AtomicReference<String> answer) {
        return Thread.ofPlatform().daemon(true).start(() -> {
            for (int attempt = 0; attempt < 100; attempt++) {
                try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
                    final java.io.DataInputStream in = new java.io.DataInputStream(s.getInputStream());
                    final java.io.DataOutputStream out = new java.io.DataOutputStream(s.getOutputStream());
                    assertEquals(Control.CHAL, in.readByte());
                    final byte[] nonce = in.readNBytes(io.gdrkit.core.auth.Token.NONCE_LENGTH);
                    out.writeByte(Control.HELLO);
                    out.writeInt(version);
                    out.writeInt(128);
                    out.write(token.answer(nonce, Control.HELLO_PROOF));
                    out.flush();
                    final byte type = in.readByte();
                    final String got = type == Control.REFUSED ? "REFUSED " + in.readUTF()
                        : "ASSIGN lid " + in.readInt() + " " + in.readUTF();
                    if (answer != null) {
                        answer.set(got);
                    }
                    return;
                } catch (final java.io.IOException e) {
                    java.util.concurrent.locks.LockSupport.parkNanos(100_000_000L);
                }
            }
        });
    }

    private static int freePort() throws java.io.IOException {
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            return probe.getLocalPort();
        }
    }

    @Test
    void aSenderThatVanishesIsNamedNotWaitedForForever() throws Exception {
        final int port = freePort();
        final Thread t = vanishingSender(port, Control.VERSION);
        try (VisibilityLab lab = VisibilityLab.start(VisibilityLab.Transport.TCP, 1, port, true)) {
            t.join(10_000);
            final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> lab.run(cfg(Flag.RECEIVER, Readback.OFF), null));
            assertTrue(e.getMessage().contains("closed the control channel while waiting for READY"), e.getMessage());
        }
    }

    /** A stranger's fabric hello (no token set here): 24 bytes and a zero authenticator; returns the refusal. */
    private static String strangerHello(final java.net.InetSocketAddress at, final int lid) throws Exception {
        try (java.net.Socket s = new java.net.Socket()) {
            s.connect(at, 5000);
            s.setSoTimeout(20_000);
            final java.io.DataInputStream in = new java.io.DataInputStream(s.getInputStream());
            in.readFully(new byte[24]);
            final java.nio.ByteBuffer h = java.nio.ByteBuffer.allocate(56).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            h.putInt('G' | 'D' << 8 | 'R' << 16 | 'T' << 24).putShort((short) 2).putShort((short) 0).putInt(lid)
                .putInt(4242).putShort((short) 0).putShort((short) 1).putInt(1 << 22);
            s.getOutputStream().write(h.array());
            final byte[] v = new byte[128];
            in.readFully(v);
            final int n = java.nio.ByteBuffer.wrap(v).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt(4);
            return n == 0 ? null : new String(v, 8, n, java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    /** The receiver assigns each sender its LID in ASSIGN; a LID it did not assign cannot join its TCP fabric. */
    @Test
    void aStrangerCannotClaimALidOnTheReceiversTcpFabric() throws Exception {
        final int port = freePort();
        final Thread t = vanishingSender(port, Control.VERSION);
        try (VisibilityLab lab = VisibilityLab.start(VisibilityLab.Transport.TCP, 1, port, true)) {
            t.join(10_000);
            final java.net.InetSocketAddress at = new java.net.InetSocketAddress("127.0.0.1",
                lab.tcpFabric().localAddress().getPort());
            final String why = strangerHello(at, 3);
            assertTrue(why != null && why.contains("LID 3 was not assigned by this listener"), String.valueOf(why));
            assertTrue(lab.tcpFabric().lastError().contains("not assigned"), lab.tcpFabric().lastError());
        }
    }

    @Test
    void withATokenOnlyASenderThatProvesItIsServedAndAStrangerIsToldWhy() throws Exception {
        final int port = freePort();
        final io.gdrkit.core.auth.Token token = io.gdrkit.core.auth.Token.of("vis-t0ken");
        final java.util.concurrent.atomic.AtomicReference<String> stranger = new java.util.concurrent.atomic
            .AtomicReference<>();
        final java.util.concurrent.atomic.AtomicReference<String> wrong = new java.util.concurrent.atomic
            .AtomicReference<>();
        final java.util.concurrent.atomic.AtomicReference<String> member = new java.util.concurrent.atomic
            .AtomicReference<>();
        final Thread a = vanishingSender(port, Control.VERSION, io.gdrkit.core.auth.Token.NONE, stranger);
        final Thread b = vanishingSender(port, Control.VERSION, io.gdrkit.core.auth.Token.of("other-t0ken"), wrong);
        // the member starts once both strangers were answered, so that it is the one counted
        final Thread c = Thread.ofPlatform().daemon(true).start(() -> {
            try {
                a.join(30_000);
                b.join(30_000);
                vanishingSender(port, Control.VERSION, token, member).join(30_000);
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try (VisibilityLab lab = VisibilityLab.start(VisibilityLab.Transport.TCP, 1, port, true, token)) {
            c.join(30_000);
            final String refusal = "REFUSED its HELLO does not prove the receiver's token (set GDRKIT_TOKEN as on "
                + "the receiver)";
            assertEquals(refusal, stranger.get());
            assertEquals(refusal, wrong.get());
            assertTrue(member.get() != null && member.get().startsWith("ASSIGN lid 2 tcp:"), member.get());
            assertTrue(lab.tcpFabric() != null);
        }
    }

    /**
     * With a token, strangers cannot end the run: one that says HELLO in another protocol version (without the
     * proof) and one that closes right after the challenge are refused and not counted; the sender that proves the
     * token is served after them.
     */
    @Test
    void withATokenStrangersThatSpeakAnotherVersionOrHangUpCannotEndTheRun() throws Exception {
        final int port = freePort();
        final io.gdrkit.core.auth.Token token = io.gdrkit.core.auth.Token.of("vis-t0ken");
        final java.util.concurrent.atomic.AtomicReference<String> v99 = new java.util.concurrent.atomic
            .AtomicReference<>();
        final java.util.concurrent.atomic.AtomicReference<String> member = new java.util.concurrent.atomic
            .AtomicReference<>();
        final Thread strangers = Thread.ofPlatform().daemon(true).start(() -> {
            try {
                vanishingSender(port, 99, io.gdrkit.core.auth.Token.NONE, v99).join(30_000);
                for (int attempt = 0; attempt < 100; attempt++) {
                    try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
                        assertEquals(Control.CHAL, new java.io.DataInputStream(s.getInputStream()).readByte());
                        break; // and hang up before HELLO
                    } catch (final java.io.IOException e) {
                        java.util.concurrent.locks.LockSupport.parkNanos(100_000_000L);
                    }
                }
                vanishingSender(port, Control.VERSION, token, member).join(30_000);
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try (VisibilityLab lab = VisibilityLab.start(VisibilityLab.Transport.TCP, 1, port, true, token)) {
            strangers.join(60_000);
            assertEquals("REFUSED its HELLO does not prove the receiver's token (set GDRKIT_TOKEN as on the "
                + "receiver)", v99.get());
            assertTrue(member.get() != null && member.get().startsWith("ASSIGN lid 2 tcp:"), member.get());
        }
    }

    @Test
    void aSenderSpeakingAnotherProtocolVersionIsRefused() throws Exception {
        final int port = freePort();
        vanishingSender(port, 99);
        final IllegalStateException e = assertThrows(IllegalStateException.class,
            () -> VisibilityLab.start(VisibilityLab.Transport.TCP, 1, port, true));
        assertTrue(e.getMessage().contains("speaks control version 99"), e.getMessage());
    }

    @Test
    void listenNeedsTcpAndSenderCountsAreChecked() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> VisibilityLab.start(VisibilityLab.Transport.SHM, 1, 0, true));
        assertTrue(e.getMessage().contains("--fabric tcp"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> VisibilityLab.start(VisibilityLab.Transport.JVM, 0, 0,
            false));
        final IllegalArgumentException t = assertThrows(IllegalArgumentException.class,
            () -> VisibilityLab.Transport.parse("udp"));
        assertTrue(t.getMessage().contains("the fabric must be jvm, shm or tcp, not 'udp'"), t.getMessage());
    }
}
