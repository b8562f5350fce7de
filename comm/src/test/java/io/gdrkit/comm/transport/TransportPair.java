/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import java.time.Duration;

/** Drives a sender's connect and a receiver's accept (both non-blocking) in one thread until both are up. */
final class TransportPair {
    final NetTransport tx;
    final NetTransport rx;
    NetTransport.SendComm send;
    NetTransport.RecvComm recv;
    NetTransport.ListenComm listen;

    TransportPair(final NetTransport tx, final NetTransport rx) {
        this.tx = tx;
        this.rx = rx;
    }

    /** Listens on rx, connects from tx; counts the nulls each side returned (proof they did not block). */
    int[] connect() {
        final byte[] handle = new byte[NetTransport.HANDLE_MAXSIZE];
        listen = rx.listen(0, handle);
        final int[] nulls = new int[2];
        final long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (send == null || recv == null) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("connect/accept did not finish within 30 s");
            }
            if (send == null) {
                send = tx.connect(0, handle);
                nulls[0] += send == null ? 1 : 0;
            }
            if (recv == null) {
                recv = rx.accept(listen);
                nulls[1] += recv == null ? 1 : 0;
            }
        }
        return nulls;
    }

    /** Tests until done (30 s at most). */
    static void await(final NetTransport t, final NetTransport.Request r, final int[] sizes,
                      final NetTransport other, final NetTransport.Request[] others) {
        final long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!t.test(r, sizes)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("request did not complete within 30 s");
            }
            if (others != null) {
                for (int i = 0; i < others.length; i++) {
                    if (others[i] != null && other.test(others[i], null)) {
                        others[i] = null;
                    }
                }
            }
        }
    }

    void close() {
        if (send != null) {
            tx.closeSend(send);
        }
        if (recv != null) {
            rx.closeRecv(recv);
        }
        if (listen != null) {
            rx.closeListen(listen);
        }
    }
}
