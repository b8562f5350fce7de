/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.comm.bootstrap.BootstrapException.Reason;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A rank's wait for the root's welcome runs under the join's one deadline, not a timeout per read. A "root" that
 * drips a valid welcome a byte at a time, each byte well inside the per-read timeout, used to be waited for until
 * the last byte (the rank then joined, past its timeout); now the rank ends TIMEOUT, naming the welcome.
 */
class BootstrapJoinDeadlineTest {
    @Test
    void aRootThatDripsItsWelcomeEndsTheJoinAtTheDeadline() throws Exception {
        final long runId = 0x1234_5678_9abc_def0L;
        final ByteArrayOutputStream b = new ByteArrayOutputStream();
        BootstrapWire.write(new DataOutputStream(b), BootstrapWire.WELCOME, 0, 0, runId, new byte[0]);
        final byte[] welcome = b.toByteArray();
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            final Thread drip = Thread.ofPlatform().daemon(true).start(() -> {
                try (Socket s = server.accept()) {
                    final InputStream in = s.getInputStream();
                    in.readNBytes(30); // the hello's frame header and more: the rank has spoken
                    final OutputStream out = s.getOutputStream();
                    for (final byte x : welcome) {
                        out.write(x);
                        out.flush();
                        Thread.sleep(60); // far inside a 400 ms timeout per read
                    }
                    Thread.sleep(5_000);
                } catch (final Exception e) {
                    // the rank hung up: expected
                }
            });
            final InetSocketAddress at = (InetSocketAddress) server.getLocalSocketAddress();
            final UniqueId id = new UniqueId(at.getAddress().getHostAddress(), at.getPort(), runId);
            final BootstrapException e = assertThrows(BootstrapException.class, () -> Bootstrap.init(
                new BootstrapContext().id(id).rank(1).nranks(2).timeout(Duration.ofMillis(400))).close());
            assertEquals(Reason.TIMEOUT, e.reason(), e.getMessage());
            assertTrue(e.getMessage().contains("for every rank to join (the root's challenge or welcome)"),
                e.getMessage());
            drip.interrupt();
        }
    }
}
