/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.cm.CmConnection;
import io.gdrkit.verbs.cm.CmException;
import io.gdrkit.verbs.cm.CmListener;
import io.gdrkit.verbs.cm.ConnectionManager;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WrOpcode;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The TCP rendezvous: exchange, RTS on both sides, data over the result, disconnect, and each failure. */
class ConnectionManagerTest {
    private static final Duration T = Duration.ofSeconds(10);

    @Test
    void connectsExchangesPrivateDataAndDisconnects() throws Exception {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 16);
             CmListener listener = new CmListener(new InetSocketAddress("127.0.0.1", 0))) {
            final QueuePair qa = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final QueuePair qb = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, f.b.rcq));
            final byte[] mrInfo = ByteBuffer.allocate(12).putLong(f.b.mr.address()).putInt(f.b.mr.rkey()).array();
            final CompletableFuture<CmConnection> server = CompletableFuture.supplyAsync(() -> {
                final CmListener.Request req = listener.accept(T);
                assertArrayEquals("hello".getBytes(), req.privateData());
                assertEquals(qa.qpNum(), req.remoteQpn());
                return req.accept(qb, f.b.dev.lid(), QpBringUp.rcDefaults(), mrInfo);
            });
            final CmConnection client = ConnectionManager.connect(listener.localAddress(), qa, f.a.dev.lid(),
                QpBringUp.rcDefaults(), "hello".getBytes(), T);
            final CmConnection accepted = server.get(10, TimeUnit.SECONDS);
            assertEquals(QpState.RTS, qa.state());
            assertEquals(QpState.RTS, qb.state());
            assertEquals(qb.qpNum(), client.remoteQpn());
            assertEquals(qb.qpNum(), qa.queryQp().destQpNum);
            assertEquals(qa.qpNum(), qb.queryQp().destQpNum);
            final ByteBuffer info = ByteBuffer.wrap(client.remotePrivateData());
            final long addr = info.getLong();
            final int rkey = info.getInt();
            Fixture.fill(f.a.buf.asSlice(0, 5000), 8);
            qa.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 5000).remote(addr + 100, rkey));
            f.awaitSuccess(f.a.scq, "WRITE over the CM connection");
            Fixture.assertBytes(f.a.buf.asSlice(0, 5000), f.b.buf.asSlice(100, 5000), "data");
            final CompletableFuture<Void> peerSide = CompletableFuture.runAsync(accepted::awaitDisconnect);
            client.disconnect();
            peerSide.get(10, TimeUnit.SECONDS);
            assertTrue(client.isDisconnected() && accepted.isDisconnected());
            assertEquals(QpState.ERR, qa.state());
            assertEquals(QpState.ERR, qb.state());
        }
    }

    @Test
    void refusedWhenNothingListens() throws Exception {
        final int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        try (Fixture f = new Fixture(new SoftNicContext(), 4096)) {
            final QueuePair q = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final CmException e = assertThrows(CmException.class, () -> ConnectionManager.connect(
                new InetSocketAddress("127.0.0.1", port), q, 1, QpBringUp.rcDefaults(), new byte[0], T));
            assertEquals(CmException.Reason.REFUSED, e.reason(), e.getMessage());
            assertEquals(QpState.RESET, q.state(), "a failed connect leaves the QP alone");
        }
    }

    @Test
    void timesOutWhenThePeerNeverAnswers() throws Exception {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096);
             ServerSocket silent = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            final QueuePair q = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final CmException e = assertThrows(CmException.class, () -> ConnectionManager.connect(
                new InetSocketAddress("127.0.0.1", silent.getLocalPort()), q, 1, QpBringUp.rcDefaults(),
                new byte[0], Duration.ofMillis(300)));
            assertEquals(CmException.Reason.TIMEOUT, e.reason(), e.getMessage());
            assertTrue(e.getMessage().contains("CHAL"), e.getMessage()); // the listener opens with a challenge
        }
    }

    @Test
    void rejectedAndBadInput() throws Exception {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096);
             CmListener listener = new CmListener(new InetSocketAddress("127.0.0.1", 0))) {
            final QueuePair q = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            CompletableFuture.runAsync(() -> listener.accept(T).reject("no resources"));
            final CmException e = assertThrows(CmException.class, () -> ConnectionManager.connect(
                listener.localAddress(), q, 1, QpBringUp.rcDefaults(), new byte[0], T));
            assertEquals(CmException.Reason.REJECTED, e.reason());
            assertTrue(e.getMessage().contains("no resources"), e.getMessage());
            final CmException none = assertThrows(CmException.class, () -> listener.accept(Duration.ofMillis(100)));
            assertEquals(CmException.Reason.TIMEOUT, none.reason());
            assertThrows(IllegalArgumentException.class, () -> ConnectionManager.address("nohost"));
            assertThrows(IllegalArgumentException.class, () -> ConnectionManager.address("h:99999"));
            assertThrows(IllegalArgumentException.class, () -> ConnectionManager.connect(listener.localAddress(),
                q, 1, QpBringUp.rcDefaults(), new byte[257], T));
        }
    }
}
