/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;

/**
 * The TCP control channel between the receiver and one sender process: grants, notifications and results, as the
 * background experiment did it. Every message is a type byte and fixed fields; every read has a timeout and a
 * timeout names what was being waited for.
 *
 * <pre>
 *   receiver -> sender   CHAL     nonce:16 bytes (first, on accept)
 *   sender -> receiver   HELLO    version:i32 senders-hosted-max:i32 proof:32 bytes
 *                                 (HMAC-SHA256(token, nonce || "gdrkit-vis-hello"); zeros without a token)
 *   receiver -> sender   REFUSED  why:utf (a failed proof; the receiver closes and waits for the next sender)
 *   receiver -> sender   ASSIGN   lid:i32 fabric:utf fabric-arg:utf
 *   receiver -> sender   CONFIG   config first-sender:i32 count:i32 receiver-lid:i32
 *                                 count x (data-qpn:i32 flag-qpn:i32 data-addr:i64 data-rkey:i32 flag-addr:i64 flag-rkey:i32)
 *   sender -> receiver   READY    lid:i32 count x (data-qpn:i32 flag-qpn:i32)
 *   receiver -> sender   GRANT    round:i32
 *   sender -> receiver   NOTIFY   round:i32 count x (status:i32 detail:utf)
 *   receiver -> sender   RESULT   round:i32 count x (bad:i64 first:i64 what:utf)
 *   receiver -> sender   END      (the configuration is over)
 *   sender -> receiver   ENDED    failures-told:i64
 *   receiver -> sender   BYE
 * </pre>
 */
final class Control implements AutoCloseable {
    static final int VERSION = 2;
    /** What a sender's HELLO proof covers besides the nonce: the token proves this channel, no other. */
    static final byte[] HELLO_PROOF = "gdrkit-vis-hello".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    static final byte HELLO = 1;
    static final byte ASSIGN = 2;
    static final byte CONFIG = 3;
    static final byte READY = 4;
    static final byte GRANT = 5;
    static final byte NOTIFY = 6;
    static final byte RESULT = 7;
    static final byte END = 8;
    static final byte ENDED = 9;
    static final byte BYE = 10;
    static final byte CHAL = 11;
    static final byte REFUSED = 12;

    private final Socket socket;
    final DataInputStream in;
    final DataOutputStream out;
    private final String peer;

    Control(final Socket socket, final String peer) {
        this.socket = socket;
        this.peer = peer;
        try {
            socket.setTcpNoDelay(true);
            this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        } catch (final IOException e) {
            throw new UncheckedIOException("control channel to " + peer, e);
        }
    }

    /** Waits for a message of type {@code expected}; the timeout and the message say what was awaited. */
    void expect(final byte expected, final Duration timeout, final String what) {
        final byte type = next(timeout, what);
        if (type != expected) {
            throw new IllegalStateException("control channel to " + peer + ": got message " + type
                + " while waiting for " + what + " (message " + expected + ")");
        }
    }

    /** Reads the next message type (a sender waits for the receiver's next step). */
    byte next(final Duration timeout, final String what) {
        try {
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis())));
            final int type = in.read();
            if (type < 0) {
                throw new IllegalStateException(peer + " closed the control channel while waiting for " + what);
            }
            return (byte) type;
        } catch (final SocketTimeoutException e) {
            throw new IllegalStateException("no " + what + " from " + peer + " within " + timeout.toSeconds() + " s",
                e);
        } catch (final IOException e) {
            throw new UncheckedIOException("control channel to " + peer + " while waiting for " + what, e);
        }
    }

    void flush() {
        try {
            out.flush();
        } catch (final IOException e) {
            throw new UncheckedIOException("control channel to " + peer, e);
        }
    }

    String peer() {
        return peer;
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (final IOException e) {
            // closing: nothing left to tell
        }
    }
}
