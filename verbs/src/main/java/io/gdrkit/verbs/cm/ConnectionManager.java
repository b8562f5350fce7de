/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs.cm;

import io.gdrkit.core.auth.Token;
import io.gdrkit.core.net.DeadlineInputStream;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QueuePair;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.security.SecureRandom;
import java.time.Duration;

/**
 * An rdma_cm-like rendezvous over TCP: the active side {@link #connect}s to a {@link CmListener}, the two
 * exchange QP number, start PSN, LID, path MTU and private data (REQ, REP, RTU), and each moves its QP through
 * INIT and RTR to RTS. The smaller of the two MTUs is used. Every wait is bounded by the timeout.
 */
public final class ConnectionManager {
    private static final SecureRandom RANDOM = new SecureRandom();

    private ConnectionManager() {
    }

    /** Parses "host:port". */
    public static InetSocketAddress address(final String hostPort) {
        final int colon = hostPort.lastIndexOf(':');
        if (colon <= 0 || colon == hostPort.length() - 1) {
            throw new IllegalArgumentException("endpoint '" + hostPort + "' is not host:port");
        }
        final int port;
        try {
            port = Integer.parseInt(hostPort.substring(colon + 1));
        } catch (final NumberFormatException e) {
            throw new IllegalArgumentException("endpoint '" + hostPort + "': port is not a number", e);
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("endpoint '" + hostPort + "': port outside 0..65535");
        }
        return new InetSocketAddress(hostPort.substring(0, colon), port);
    }

    /**
     * Connects {@code qp} (in RESET) to the listener at {@code remote}.
     *
     * @param template attributes for the QP (access, timeout, retry counts, rd_atomic, MTU); peer fields filled in
     */
    public static CmConnection connect(final InetSocketAddress remote, final QueuePair qp, final int localLid,
                                       final QpAttr template, final byte[] privateData, final Duration timeout) {
        return connect(remote, qp, localLid, template, privateData, timeout, Token.fromProcess());
    }

    /**
     * As {@link #connect(InetSocketAddress, QueuePair, int, QpAttr, byte[], Duration)}, proving {@code token} to
     * the listener.
     */
    public static CmConnection connect(final InetSocketAddress remote, final QueuePair qp, final int localLid,
                                       final QpAttr template, final byte[] privateData, final Duration timeout,
                                       final Token token) {
        checkPrivateData(privateData);
        final int timeoutMs = (int) Math.max(1, timeout.toMillis());
        final Socket socket = new Socket();
        try {
            final DeadlineInputStream din = open(socket, remote, timeoutMs);
            final DataInputStream in = new DataInputStream(din);
            final byte[] nonce = await(in, CmMessage.CHAL, "CHAL", remote, timeoutMs).privateData();
            final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            final int psn = RANDOM.nextInt() & 0xFFFFFF;
            final int mtu = mtuBytes(template);
            new CmMessage(CmMessage.REQ, qp.qpNum(), psn, localLid, mtu, privateData).signed(token, nonce).write(out);
            final CmMessage rep = await(in, CmMessage.REP, "REP", remote, timeoutMs);
            bringUp(qp, template, rep, psn, Math.min(mtu, rep.mtu()));
            new CmMessage(CmMessage.RTU, qp.qpNum(), psn, localLid, mtu, new byte[0]).write(out);
            // the handshake is over, so its overall deadline ends: later messages (DREQ) wait per read (the socket
            // timeout)
            din.clear();
            socket.setSoTimeout(timeoutMs);
            return new CmConnection(socket, in, out, qp, rep, timeoutMs);
        } catch (final IOException e) {
            close(socket);
            throw new CmException(CmException.Reason.PROTOCOL, "exchange with " + remote + " failed: " + e, e);
        } catch (final RuntimeException e) {
            close(socket);
            throw e;
        }
    }

