/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.gdrkit.core.agent.NanoClock;
import io.gdrkit.softnic.fabric.FaultInjector;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Two TCP fabrics on 127.0.0.1 in one JVM, one software NIC each, RC QPs across them. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpFabricTest {
    private static final int QPS = 4;
    private static final int BIG = 16 << 20;

    /** Two NICs joined by TCP; waiting progresses both (each driver is polled by the test thread). */
    static final class Pair implements AutoCloseable {
        final TcpFabric fa;
        final TcpFabric fb;
        final SoftNicDriver da;
        final SoftNicDriver db;
        final Side a;
        final Side b;
        final Arena arena = Arena.ofShared();

        Pair(final int connections, final LinkHook hookA, final LinkHook hookB, final long bufBytes) {
            final InetSocketAddress lo = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
            fa = new TcpFabric(lo, 4 << 20, hookA, true, connections);
            fb = new TcpFabric(lo, 4 << 20, hookB, true, connections);
            da = SoftNicDriver.launch(new SoftNicContext().linkCrc(true), fa);
            db = SoftNicDriver.launch(new SoftNicContext().linkCrc(true), fb);
            a = new Side(da.addDevice("tcp-a", 1), arena, bufBytes);
            b = new Side(db.addDevice("tcp-b", 2), arena, bufBytes);
            // only a knows b's address: b learns a's LID from the hello and answers over the same connections
            fa.connect(2, fb.localAddress());
        }

        void connect(final QueuePair qa, final QueuePair qb, final int i, final QpAttr attr) {
            QpBringUp.toRts(qa, qb.qpNum(), 2, 100 + i, 900 + i, attr);
            QpBringUp.toRts(qb, qa.qpNum(), 1, 900 + i, 100 + i, attr);
        }

        WorkCompletion await(final CompletionQueue cq, final String what) {
            return TcpFabricTest.await(cq, da, db, what);
        }

        WorkCompletion awaitSuccess(final CompletionQueue cq, final String what) {
            final WorkCompletion wc = await(cq, what);
            assertEquals(WcStatus.SUCCESS, wc.status, () -> what + ": " + wc);
            return wc;
        }

        @Override
        public void close() {
            da.close();
            db.close();
            arena.close();
        }
    }

    /** The next completion on {@code cq}, progressing both drivers, within 30 s (else a failure naming what). */
    static WorkCompletion await(final CompletionQueue cq, final SoftNicDriver da, final SoftNicDriver db,
                                final String what) {
        final WorkCompletion[] wc = {new WorkCompletion()};
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > deadline) {
                fail("timed out after 30 s waiting for " + what);
            }
            da.progress();
            db.progress();
        }
        final WorkCompletion copy = new WorkCompletion();
        copy.copyFrom(wc[0]);
        return copy;
    }

    static final class Side {
        final SoftDevice dev;
        final VerbsContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final MemorySegment buf;
        final MemoryRegion mr;

        Side(final SoftDevice dev, final Arena arena, final long bufBytes) {
            this.dev = dev;
            ctx = dev.open();
            pd = ctx.allocPd();
            cq = ctx.createCq(1024);
            buf = arena.allocate(bufBytes, 4096);
            mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
        }

        QueuePair qp() {
            return pd.createQp(new QpInitAttr().cqs(cq, cq));
        }
    }

    @Test
    void aQpConnectedToItselfWorksWithoutASocket() {
        // NCCL's flush QP is connected to itself: its packets go to the port's own LID
        try (Pair p = new Pair(1, null, null, 1 << 20)) {
            final QueuePair qp = p.a.qp();
            QpBringUp.toRts(qp, qp.qpNum(), 1, 5, 5, QpBringUp.rcDefaults());
            for (int i = 0; i < 4096; i++) {
                p.a.buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
            }
            final SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.RDMA_READ).wrId(77)
                .flags(SendFlags.SIGNALED).sge(p.a.mr, 8192, 4096).remote(p.a.mr.address(), p.a.mr.rkey());
            qp.postSend(wr);
            final WorkCompletion wc = p.await(p.a.cq, "the loopback READ");
            assertEquals(WcStatus.SUCCESS, wc.status, wc.toString());
            assertEquals(77, wc.wrId);
            for (int i = 0; i < 4096; i++) {
                assertEquals((byte) (i * 7 + 3), p.a.buf.get(ValueLayout.JAVA_BYTE, 8192 + i), "byte " + i);
            }
            qp.close();
        }
    }

    @Test
    void writeReadSendAtomicByteExactAt64KiBMtuOverTwoConnections() {
        // a: [0,16M) WRITE source, [16M,32M) READ target, [32M,+4M) SEND source, [48M] atomic results
        // b: [0,16M) WRITE target, [16M,32M) READ source, [32M,+4M) RECV target, [48M] atomic target
        try (Pair p = new Pair(2, null, null, 3L * BIG + 4096)) {
            final QpAttr attr = QpBringUp.rcDefaults().softwareMtu(65536);
            final QueuePair[] qa = new QueuePair[QPS];
            final QueuePair[] qb = new QueuePair[QPS];
            for (int i = 0; i < QPS; i++) {
                qa[i] = p.a.qp();
                qb[i] = p.b.qp();
                p.connect(qa[i], qb[i], i, attr);
            }
            assertEquals(65536, qa[0].queryQp().softwareMtu);
            final int send = 4 << 20;
            Fixture.fill(p.a.buf.asSlice(0, BIG), 1);
            Fixture.fill(p.b.buf.asSlice(BIG, BIG), 2);
            Fixture.fill(p.a.buf.asSlice(2L * BIG, send), 3);
            final long atomicAt = 3L * BIG;
            p.b.buf.set(ValueLayout.JAVA_LONG, atomicAt, 40);
            final long bAddr = p.b.mr.address();
            final int rkey = p.b.mr.rkey();
            qb[2].postRecv(new RecvWorkRequest().wrId(20).sge(p.b.mr, 2L * BIG, send));
            // one operation per QP, all in flight together, spread over both connections by QPN
            qa[0].postSend(new SendWorkRequest().wrId(0).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(p.a.mr, 0, BIG).remote(bAddr, rkey));
            qa[1].postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(p.a.mr, BIG, BIG).remote(bAddr + BIG, rkey));
            qa[2].postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(p.a.mr, 2L * BIG, send));
            qa[3].postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                .flags(SendFlags.SIGNALED).sge(p.a.mr, atomicAt, 8).remote(bAddr + atomicAt, rkey).atomic(2, 0)
                .next(new SendWorkRequest().wrId(4).opcode(WrOpcode.ATOMIC_CMP_AND_SWP).flags(SendFlags.SIGNALED)
                    .sge(p.a.mr, atomicAt + 8, 8).remote(bAddr + atomicAt, rkey).atomic(42, 99)));
            final boolean[] done = new boolean[5];
            for (int i = 0; i < 5; i++) {
                final WorkCompletion wc = p.awaitSuccess(p.a.cq, "requester completion " + i);
                done[(int) wc.wrId] = true;
            }
            for (int i = 0; i < 5; i++) {
                assertTrue(done[i], "completion of wr " + i);
            }
            final WorkCompletion recv = p.awaitSuccess(p.b.cq, "the SEND's receive");
            assertEquals(WcOpcode.RECV, recv.opcode);
            assertEquals(send, recv.byteLen);
            Fixture.assertBytes(p.a.buf.asSlice(0, BIG), p.b.buf.asSlice(0, BIG), "16 MiB WRITE");
            Fixture.assertBytes(p.b.buf.asSlice(BIG, BIG), p.a.buf.asSlice(BIG, BIG), "16 MiB READ");
            Fixture.assertBytes(p.a.buf.asSlice(2L * BIG, send), p.b.buf.asSlice(2L * BIG, send), "4 MiB SEND");
            assertEquals(40, p.a.buf.get(ValueLayout.JAVA_LONG, atomicAt), "fetch-add returns the old value");
            assertEquals(42, p.a.buf.get(ValueLayout.JAVA_LONG, atomicAt + 8), "compare-swap returns 40 + 2");
            assertEquals(99, p.b.buf.get(ValueLayout.JAVA_LONG, atomicAt), "the swap happened");
        }
    }

    @Test
    void faultsOnTopOfTcpStayByteExact() {
        final int len = 1 << 20;
        final String spec = "drop=0.03,dup=0.03,reorder=0.05,reorder-us=100,seed=";
        try (Pair p = new Pair(2,
            new FaultInjector(FaultInjector.Config.parse(spec + 5), NanoClock.SYSTEM),
            new FaultInjector(FaultInjector.Config.parse(spec + 6), NanoClock.SYSTEM), 2L * QPS * len)) {
            final QpAttr attr = QpBringUp.rcDefaults().timeout(14);
            final QueuePair[] qa = new QueuePair[QPS];
            final QueuePair[] qb = new QueuePair[QPS];
            for (int i = 0; i < QPS; i++) {
                qa[i] = p.a.qp();
                qb[i] = p.b.qp();
                p.connect(qa[i], qb[i], i, attr);
                Fixture.fill(p.a.buf.asSlice((long) i * len, len), 10 + i);
                Fixture.fill(p.b.buf.asSlice((long) (QPS + i) * len, len), 20 + i);
            }
            for (int i = 0; i < QPS; i++) {
                final long off = (long) i * len;
                final long roff = (long) (QPS + i) * len;
                qa[i].postSend(new SendWorkRequest().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(p.a.mr, off, len).remote(p.b.mr.address() + off, p.b.mr.rkey())
                    .next(new SendWorkRequest().wrId(10 + i).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                        .sge(p.a.mr, roff, len).remote(p.b.mr.address() + roff, p.b.mr.rkey())));
            }
            for (int i = 0; i < 2 * QPS; i++) {
                p.awaitSuccess(p.a.cq, "completion " + i + " over a lossy link");
            }
            Fixture.assertBytes(p.a.buf.asSlice(0, (long) QPS * len), p.b.buf.asSlice(0, (long) QPS * len),
                "WRITEs");
            Fixture.assertBytes(p.b.buf.asSlice((long) QPS * len, (long) QPS * len),
                p.a.buf.asSlice((long) QPS * len, (long) QPS * len), "READs");
            assertTrue(p.fa.describe().startsWith("tcp:"));
        }
    }

    @Test
    void connectRefusedNamesTheAddress() throws Exception {
        final int freePort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            freePort = s.getLocalPort();
        }
        final InetSocketAddress nobody = new InetSocketAddress(InetAddress.getLoopbackAddress(), freePort);
        try (TcpFabric f = new TcpFabric(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1 << 16, null,
            false, 1)) {
            f.attach(1);
            final UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> f.connect(2, nobody));
            assertTrue(e.getMessage().contains(nobody.toString()) && e.getMessage().contains("LID 2"),
                e::getMessage);
        }
    }
}
