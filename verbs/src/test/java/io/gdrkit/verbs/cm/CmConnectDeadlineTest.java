/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.auth.Token;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The connecting side's handshake runs under one deadline, not a timeout per read: a listener that drips a CHAL
 * and then a REJ a byte at a time, each byte well inside the per-read timeout, must not hold the connecting side
 * past the handshake's budget. With a timeout per read the client got the whole CHAL and then the REJ
 * (REJECTED), seconds past its budget; with the deadline it ends TIMEOUT.
 */
class CmConnectDeadlineTest {
    private static byte[] bytes(final CmMessage m) throws Exception {
        final ByteArrayOutputStream b = new ByteArrayOutputStream();
        m.write(new DataOutputStream(b));
        return b.toByteArray();
    }

    @Test
    void aListenerThatDripsItsAnswerEndsTheQueryAtTheHandshakeDeadline() throws Exception {
        final byte[] chal = bytes(new CmMessage(CmMessage.CHAL, 0, 0, 0, 0, Token.nonce()));
        final byte[] rej = bytes(new CmMessage(CmMessage.REJ, 0, 0, 0, 0,
            "dripped".getBytes(StandardCharsets.UTF_8)));
        final byte[] all = new byte[chal.length + rej.length];
        System.arraycopy(chal, 0, all, 0, chal.length);
        System.arraycopy(rej, 0, all, chal.length, rej.length);
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            final Thread drip = Thread.ofPlatform().daemon(true).start(() -> {
                try (Socket s = server.accept()) {
                    final OutputStream out = s.getOutputStream();
                    for (final byte b : all) {
                        out.write(b);
                        out.flush();
                        Thread.sleep(40); // far inside the 400 ms a per-read timeout would allow
                    }
                    Thread.sleep(5_000);
                } catch (final Exception e) {
                    // the client hung up: expected
                }
            });
            final InetSocketAddress at = (InetSocketAddress) server.getLocalSocketAddress();
            final CmException e = assertThrows(CmException.class,
                () -> ConnectionManager.query(at, Duration.ofMillis(400), Token.NONE));
            assertEquals(CmException.Reason.TIMEOUT, e.reason(), e.getMessage());
            assertTrue(e.getMessage().contains("no whole CHAL from " + at + " within the handshake's 400 ms"),
                e.getMessage());
            drip.interrupt();
        }
    }
}
