/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.core.auth.Token;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.cm.CmConnection;
import io.gdrkit.verbs.cm.CmException;
import io.gdrkit.verbs.cm.CmListener;
import io.gdrkit.verbs.cm.ConnectionManager;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * perf's {@code -R} on a pair in this JVM: each QP pair meets through gdrkit's connection manager
 * ({@code io.gdrkit.verbs.cm}) on a loopback TCP port, as perftest's -R meets through rdma_cm. Side b listens, side
 * a connects; the CM takes both QPs through INIT, RTR and RTS. The REQ's private data carries a's buffer address
 * and rkey, the REP's carries b's, and each side checks what it received against the peer's MR: a mismatch ends
 * the run with both values named.
 *
 * <pre>
 * private data (big-endian, 16 bytes):  buffer address (u64) | rkey (u32) | QP index (u32)
 * </pre>
 */
public final class CmConnector implements Loopback.Connector, AutoCloseable {
    static final int PRIVATE_DATA = 16;
    private final CmListener listener;
    private final Token token;
    private final Duration timeout;
    private final List<CmConnection> connections = new ArrayList<>();
    private final StringBuilder evidence = new StringBuilder();

    /** Listens on 127.0.0.1, any free port, for this pair's connections. */
    public CmConnector(final Token token, final Duration timeout) {
        this.token = token;
        this.timeout = timeout;
        this.listener = new CmListener(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), token, timeout, 4);
    }

    static byte[] privateData(final long addr, final int rkey, final int index) {
        return ByteBuffer.allocate(PRIVATE_DATA).putLong(addr).putInt(rkey).putInt(index).array();
    }

    @Override
    public void connect(final Loopback.Side a, final Loopback.Side b, final int index, final QpAttr template) {
        final int lidA = Loopback.context(a).queryPort(1).lid();
        final int lidB = Loopback.context(b).queryPort(1).lid();
        final CompletableFuture<CmConnection> passive = CompletableFuture.supplyAsync(() -> {
            final CmListener.Request req = listener.accept(timeout);
            check("REQ", req.privateData(), a, index);
            return req.accept(b.qps[index], lidB, template, privateData(b.mr.address(), b.mr.rkey(), index));
        });
        final CmConnection active;
        try {
            active = ConnectionManager.connect(listener.localAddress(), a.qps[index], lidA, template,
                privateData(a.mr.address(), a.mr.rkey(), index), timeout, token);
        } catch (final RuntimeException e) {
            passive.cancel(true);
            throw e;
        }
        final CmConnection accepted;
        try {
            accepted = passive.get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (final TimeoutException e) {
            throw new CmException(CmException.Reason.TIMEOUT, "QP pair " + index + ": the passive side did not finish "
                + "accepting within " + timeout.toMillis() + " ms", e);
        } catch (final ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the passive side of QP pair " + index, e);
        }
        connections.add(active);
        connections.add(accepted);
        check("REP", active.remotePrivateData(), b, index);
        if (index == 0) {
            evidence.append("connection manager ").append(listener.localAddress().getAddress().getHostAddress())
                .append(':').append(listener.localAddress().getPort()).append(": ");
        }
        evidence.append(index == 0 ? "" : "; ").append("QP ").append(a.qps[index].qpNum()).append(" <-> ")
            .append(b.qps[index].qpNum()).append(" (REQ carried a's buffer 0x").append(Long.toHexString(a.mr.address()))
            .append(" rkey 0x").append(Integer.toHexString(a.mr.rkey())).append(", REP b's buffer 0x")
            .append(Long.toHexString(b.mr.address())).append(" rkey 0x").append(Integer.toHexString(b.mr.rkey()))
            .append(", both checked against the MRs)");
    }

    /** The received private data must name the sender's MR and this QP pair. */
    private static void check(final String what, final byte[] data, final Loopback.Side sender, final int index) {
        if (data.length != PRIVATE_DATA) {
            throw new CmException(CmException.Reason.PROTOCOL, what + " private data of " + data.length
                + " bytes, not " + PRIVATE_DATA, null);
        }
        final ByteBuffer bb = ByteBuffer.wrap(data);
        final long addr = bb.getLong();
        final int rkey = bb.getInt();
        final int idx = bb.getInt();
        if (addr != sender.mr.address() || rkey != sender.mr.rkey() || idx != index) {
            throw new CmException(CmException.Reason.PROTOCOL, what + " private data names buffer 0x"
                + Long.toHexString(addr) + " rkey 0x" + Integer.toHexString(rkey) + " QP pair " + idx + ", not 0x"
                + Long.toHexString(sender.mr.address()) + " rkey 0x" + Integer.toHexString(sender.mr.rkey())
                + " QP pair " + index, null);
        }
    }

    /** What each connection exchanged. */
    public String evidence() {
        return evidence.toString();
    }

    /**
     * Disconnects every pair (the active end's DREQ, the passive end's DREP, both QPs to ERR) while the QPs still
     * exist: call it before the loopback closes. Idempotent; a pair whose QPs are already gone is only closed.
     */
    @Override
    public void close() {
        for (int i = 0; i + 1 < connections.size(); i += 2) {
            final CmConnection active = connections.get(i);
            final CmConnection passive = connections.get(i + 1);
            final Thread t = Thread.ofVirtual().start(() -> quietly(passive::awaitDisconnect));
            quietly(active::disconnect);
            try {
                t.join(timeout.toMillis() + 1000);
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            quietly(passive::close);
        }
        connections.clear();
        listener.close();
    }

    private static void quietly(final Runnable r) {
        try {
            r.run();
        } catch (final RuntimeException e) {
            // the QPs are destroyed already (the loopback closed first): the sockets are closed either way
        }
    }
}
