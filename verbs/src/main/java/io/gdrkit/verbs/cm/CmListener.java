/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs.cm;

import io.gdrkit.core.auth.Token;
import io.gdrkit.core.net.DeadlineInputStream;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QueuePair;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The passive side: listens on host:port and hands out connection requests (rdma_listen / rdma_get_request).
 *
 * <p>Peers are untrusted. An acceptor thread takes each TCP connection, opens with a CHAL (a fresh nonce), and
 * gives the peer {@link #handshakeTimeout} to send a valid REQ (or INFO) whose authenticator proves the
 * {@link Token} when one is set. At most {@link #maxPending} connections may be in that state at once; more are
 * closed at once. A connection that sends garbage, a field out of range, a wrong authenticator or nothing at all is
 * closed and counted ({@link #protocolErrors}, {@link #lastError}); it never ends {@link #accept} nor affects
 * other clients. Only well-formed, authenticated requests reach {@link #accept}.
 */
public final class CmListener implements AutoCloseable {
    /**
     * Default time a peer has, from TCP accept, to send its whole REQ (one deadline, not per read); also the
     * bound on each later CM wait of the request (the RTU: again one deadline for the whole message).
     */
    public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);
    /** Default cap on connections that have not yet become a request. */
    public static final int DEFAULT_MAX_PENDING = 16;

    private final ServerSocket server;
    private final Token token;
    private final int handshakeMs;
    private final int maxPending;
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicLong protocolErrors = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    /** Connections in their handshake: the oldest silent one makes room when the cap is reached. */
    private final io.gdrkit.core.net.PendingHandshakes inHandshake = new io.gdrkit.core.net.PendingHandshakes();
    private final io.gdrkit.core.net.AcceptBackoff acceptBackoff = new io.gdrkit.core.net.AcceptBackoff();
    private volatile String lastError = "";
    private volatile java.util.function.Supplier<byte[]> info = () -> new byte[0];
    private final BlockingQueue<Request> ready;
    private final Thread acceptor;
    private volatile boolean closed;

    /** Listens with the process's token ({@link Token#fromProcess()}) and the default limits. */
    public CmListener(final InetSocketAddress bind) {
        this(bind, Token.fromProcess(), DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_PENDING);
    }

    /**
     * @param token            what a peer must prove ({@link Token#NONE}: nothing)
     * @param handshakeTimeout time from TCP accept to a complete REQ
     * @param maxPending       connections allowed between TCP accept and {@link #accept} (1..1024)
     */
    public CmListener(final InetSocketAddress bind, final Token token, final Duration handshakeTimeout,
                      final int maxPending) {
        if (maxPending < 1 || maxPending > 1024) {
            throw new IllegalArgumentException("maxPending " + maxPending + " outside 1..1024");
        }
        this.token = token;
        this.handshakeMs = (int) Math.max(1, Math.min(Integer.MAX_VALUE, handshakeTimeout.toMillis()));
        this.maxPending = maxPending;
        this.ready = new ArrayBlockingQueue<>(maxPending);
        try {
            server = new ServerSocket();
            server.setReuseAddress(true);
            server.bind(bind, maxPending);
        } catch (final IOException e) {
            throw new CmException(CmException.Reason.PROTOCOL, "cannot listen on " + bind + ": " + e.getMessage(), e);
        }
        acceptor = Thread.ofPlatform().daemon(true).name("cm-accept-" + server.getLocalPort()).start(this::acceptLoop);
    }

    public InetSocketAddress localAddress() {
        return (InetSocketAddress) server.getLocalSocketAddress();
    }

    /** Service information handed to peers that ask with {@link ConnectionManager#query} (at most 256 bytes). */
    public void info(final byte[] bytes) {
        ConnectionManager.checkPrivateData(bytes);
        final byte[] copy = bytes.clone();
        this.info = () -> copy;
    }

    /**
     * Service information made per authenticated query (for instance a LID the listener assigns to the asking
     * peer); called on a handshake thread, at most 256 bytes.
     */
    public void info(final java.util.function.Supplier<byte[]> perQuery) {
        this.info = perQuery;
    }

    /** Connections closed for a protocol or authentication error, or a handshake timeout. */
    public long protocolErrors() {
        return protocolErrors.get();
    }

    /** Connections between TCP accept and a complete request now. */
    public int pendingConnections() {
        return pending.get();
    }

    /**
     * Connections closed at once because {@link #maxPending} were already pending and none of them was silent (all
     * had started their REQ).
     */
    public long refusedOverCap() {
        return refused.get();
    }

    /**
     * Pending connections that had sent nothing, closed to make room for a newer one when {@link #maxPending} were
     * pending: silent connections churn among themselves and never lock a real client out.
     */
    public long evictedSilent() {
        return inHandshake.evictedSilent();
    }

    /** How accept failures (EMFILE and the like) were met: counted, remembered, backed off. */
    public io.gdrkit.core.net.AcceptBackoff acceptBackoff() {
        return acceptBackoff;
    }

    /** Marks its connection as having spoken at the first byte read. */
    private static final class SpokeInputStream extends java.io.FilterInputStream {
        private final io.gdrkit.core.net.PendingHandshakes.Entry p;

        SpokeInputStream(final java.io.InputStream in, final io.gdrkit.core.net.PendingHandshakes.Entry p) {
            super(in);
            this.p = p;
        }

        @Override
        public int read() throws IOException {
            final int b = super.read();
            if (b >= 0) {
                p.spoke();
            }
            return b;
        }

        @Override
        public int read(final byte[] b, final int off, final int len) throws IOException {
            final int n = super.read(b, off, len);
            if (n > 0) {
                p.spoke();
            }
            return n;
        }
    }

    /** What the last bad connection did wrong ("" if none). */
    public String lastError() {
        return lastError;
    }

    private void acceptLoop() {
        while (!closed) {
            final Socket s;
            try {
                s = server.accept();
                acceptBackoff.succeeded();
            } catch (final IOException e) {
                if (closed) {
                    return;
                }
                // out of descriptors (EMFILE) fails at once while the connection waits in the backlog: back off
                // instead of spinning; a client that reset during accept affects nobody else
                acceptBackoff.failed(e);
                if (!acceptBackoff.pause()) {
                    return;
                }
                continue;
            }
            if (pending.get() >= maxPending && !inHandshake.evictOldestSilent()) {
                refused.incrementAndGet();
                ConnectionManager.close(s);
                continue;
            }
            pending.incrementAndGet();
            final io.gdrkit.core.net.PendingHandshakes.Entry p = inHandshake.add(s);
            Thread.ofVirtual().name("cm-handshake").start(() -> handshake(s, p));
        }
    }

    /** Runs one connection's CHAL / REQ exchange; only a valid request reaches the queue. */
    private void handshake(final Socket s, final io.gdrkit.core.net.PendingHandshakes.Entry p) {
        boolean queued = false;
        final InetSocketAddress peer = (InetSocketAddress) s.getRemoteSocketAddress();
        try {
            s.setTcpNoDelay(true);
            // one deadline from accept for the whole handshake: a peer dripping a byte at a time cannot hold it
            final DeadlineInputStream din = new DeadlineInputStream(s, Duration.ofMillis(handshakeMs));
            final DataInputStream in = new DataInputStream(new SpokeInputStream(din, p));
            final DataOutputStream out = new DataOutputStream(s.getOutputStream());
            final byte[] nonce = Token.nonce();
            new CmMessage(CmMessage.CHAL, 0, 0, 0, 0, nonce).write(out);
            final CmMessage m = CmMessage.read(in);
            if (m.type() != CmMessage.REQ && m.type() != CmMessage.INFO) {
                throw new CmException(CmException.Reason.PROTOCOL, "expected REQ or INFO, got "
                    + CmMessage.typeName(m.type()), null);
            }
            if (!m.verify(token, nonce)) {
                reject(out, "authentication failed: the token does not match");
                throw new CmException(CmException.Reason.PROTOCOL, CmMessage.typeName(m.type())
                    + " failed authentication (wrong or missing token)", null);
            }
            if (m.type() == CmMessage.INFO) {
                final byte[] answer = info.get();
                ConnectionManager.checkPrivateData(answer);
                new CmMessage(CmMessage.INFO, 0, 0, 0, 0, answer).write(out);
                return;
            }
            din.clear(); // queued, the request's later waits have their own bounds (see Request)
            s.setSoTimeout(handshakeMs);
            final Request r = new Request(s, in, din, out, m, handshakeMs);
            if (closed || !ready.offer(r)) {
                reject(out, "listener busy (" + maxPending + " requests waiting)");
                throw new CmException(CmException.Reason.PROTOCOL, "request queue full", null);
            }
            queued = true;
        } catch (final SocketTimeoutException e) {
            error(peer, "no complete REQ within the handshake timeout (" + handshakeMs + " ms from accept, one "
                + "deadline for the whole handshake)");
        } catch (final CmException e) {
            error(peer, e.getMessage());
        } catch (final IOException | RuntimeException e) {
            if (!p.evicted()) { // an evicted one is counted as such: closing it made the read fail
                error(peer, e.toString());
            }
        } finally {
            inHandshake.remove(p);
            pending.decrementAndGet();
            if (!queued) {
                ConnectionManager.close(s);
            }
        }
    }

    private void error(final InetSocketAddress peer, final String what) {
        protocolErrors.incrementAndGet();
        lastError = peer + ": " + what;
    }

    private static void reject(final DataOutputStream out, final String reason) {
        try {
            new CmMessage(CmMessage.REJ, 0, 0, 0, 0, reason.getBytes(StandardCharsets.UTF_8)).write(out);
        } catch (final IOException ignored) {
            // the peer sees the connection close instead
        }
    }

    /** Waits for the next valid, authenticated REQ; throws TIMEOUT when none comes within {@code timeout}. */
    public Request accept(final Duration timeout) {
        final long ms = Math.max(1, timeout.toMillis());
        final Request r;
        try {
            r = ready.poll(ms, TimeUnit.MILLISECONDS);
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CmException(CmException.Reason.TIMEOUT, "interrupted waiting for a connection request on "
                + localAddress(), e);
        }
        if (r == null) {
            throw new CmException(CmException.Reason.TIMEOUT, "no connection request on " + localAddress()
                + " within " + ms + " ms" + (lastError.isEmpty() ? "" : " (last bad connection: " + lastError + ")"),
                null);
        }
        return r;
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (final IOException ignored) {
            // nothing to do: the port is released either way
        }
        Request r;
        while ((r = ready.poll()) != null) {
            r.reject("listener closed");
        }
        try {
            acceptor.join(1000);
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A connection request: what the active side offered, to be accepted with a QP or rejected. */
    public static final class Request {
        private final Socket socket;
        private final DataInputStream in;
        private final DeadlineInputStream deadline;
        private final DataOutputStream out;
        private final CmMessage req;
        private final int timeoutMs;

        Request(final Socket socket, final DataInputStream in, final DeadlineInputStream deadline,
                final DataOutputStream out, final CmMessage req, final int timeoutMs) {
            this.socket = socket;
            this.in = in;
            this.deadline = deadline;
            this.out = out;
            this.req = req;
            this.timeoutMs = timeoutMs;
        }

        public int remoteQpn() {
            return req.qpn();
        }

        public int remoteLid() {
            return req.lid();
        }

        public int remoteMtu() {
            return req.mtu();
        }

        /** The requester's address. */
        public InetSocketAddress remoteAddress() {
            return (InetSocketAddress) socket.getRemoteSocketAddress();
        }

        public byte[] privateData() {
            return req.privateData().clone();
        }

        /** Brings {@code qp} to RTS towards the requester, replies, and waits for its RTU. */
        public CmConnection accept(final QueuePair qp, final int localLid, final QpAttr template,
                                   final byte[] privateData) {
            ConnectionManager.checkPrivateData(privateData);
            try {
                final int psn = ConnectionManager.newPsn();
                final int mtu = Math.min(ConnectionManager.mtuBytes(template), req.mtu());
                ConnectionManager.bringUp(qp, template, req, psn, mtu);
                new CmMessage(CmMessage.REP, qp.qpNum(), psn, localLid, mtu, privateData).write(out);
                deadline.within(Duration.ofMillis(timeoutMs)); // the whole RTU within the timeout, not per byte
                ConnectionManager.await(in, CmMessage.RTU, "RTU", (InetSocketAddress) socket.getRemoteSocketAddress(),
                    timeoutMs);
                deadline.clear();
                socket.setSoTimeout(timeoutMs);
                return new CmConnection(socket, in, out, qp, req, timeoutMs);
            } catch (final IOException e) {
                ConnectionManager.close(socket);
                throw new CmException(CmException.Reason.PROTOCOL, "accept failed: " + e, e);
            } catch (final RuntimeException e) {
                ConnectionManager.close(socket);
                throw e;
            }
        }

        /** Refuses the request; the active side gets REJECTED with {@code reason}. */
        public void reject(final String reason) {
            try {
                new CmMessage(CmMessage.REJ, 0, 0, 0, 0, truncate(reason)).write(out);
            } catch (final IOException ignored) {
                // the requester will see the connection close instead
            } finally {
                ConnectionManager.close(socket);
            }
        }

        private static byte[] truncate(final String reason) {
            final byte[] b = reason.getBytes(StandardCharsets.UTF_8);
            return b.length <= CmMessage.MAX_PRIVATE_DATA ? b : java.util.Arrays.copyOf(b, CmMessage.MAX_PRIVATE_DATA);
        }
    }
}
