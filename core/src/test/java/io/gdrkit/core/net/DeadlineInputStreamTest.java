/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.net;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeadlineInputStreamTest {
    /** A peer that sends {@code n} bytes, one every {@code gapMs}; counts what it sent. */
    private static Thread drip(final Socket s, final int n, final long gapMs, final AtomicInteger sent) {
        return Thread.ofPlatform().daemon(true).start(() -> {
            try {
                final OutputStream out = s.getOutputStream();
                for (int i = 0; i < n; i++) {
                    out.write(i);
                    out.flush();
                    sent.incrementAndGet();
                    Thread.sleep(gapMs);
                }
            } catch (final IOException | InterruptedException e) {
                // closed by the test
            }
        });
    }

    @Test
    void oneDeadlineBoundsTheWholeReadNotEachPiece() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             Socket client = new Socket(InetAddress.getLoopbackAddress(), ss.getLocalPort());
             Socket server = ss.accept()) {
            final AtomicInteger sent = new AtomicInteger();
            // 100 bytes at 100 ms each: every byte well inside a per-read timeout of 1 s
            final Thread t = drip(client, 100, 100, sent);
            final DeadlineInputStream in = new DeadlineInputStream(server, Duration.ofSeconds(1));
            assertThrows(SocketTimeoutException.class, () -> in.readNBytes(100));
            assertTrue(sent.get() < 100, "the deadline ended the read before the drip did (sent " + sent + ")");
            assertTrue(in.nanosLeft() <= 0);
            assertThrows(SocketTimeoutException.class, in::read, "past the deadline, every read fails at once");
            client.close();
            t.join(10_000);
        }
    }

    @Test
    void clearedOrMovedTheDeadlineLetsAnExchangeFinish() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             Socket client = new Socket(InetAddress.getLoopbackAddress(), ss.getLocalPort());
             Socket server = ss.accept()) {
            client.getOutputStream().write(new byte[] {1, 2, 3});
            final DeadlineInputStream in = new DeadlineInputStream(server, Duration.ofSeconds(30));
            assertArrayEquals(new byte[] {1, 2, 3}, in.readNBytes(3));
            in.clear();
            assertEquals(Long.MAX_VALUE, in.nanosLeft());
            client.getOutputStream().write(4);
            assertEquals(4, in.read());
            in.within(Duration.ofSeconds(30));
            client.getOutputStream().write(5);
            assertEquals(5, in.read());
        }
    }
}
