/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SocketTransportTest {
    private final Arena arena = Arena.ofShared();
    private SocketTransport tx;
    private SocketTransport rx;
    private TransportPair pair;

    private void open(final int threads, final int socks) {
        open(threads, socks, Duration.ofSeconds(20));
    }

    private void open(final int threads, final int socks, final Duration timeout) {
        tx = new SocketTransport(new SocketTransportContext().settings(SettingsReader.ofEnv(Map.of()))
            .nThreads(threads).nSocksPerThread(socks).timeout(timeout));
        rx = new SocketTransport(new SocketTransportContext().settings(SettingsReader.ofEnv(Map.of()))
            .nThreads(threads).nSocksPerThread(socks).timeout(timeout));
        pair = new TransportPair(tx, rx);
    }

    /** As IbTransport: a receive posted ahead is not late while untested; a tested one that never completes is. */
    @Test
    void aReceivePostedAheadTimesOutOnlyOnceSomeoneWaitsForIt() throws Exception {
        open(1, 1, Duration.ofMillis(300));
        pair.connect();
        final MemorySegment src = random(4096, 3);
        final MemorySegment dst = arena.allocate(4096, 64);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        final NetTransport.Request r = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {4096},
            new int[] {11}, new NetTransport.MrHandle[] {rmh});
        Thread.sleep(900); // three timeouts, untested
        final NetTransport.Request s = tx.isend(pair.send, src.address(), 4096, 11, smh);
        final int[] got = new int[1];
        TransportPair.await(rx, r, got, tx, new NetTransport.Request[] {s});
        assertEquals(4096, got[0]);
        assertEquals(-1L, MemorySegment.mismatch(src, 0, 4096, dst, 0, 4096));
        final NetTransport.Request late = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {4096},
            new int[] {12}, new NetTransport.MrHandle[] {rmh});
        org.junit.jupiter.api.Assertions.assertFalse(rx.test(late, null), "a receive nobody sent to completed");
        Thread.sleep(600);
        final NetTransportException e = assertThrows(NetTransportException.class, () -> rx.test(late, null));
        assertEquals(Reason.TIMEOUT, e.reason());
        assertTrue(e.getMessage().contains("did not complete within 300 ms"), e.getMessage());
    }

    /**
     * An attack on the listener through the process's descriptors: out of them, accept fails with EMFILE; the
     * listener pauses accepting and returns no comm rather than failing the setup with SYSTEM, and a sender connects
     * once descriptors are free.
     */
    @Test
    void acceptOutOfDescriptorsBacksOffAndASenderConnectsAfter() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(io.gdrkit.core.host.FileDescriptorLimit.unavailable().isEmpty(),
            "no RLIMIT_NOFILE here");
        open(1, 1);
        pair.connect(); // loads what accept runs: no class file opens while no descriptor is free
        final byte[] handle = new byte[NetTransport.HANDLE_MAXSIZE];
        final NetTransport.ListenComm l = rx.listen(0, handle);
        try {
            final io.gdrkit.core.net.AcceptBackoff b = rx.acceptBackoff(l);
            try (var x = io.gdrkit.core.host.FileDescriptorLimit.exhaust()) {
                final long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                while (b.failures() < 3 && System.nanoTime() < deadline) {
                    x.refill(); // any descriptor closed late elsewhere in the JVM
                    org.junit.jupiter.api.Assertions.assertNull(rx.accept(l), "no comm without a descriptor");
                    Thread.sleep(1);
                }
            }
            assertTrue(b.failures() >= 3, "accept failed and was retried: " + b.failures());
            assertTrue(b.lastError().contains("Too many open files"), b::lastError);
            NetTransport.SendComm send = null;
            NetTransport.RecvComm recv = null;
            final long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while ((send == null || recv == null) && System.nanoTime() < deadline) {
                if (send == null) {
                    send = tx.connect(0, handle);
                }
                if (recv == null) {
                    recv = rx.accept(l);
                }
            }
            assertTrue(send != null && recv != null, "a sender connected after the exhaustion");
            assertEquals(0, b.delayNanos(), "the pause ended with the next accept");
            tx.closeSend(send);
            rx.closeRecv(recv);
        } finally {
            rx.closeListen(l);
        }
    }

    @AfterEach
    void close() {
        if (pair != null) {
            pair.close();
        }
        arena.close();
    }

    private MemorySegment random(final int len, final long seed) {
        final MemorySegment m = arena.allocate(Math.max(1, len), 64);
        final SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < len; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256));
        }
        return m;
    }

    @ParameterizedTest(name = "threads={0} socks={1}")
    @CsvSource({"1,1", "2,2", "4,1"})
    void messagesArriveByteForByteOverSeveralSockets(final int threads, final int socks) {
        open(threads, socks);
        pair.connect();
        final int max = 3 << 20;
        final MemorySegment src = random(max, 5);
        final MemorySegment dst = arena.allocate(max, 64);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        int tag = 0;
        for (final int size : new int[] {0, 1, 65535, 65536, 65537, 300_001, max}) {
            dst.fill((byte) 0x33);
            final NetTransport.Request r = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {max},
                new int[] {tag}, new NetTransport.MrHandle[] {rmh});
            final NetTransport.Request s = tx.isend(pair.send, src.address(), size, tag, smh);
            final int[] got = new int[1];
            TransportPair.await(rx, r, got, tx, new NetTransport.Request[] {s});
            assertEquals(size, got[0]);
            assertEquals(-1L, MemorySegment.mismatch(src, 0, size, dst, 0, size), "size " + size);
            if (size < max) {
                assertEquals((byte) 0x33, dst.get(ValueLayout.JAVA_BYTE, size));
            }
            tag++;
        }
    }

    @Test
    void truncationTagMismatchAndDeviceMemoryAreNamed() {
        open(1, 1);
        pair.connect();
        assertEquals(NetProperties.PTR_HOST, rx.getProperties(0).ptrSupport());
        assertEquals(1, rx.getProperties(0).maxRecvs());
        final MemorySegment src = random(1000, 1);
        final MemorySegment dst = arena.allocate(1000);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        assertEquals(Reason.INVALID_ARGUMENT, assertThrows(NetTransportException.class, () -> rx.irecv(pair.recv, 2,
            new long[2], new int[2], new int[2], new NetTransport.MrHandle[] {rmh, rmh})).reason());
        final NetTransport.Request r = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {100},
            new int[] {5}, new NetTransport.MrHandle[] {rmh});
        tx.isend(pair.send, src.address(), 101, 5, smh);
        final NetTransportException e = assertThrows(NetTransportException.class, () -> {
            final long deadline = System.nanoTime() + 20_000_000_000L;
            while (!rx.test(r, null)) {
                assertTrue(System.nanoTime() < deadline);
            }
        });
        assertEquals(Reason.INVALID_USAGE, e.reason());
        assertTrue(e.getMessage().contains("message truncated: the sender sent 101 bytes into a receive of 100"),
            e.getMessage());
    }

    @Test
    void tagMismatchAndAPeerThatClosesAreRemoteErrors() {
        open(1, 2);
        pair.connect();
        final MemorySegment src = random(100, 1);
        final MemorySegment dst = arena.allocate(100);
        final NetTransport.MrHandle smh = tx.regMr(pair.send, src);
        final NetTransport.MrHandle rmh = rx.regMr(pair.recv, dst);
        final NetTransport.Request r = rx.irecv(pair.recv, 1, new long[] {dst.address()}, new int[] {100},
            new int[] {1}, new NetTransport.MrHandle[] {rmh});
        tx.isend(pair.send, src.address(), 10, 2, smh);
        final NetTransportException e = assertThrows(NetTransportException.class, () -> {
            final long deadline = System.nanoTime() + 20_000_000_000L;
            while (!rx.test(r, null)) {
                assertTrue(System.nanoTime() < deadline);
            }
        });
        assertEquals(Reason.REMOTE, e.reason());
        assertTrue(e.getMessage().contains("the sender sent tag 2 where the receive expects tag 1"), e.getMessage());

        final TransportPair p2 = new TransportPair(tx, rx);
        p2.connect();
        final NetTransport.MrHandle rmh2 = rx.regMr(p2.recv, dst);
        final NetTransport.Request r2 = rx.irecv(p2.recv, 1, new long[] {dst.address()}, new int[] {100},
            new int[] {1}, new NetTransport.MrHandle[] {rmh2});
        tx.closeSend(p2.send);
        p2.send = null;
        final NetTransportException gone = assertThrows(NetTransportException.class, () -> {
            final long deadline = System.nanoTime() + 20_000_000_000L;
            while (!rx.test(r2, null)) {
                assertTrue(System.nanoTime() < deadline);
            }
        });
        assertEquals(Reason.REMOTE, gone.reason());
        assertTrue(gone.getMessage().contains("the sender closed the connection"), gone.getMessage());
        p2.close();
    }

    @Test
    void settingsAreReadOnceWithSourcesAndTheProductIsBounded() {
        final SocketTransportContext c = new SocketTransportContext().settings(SettingsReader.ofEnv(Map.of(
            "NCCL_SOCKET_NTHREADS", "4", "NCCL_NSOCKS_PERTHREAD", "2"))).conclude();
        assertEquals(4, c.nThreads());
        assertEquals(2, c.nSocksPerThread());
        assertTrue(c.recorded().stream().anyMatch(s -> s.describe().equals("NCCL_SOCKET_NTHREADS=4 (environment)")));
        final IllegalArgumentException big = assertThrows(IllegalArgumentException.class, () ->
            new SocketTransportContext().settings(SettingsReader.ofEnv(Map.of("NCCL_SOCKET_NTHREADS", "16",
                "NCCL_NSOCKS_PERTHREAD", "8"))).conclude());
        assertTrue(big.getMessage().contains("128 sockets exceeds 64"), big.getMessage());
    }
}
