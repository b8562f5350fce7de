package io.gdrkit.verbs.cm;

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

/** The passive side: listens on host:port and hands out connection requests (rdma_listen / rdma_get_request). */
public final class CmListener implements AutoCloseable {
    private final ServerSocket server;

    public CmListener(final InetSocketAddress bind) {
        try {
            server = new ServerSocket();
            server.setReuseAddress(true);
            server.bind(bind);
        } catch (final IOException e) {
            throw new CmException(CmException.Reason.PROTOCOL, "cannot listen on " + bind + ": " + e.getMessage(), e);
        }
    }

    public InetSocketAddress localAddress() {
        return (InetSocketAddress) server.getLocalSocketAddress();
    }

    /** Waits for the next REQ; throws TIMEOUT when none comes within {@code timeout}. */
    public Request accept(final Duration timeout) {
        final int timeoutMs = (int) Math.max(1, timeout.toMillis());
        Socket s = null;
        try {
            server.setSoTimeout(timeoutMs);
            s = server.accept();
            s.setSoTimeout(timeoutMs);
            s.setTcpNoDelay(true);
            final DataInputStream in = new DataInputStream(s.getInputStream());
            final DataOutputStream out = new DataOutputStream(s.getOutputStream());
            final CmMessage req = ConnectionManager.await(in, CmMessage.REQ, "REQ",
                (InetSocketAddress) s.getRemoteSocketAddress(), timeoutMs);
            return new Request(s, in, out, req, timeoutMs);
        } catch (final SocketTimeoutException e) {
            if (s != null) {
                ConnectionManager.close(s);
            }
            throw new CmException(CmException.Reason.TIMEOUT, "no connection request on " + localAddress()
                + " within " + timeoutMs + " ms", e);
        } catch (final IOException e) {
            if (s != null) {
                ConnectionManager.close(s);
            }
            throw new CmException(CmException.Reason.PROTOCOL, "accept on " + localAddress() + ": " + e, e);
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (final IOException ignored) {
            // nothing to do: the port is released either way
        }
    }

    /** A connection request: what the active side offered, to be accepted with a QP or rejected. */
    public static final class Request {
        private final Socket socket;
        private final DataInputStream in;
        private final DataOutputStream out;
        private final CmMessage req;
        private final int timeoutMs;

        Request(final Socket socket, final DataInputStream in, final DataOutputStream out, final CmMessage req,
                final int timeoutMs) {
            this.socket = socket;
            this.in = in;
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
                ConnectionManager.await(in, CmMessage.RTU, "RTU", (InetSocketAddress) socket.getRemoteSocketAddress(),
                    timeoutMs);
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
                new CmMessage(CmMessage.REJ, 0, 0, 0, 0, reason.getBytes(StandardCharsets.UTF_8)).write(out);
            } catch (final IOException ignored) {
                // the requester will see the connection close instead
            } finally {
                ConnectionManager.close(socket);
            }
        }
    }
}