    /**
     * Asks the listener at {@code remote} for its service information ({@link CmListener#info}), proving
     * {@code token}: how a peer learns names (a shared-memory directory) over the authenticated channel.
     */
    public static byte[] query(final InetSocketAddress remote, final Duration timeout, final Token token) {
        final int timeoutMs = (int) Math.max(1, timeout.toMillis());
        final Socket socket = new Socket();
        try {
            final DataInputStream in = new DataInputStream(open(socket, remote, timeoutMs));
            final byte[] nonce = await(in, CmMessage.CHAL, "CHAL", remote, timeoutMs).privateData();
            final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            new CmMessage(CmMessage.INFO, 0, 0, 0, 0, new byte[0]).signed(token, nonce).write(out);
            return await(in, CmMessage.INFO, "INFO", remote, timeoutMs).privateData();
        } catch (final IOException e) {
            throw new CmException(CmException.Reason.PROTOCOL, "INFO exchange with " + remote + " failed: " + e, e);
        } finally {
            close(socket);
        }
    }

    /**
     * TCP connect; returns the socket's input under one deadline, {@code timeoutMs} from now, for the whole
     * handshake (CHAL, then REP or INFO): a listener that drips its answer a byte at a time cannot hold the
     * connecting side longer than that, as a timeout per read would let it.
     */
    private static DeadlineInputStream open(final Socket socket, final InetSocketAddress remote, final int timeoutMs)
        throws IOException {
        try {
            try {
                socket.connect(remote, timeoutMs);
            } catch (final ConnectException e) {
                throw new CmException(CmException.Reason.REFUSED, "nothing listens at " + remote, e);
            } catch (final NoRouteToHostException e) {
                throw new CmException(CmException.Reason.UNREACHABLE, "no route to " + remote, e);
            } catch (final SocketTimeoutException e) {
                throw new CmException(CmException.Reason.UNREACHABLE, "no TCP answer from " + remote + " within "
                    + timeoutMs + " ms", e);
            } catch (final IOException e) {
                throw new CmException(CmException.Reason.UNREACHABLE, remote + ": " + e.getMessage(), e);
            }
            socket.setTcpNoDelay(true);
            return new DeadlineInputStream(socket, Duration.ofMillis(timeoutMs));
        } catch (final IOException | RuntimeException e) {
            close(socket);
            throw e;
        }
    }

    static CmMessage await(final DataInputStream in, final int type, final String what,
                           final InetSocketAddress peer, final int timeoutMs) throws IOException {
        final CmMessage m;
        try {
            m = CmMessage.read(in);
        } catch (final SocketTimeoutException e) {
            throw new CmException(CmException.Reason.TIMEOUT, "no whole " + what + " from " + peer + " within the "
                + "handshake's " + timeoutMs + " ms", e);
        }
        if (m.type() == CmMessage.REJ) {
            throw new CmException(CmException.Reason.REJECTED, peer + " rejected: "
                + new String(m.privateData(), java.nio.charset.StandardCharsets.UTF_8), null);
        }
        if (m.type() != type) {
            throw new CmException(CmException.Reason.PROTOCOL, "expected " + what + " from " + peer + ", got "
                + CmMessage.typeName(m.type()), null);
        }
        return m;
    }

    static int mtuBytes(final QpAttr template) {
        return template.softwareMtu != 0 ? template.softwareMtu : Mtu.toBytes(template.pathMtu);
    }

    /** RESET -> INIT -> RTR -> RTS towards the peer described by {@code peer}, at the agreed MTU. */
    static void bringUp(final QueuePair qp, final QpAttr template, final CmMessage peer, final int sqPsn,
                        final int mtuBytes) {
        final QpAttr a = template.copy();
        final int e = Mtu.fromBytes(mtuBytes);
        if (e > 0) {
            a.pathMtu = e;
            a.softwareMtu = 0;
        } else {
            a.pathMtu = Mtu.MTU_4096;
            a.softwareMtu = mtuBytes;
        }
        QpBringUp.toRts(qp, peer.qpn(), peer.lid(), sqPsn, peer.psn(), a);
    }

    static void checkPrivateData(final byte[] data) {
        if (data == null || data.length > CmMessage.MAX_PRIVATE_DATA) {
            throw new IllegalArgumentException("private data must be 0.." + CmMessage.MAX_PRIVATE_DATA + " bytes");
        }
    }

    static int newPsn() {
        return RANDOM.nextInt() & 0xFFFFFF;
    }

    static void close(final Socket s) {
        try {
            s.close();
        } catch (final IOException ignored) {
            // closing is best effort; the connection is being abandoned anyway
        }
    }
}
