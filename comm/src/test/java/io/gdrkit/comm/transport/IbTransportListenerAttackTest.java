/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.VerbsContext;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A stranger on IbTransport's setup socket: raw connect messages with one field wrong (magic, listen id, LID, QP
 * count, QP number, software MTU), cut short, silent, or fuzzed from a seed. One that never names this listener
 * (another magic, another listener's id, too short, silence) is dropped and counted while accept goes on waiting, and
 * a real sender is served even while a silent stranger holds its socket open; one that names it and then breaks the
 * protocol is a sender of this run and ends with a named REMOTE error. Never a comm for a stranger.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class IbTransportListenerAttackTest {
    private static final Duration T = Duration.ofSeconds(3);
    private SoftNicDriver driver;
    private VerbsContext c0;
    private VerbsContext c1;
    private NetNic n0;
    private NetNic n1;
    private IbTransport tx;
    private IbTransport rx;
    private NetTransport.ListenComm listen;
    private Handshake.Listen target;
    private final byte[] handle = new byte[NetTransport.HANDLE_MAXSIZE];

    @BeforeEach
    void open() {
        driver = SoftNicDriver.launch(new SoftNicContext());
        c0 = driver.addDevice("soft0").open();
        c1 = driver.addDevice("soft1").open();
        n0 = new NetNic(0, c0, NetCaps.probe(0, c0, null));
        n1 = new NetNic(1, c1, NetCaps.probe(1, c1, null));
        tx = new IbTransport(new IbTransportContext().nic(n0).settings(SettingsReader.ofEnv(Map.of())).timeout(T));
        rx = new IbTransport(new IbTransportContext().nic(n1).settings(SettingsReader.ofEnv(Map.of())).timeout(T));
        listen = rx.listen(0, handle);
        target = Handshake.readHandle(handle, IbTransport.HANDLE_MAGIC, "NET/IB");
    }

    @AfterEach
    void close() {
        rx.closeListen(listen);
        tx.close();
        rx.close();
        n0.close();
        n1.close();
        c0.close();
        c1.close();
        driver.close();
    }

    /** A well-formed connect message (the layout at IbTransport's CONNECT_BYTES) with these fields. */
    private static byte[] connect(final int magic, final long id, final int lid, final int nq, final int qpn,
                                  final int mtu) {
        final ByteBuffer b = ByteBuffer.allocate(35 + 4 * Math.max(nq, 0)).putInt(magic).putLong(id)
            .putShort((short) lid).put((byte) nq).putInt(77).putLong(0x10000L).putInt(5).putInt(mtu);
        for (int i = 0; i < nq; i++) {
            b.putInt(qpn);
        }
        return b.array();
    }

    private byte[] good() {
        return connect(0x47494243, target.id(), 9, 1, 0x100, 0);
    }

    /**
     * Sends {@code bytes} from a raw socket (closed after unless {@code keepOpen}); returns accept's error, or null
     * when the connection was dropped as a stranger (counted, accept still waiting).
     */
    private NetTransportException attack(final byte[] bytes, final boolean keepOpen) throws IOException {
        final long before = rx.strangersRefused();
        final SocketChannel s = SocketChannel.open(target.address());
        try {
            s.write(ByteBuffer.wrap(bytes));
            if (!keepOpen) {
                s.shutdownOutput();
            }
            final long deadline = System.nanoTime() + T.toNanos() * 3;
            while (System.nanoTime() < deadline) {
                try {
                    assertNull(rx.accept(listen), "a stranger's connect became a comm");
                } catch (final NetTransportException e) {
                    assertEquals(before, rx.strangersRefused(), "a named error is not also counted as a stranger");
                    return e;
                }
                if (rx.strangersRefused() > before) {
                    return null;
                }
            }
            throw new AssertionError("accept neither named nor dropped it within " + 3 * T.toMillis() + " ms");
        } finally {
            s.close();
        }
    }

    /** A real sender still connects, and the comms are closed again. */
    private void aRealSenderIsServed() {
        final TransportPair p = new TransportPair(tx, rx);
        final long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (p.send == null || p.recv == null) {
            assertTrue(System.nanoTime() < deadline, "a real sender within 30 s");
            if (p.send == null) {
                p.send = tx.connect(0, handle);
            }
            if (p.recv == null) {
                p.recv = rx.accept(listen);
            }
        }
        tx.closeSend(p.send);
        rx.closeRecv(p.recv);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "magic|1|0|a message that is not a connect",
        "listen id|0|1|the handle of another listener"})
    void aConnectThatNamesNoListenerOfThisRunIsDroppedAndCounted(final String what, final int badMagic,
                                                                  final int badId, final String why)
        throws IOException {
        final byte[] m = connect(badMagic == 1 ? 0x47494241 : 0x47494243, target.id() + badId, 9, 1, 256, 0);
        assertNull(attack(m, false), what + " was named instead of dropped");
        assertTrue(rx.lastStrangerRefused().contains(why), rx.lastStrangerRefused());
        aRealSenderIsServed();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "LID 0|0|0|0|1|256|0|LID 0 (a unicast LID is 1..0xBFFF)",
        "multicast LID|0|0|49152|1|256|0|LID 49152",
        "no QP|0|0|9|0|256|0|asks for 0 QPs",
        "too many QPs|0|0|9|200|256|0|asks for 200 QPs",
        "QP number 1|0|0|9|1|1|0|QP number 1",
        "QP number over 24 bits|0|0|9|1|16777216|0|QP number 16777216",
        "software MTU|0|0|9|1|256|65536|the sender uses software MTU 65536 B, this end 0 (the path MTU)"})
    void aConnectThatNamesThisListenerWithOneFieldWrongIsNamed(final String what, final int badMagic,
                                                                   final int badId, final int lid, final int nq,
                                                                   final int qpn, final int mtu, final String named)
        throws IOException {
        final byte[] m = connect(badMagic == 1 ? 0x47494241 : 0x47494243, target.id() + badId, lid, nq, qpn, mtu);
        final NetTransportException e = attack(m, false);
        assertEquals(Reason.REMOTE, e.reason(), e.getMessage());
        assertTrue(e.getMessage().contains(named), what + ": " + e.getMessage());
        aRealSenderIsServed();
    }

    @Test
    void aConnectCutShortOrSilentIsDroppedAndARealSenderIsServedMeanwhile() throws IOException {
        assertNull(attack(Arrays.copyOf(good(), 20), false), "cut short: dropped");
        assertTrue(rx.lastStrangerRefused().contains("closed the connection during setup"), rx.lastStrangerRefused());
        // a silent stranger holds its socket open: the real sender is served while it sits there
        try (SocketChannel silent = SocketChannel.open(target.address())) {
            final long before = rx.strangersRefused();
            aRealSenderIsServed();
            assertEquals(before, rx.strangersRefused(), "the silent one is still waiting, not yet dropped");
            assertNull(attack(Arrays.copyOf(good(), 20), true), "silent past the timeout: dropped");
            assertTrue(rx.lastStrangerRefused().contains("accept of a NET/IB connection (stage 0) did not finish "
                + "within 3000 ms"), rx.lastStrangerRefused());
            silent.isOpen();
        }
        aRealSenderIsServed();
    }

    /**
     * Out of file descriptors, accept fails with EMFILE (Linux takes the descriptor before it looks at the backlog):
     * the listener pauses accepting and says nothing to the caller, whose deadline still runs; before, the
     * communicator's setup failed with SYSTEM "accept: Too many open files". Once descriptors are free, a real
     * sender is served.
     */
    @Test
    void acceptOutOfDescriptorsBacksOffAndARealSenderIsServedAfter() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(io.gdrkit.core.host.FileDescriptorLimit.unavailable().isEmpty(),
            "no RLIMIT_NOFILE here");
        aRealSenderIsServed(); // loads what accept runs: no class file opens while no descriptor is free
        final io.gdrkit.core.net.AcceptBackoff b = rx.acceptBackoff(listen);
        try (SocketChannel waiting = SocketChannel.open()) {
            try (var x = io.gdrkit.core.host.FileDescriptorLimit.exhaust()) {
                waiting.connect(target.address()); // into the backlog
                final long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                while (b.failures() < 3 && System.nanoTime() < deadline) {
                    x.refill(); // any descriptor closed late elsewhere in the JVM
                    assertNull(rx.accept(listen), "no comm while no descriptor is free");
                    Thread.sleep(1);
                }
            }
            assertTrue(b.failures() >= 3, "accept failed and was retried: " + b.failures());
            assertTrue(b.lastError().contains("Too many open files"), b::lastError);
        }
        aRealSenderIsServed();
        assertEquals(0, b.delayNanos(), "the pause ended with the next accept");
    }

    @Test
    void moreStrangersThanSetupSlotsAreClosedAndARealSenderIsStillServed() throws IOException {
        final java.util.List<SocketChannel> held = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < IbTransport.MAX_PENDING_ACCEPTS + 4; i++) {
                held.add(SocketChannel.open(target.address()));
            }
            final long deadline = System.nanoTime() + T.toNanos();
            while (rx.strangersRefused() < 4 && System.nanoTime() < deadline) {
                assertNull(rx.accept(listen));
            }
            assertEquals(4, rx.strangersRefused(), "the oldest over the limit are closed at once");
            assertTrue(rx.lastStrangerRefused().startsWith("more than 16 connections in setup at once"),
                rx.lastStrangerRefused());
            aRealSenderIsServed(); // while 16 silent strangers hold their sockets open
        } finally {
            for (final SocketChannel c : held) {
                c.close();
            }
        }
        aRealSenderIsServed();
    }

    @Test
    void fuzzedConnectsEachEndWithANamedErrorAndNeverAComm() throws IOException {
        final SplittableRandom r = new SplittableRandom(0x1b7a);
        for (int round = 0; round < 60; round++) {
            byte[] m = good();
            switch (r.nextInt(3)) {
                case 0 -> { // flip bytes anywhere
                    for (int k = 1 + r.nextInt(4); k > 0; k--) {
                        m[r.nextInt(m.length)] ^= (byte) (1 + r.nextInt(255));
                    }
                }
                case 1 -> m = Arrays.copyOf(m, r.nextInt(m.length)); // cut short
                default -> { // random bytes, any length up to past the read buffer
                    m = new byte[r.nextInt(5000)];
                    r.nextBytes(m);
                }
            }
            final NetTransportException e = attack(m, false);
            if (e != null) { // it named this listener, then broke the protocol: a named error
                assertTrue(e.reason() == Reason.REMOTE || e.reason() == Reason.TIMEOUT, "round " + round + ": "
                    + e.reason() + " " + e.getMessage());
                assertNotNull(e.getMessage(), "round " + round);
            } else {
                assertNotNull(rx.lastStrangerRefused(), "round " + round);
            }
        }
        aRealSenderIsServed();
    }
}
