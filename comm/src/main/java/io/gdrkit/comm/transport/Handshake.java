/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import io.gdrkit.comm.transport.NetTransportException.Reason;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * The non-blocking side channel connect and accept exchange their setup on (as NCCL's transports do over a
 * socket): small fixed messages written and read a piece per call, so neither side ever waits for the other.
 *
 * <p>A listen handle, big-endian:
 * <pre>
 *  0          4     5            6        7               7+len   9+len
 *  +----------+-----+------------+--------+---------------+-------+-----------------+
 *  | magic    | ver | addr len   | unused | address bytes | port  | listen id (u64) |
 *  +----------+-----+------------+--------+---------------+-------+-----------------+
 * </pre>
 * The magic names the transport, so a handle of another transport is refused; the listen id (random) names the
 * listener, so a connection meant for another one (another run reusing the port) is refused by the acceptor.
 */
final class Handshake {
    private final SocketChannel ch;
    private ByteBuffer out;
    private final ByteBuffer in = ByteBuffer.allocate(4096);
    private final String peer;

    Handshake(final SocketChannel ch, final String peer) {
        this.ch = ch;
        this.peer = peer;
    }

    SocketChannel channel() {
        return ch;
    }

    /** Queues {@code msg} to be written by {@link #flush()}. */
    void send(final ByteBuffer msg) {
        out = msg.flip();
    }

    /** Writes what it can; true when nothing is left to write. */
    boolean flush() {
        if (out == null || !out.hasRemaining()) {
            return true;
        }
        try {
            ch.write(out);
        } catch (final IOException e) {
            throw new NetTransportException(Reason.REMOTE, "writing the setup message to " + peer + ": "
                + e.getMessage(), e);
        }
        return !out.hasRemaining();
    }

    /**
     * Reads until {@code n} bytes are buffered; returns them (and consumes them), or null when not yet.
     *
     * @throws NetTransportException REMOTE when the peer closes
     */
    ByteBuffer read(final int n) {
        if (n > in.capacity()) {
            throw new NetTransportException(Reason.REMOTE, peer + " announced a setup message of " + n + " bytes");
        }
        if (in.position() < n) {
            final int r;
            try {
                r = ch.read(in);
            } catch (final IOException e) {
                throw new NetTransportException(Reason.REMOTE, "reading the setup message from " + peer + ": "
                    + e.getMessage(), e);
            }
            if (r < 0) {
                throw new NetTransportException(Reason.REMOTE, peer + " closed the connection during setup");
            }
        }
        if (in.position() < n) {
            return null;
        }
        in.flip();
        final byte[] msg = new byte[n];
        in.get(msg);
        in.compact();
        return ByteBuffer.wrap(msg);
    }

    /** Bytes buffered beyond what was read (a peer that sends more than the protocol allows). */
    int buffered() {
        return in.position();
    }

    void close() {
        try {
            ch.close();
        } catch (final IOException ignored) {
            // closing
        }
    }

    // ------------------------------------------------------------------ handles

    record Listen(InetSocketAddress address, long id) {
    }

    static ServerSocketChannel listen(final InetAddress bind) {
        try {
            final ServerSocketChannel s = ServerSocketChannel.open();
            s.bind(new InetSocketAddress(bind, 0), 64);
            s.configureBlocking(false);
            return s;
        } catch (final IOException e) {
            throw new NetTransportException(Reason.SYSTEM, "cannot listen on " + bind + ": " + e.getMessage(), e);
        }
    }

    static void writeHandle(final byte[] handle, final int magic, final InetSocketAddress a, final long id) {
        if (handle == null || handle.length < NetTransport.HANDLE_MAXSIZE) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "listen handle buffer must hold "
                + NetTransport.HANDLE_MAXSIZE + " bytes");
        }
        java.util.Arrays.fill(handle, (byte) 0);
        final byte[] addr = a.getAddress().getAddress();
        ByteBuffer.wrap(handle).putInt(magic).put((byte) 1).put((byte) addr.length).put((byte) 0).put(addr)
            .putShort((short) a.getPort()).putLong(id);
    }

    static Listen readHandle(final byte[] handle, final int magic, final String transport) {
        if (handle == null || handle.length < 23) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "a " + transport + " handle is at least 23 "
                + "bytes");
        }
        final ByteBuffer b = ByteBuffer.wrap(handle);
        final int m = b.getInt();
        if (m != magic) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a " + transport + " handle (magic 0x"
                + Integer.toHexString(m) + ")");
        }
        final int ver = b.get();
        final int len = b.get();
        b.get();
        if (ver != 1 || (len != 4 && len != 16) || 7 + len + 10 > handle.length) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "malformed " + transport + " handle (version "
                + ver + ", address length " + len + ")");
        }
        final byte[] addr = new byte[len];
        b.get(addr);
        final int port = b.getShort() & 0xffff;
        final long id = b.getLong();
        if (port == 0) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "malformed " + transport + " handle (port 0)");
        }
        try {
            return new Listen(new InetSocketAddress(InetAddress.getByAddress(addr), port), id);
        } catch (final UnknownHostException e) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "malformed " + transport + " handle address");
        }
    }

    static SocketChannel startConnect(final InetSocketAddress to) {
        try {
            final SocketChannel ch = SocketChannel.open();
            ch.configureBlocking(false);
            ch.setOption(java.net.StandardSocketOptions.TCP_NODELAY, true);
            ch.connect(to);
            return ch;
        } catch (final IOException e) {
            throw new NetTransportException(Reason.REMOTE, "cannot connect to " + to + ": " + e.getMessage(), e);
        }
    }

    /** True once the connection is up; false while in progress. */
    static boolean finishConnect(final SocketChannel ch, final InetSocketAddress to) {
        try {
            return ch.finishConnect();
        } catch (final IOException e) {
            throw new NetTransportException(Reason.REMOTE, "cannot connect to " + to + ": " + e.getMessage(), e);
        }
    }
}
