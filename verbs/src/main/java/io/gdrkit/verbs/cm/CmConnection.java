/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs.cm;

import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketTimeoutException;

/** An established connection: the peer's parameters and private data, and a clean disconnect. */
public final class CmConnection implements AutoCloseable {
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final QueuePair qp;
    private final CmMessage peer;
    private final int timeoutMs;
    private boolean disconnected;

    CmConnection(final Socket socket, final DataInputStream in, final DataOutputStream out, final QueuePair qp,
                 final CmMessage peer, final int timeoutMs) {
        this.socket = socket;
        this.in = in;
        this.out = out;
        this.qp = qp;
        this.peer = peer;
        this.timeoutMs = timeoutMs;
    }

    public QueuePair qp() {
        return qp;
    }

    public int remoteQpn() {
        return peer.qpn();
    }

    public int remoteLid() {
        return peer.lid();
    }

    /** The path MTU the peer offered, in bytes. */
    public int remoteMtu() {
        return peer.mtu();
    }

    public byte[] remotePrivateData() {
        return peer.privateData().clone();
    }

    /**
     * Disconnects (rdma_disconnect): sends DREQ, waits for the peer's DREP, and moves the QP to ERR so its
     * outstanding work flushes. Waiting for the peer is bounded by the connection's timeout.
     */
    public void disconnect() {
        if (disconnected) {
            return;
        }
        disconnected = true;
        try {
            new CmMessage(CmMessage.DREQ, qp.qpNum(), 0, 0, 0, new byte[0]).write(out);
            final CmMessage m = CmMessage.read(in);
            if (m.type() != CmMessage.DREP && m.type() != CmMessage.DREQ) {
                throw new CmException(CmException.Reason.PROTOCOL, "expected DREP, got "
                    + CmMessage.typeName(m.type()), null);
            }
        } catch (final SocketTimeoutException e) {
            throw new CmException(CmException.Reason.TIMEOUT, "no DREP within " + timeoutMs + " ms", e);
        } catch (final IOException e) {
            // the peer went away: the disconnect is complete from our side
        } finally {
            toError();
            ConnectionManager.close(socket);
        }
    }

    /**
     * Waits until the peer disconnects (its DREQ, or the TCP connection closing), answers DREP and moves the
     * QP to ERR.
     */
    public void awaitDisconnect() {
        if (disconnected) {
            return;
        }
        try {
            final CmMessage m = CmMessage.read(in);
            if (m.type() == CmMessage.DREQ) {
                new CmMessage(CmMessage.DREP, qp.qpNum(), 0, 0, 0, new byte[0]).write(out);
            }
        } catch (final SocketTimeoutException e) {
            throw new CmException(CmException.Reason.TIMEOUT, "peer did not disconnect within " + timeoutMs
                + " ms", e);
        } catch (final IOException | CmException e) {
            // closed without DREQ: treat as disconnected
        }
        disconnected = true;
        toError();
        ConnectionManager.close(socket);
    }

    public boolean isDisconnected() {
        return disconnected;
    }

    private void toError() {
        if (qp.state() != QpState.ERR && qp.state() != QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.ERR), QpAttrMask.STATE);
        }
    }

    @Override
    public void close() {
        if (!disconnected) {
            disconnect();
        }
    }
}
