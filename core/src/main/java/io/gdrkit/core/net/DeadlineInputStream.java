/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.net;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;

/**
 * The input of a blocking socket with one fixed deadline for a whole exchange (a handshake), not a timeout per
 * read: a peer that drips one byte just inside a per-read timeout could otherwise hold a handshake slot, or stall
 * a join, for as long as it likes. Before each read the socket's SO_TIMEOUT is set to what is left of the
 * deadline; once it has passed, every read throws {@link SocketTimeoutException}. Without a deadline
 * ({@link #clear}) reads pass straight through, under whatever SO_TIMEOUT the socket has.
 *
 * <p>One reader at a time (like the socket's own stream); the deadline may be moved between exchanges.
 */
public final class DeadlineInputStream extends InputStream {
    private final Socket socket;
    private final InputStream in;
    private long deadlineNanos;
    private boolean armed;

    /** A stream over {@code socket}'s input whose deadline is {@code budget} from now. */
    public DeadlineInputStream(final Socket socket, final Duration budget) throws IOException {
        this.socket = socket;
        this.in = socket.getInputStream();
        within(budget);
    }

    /** Sets the deadline to {@code budget} from now (for the next exchange). */
    public void within(final Duration budget) {
        deadlineNanos = System.nanoTime() + budget.toNanos();
        armed = true;
    }

    /** Removes the deadline: reads then wait as long as the socket's own SO_TIMEOUT says. */
    public void clear() {
        armed = false;
    }

    /** Nanoseconds left before the deadline (negative once past; Long.MAX_VALUE without one). */
    public long nanosLeft() {
        return armed ? deadlineNanos - System.nanoTime() : Long.MAX_VALUE;
    }

    private void arm() throws IOException {
        if (!armed) {
            return;
        }
        final long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
            throw new SocketTimeoutException("the exchange's deadline passed");
        }
        socket.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000)));
    }

    @Override
    public int read() throws IOException {
        arm();
        return in.read();
    }

    @Override
    public int read(final byte[] b, final int off, final int len) throws IOException {
        arm();
        return in.read(b, off, len);
    }

    @Override
    public int available() throws IOException {
        return in.available();
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
