/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AddressHandle;
import io.gdrkit.verbs.AhAttr;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QpType;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * UD QPs and address handles, from the IB spec (chapter 9 and 11) and the libibverbs man pages: datagrams byte for
 * byte behind the 40-byte GRH area, Q_Key checks and the controlled Q_Key rule, the path MTU, the UD state table,
 * and no reliability: drops are simply lost.
 */
class UdTest {
    private static final int QKEY = 0x1111_2222;
    private static final long WAIT = 20_000_000_000L;

    /** Two devices, one UD QP each, both in RTS with Q_Key {@link #QKEY}. */
    private static final class Pair implements AutoCloseable {
        final SoftNicDriver driver;
        final Arena arena = Arena.ofShared();
        final SoftDevice da;
        final SoftDevice db;
        final ProtectionDomain pa;
        final ProtectionDomain pb;
        final CompletionQueue cqa;
        final CompletionQueue cqb;
        final QueuePair qa;
        final QueuePair qb;
        final MemoryRegion ma;
        final MemoryRegion mb;

        Pair(final SoftNicContext ctx) {
            driver = SoftNicDriver.launch(ctx);
            da = driver.addDevice("ud0");
            db = driver.addDevice("ud1");
            final VerbsContext ca = da.open();
            final VerbsContext cb = db.open();
            pa = ca.allocPd();
            pb = cb.allocPd();
            cqa = ca.createCq(256);
            cqb = cb.createCq(256);
            ma = pa.registerMr(arena.allocate(1 << 16), AccessFlags.LOCAL_WRITE);
            mb = pb.registerMr(arena.allocate(1 << 16), AccessFlags.LOCAL_WRITE);
            qa = pa.createQp(new QpInitAttr().cqs(cqa, cqa).qpType(QpType.UD));
            qb = pb.createQp(new QpInitAttr().cqs(cqb, cqb).qpType(QpType.UD));
            toRts(qa, QKEY);
            toRts(qb, QKEY);
        }

        WorkCompletion await(final CompletionQueue cq, final String what) {
            final WorkCompletion[] wc = WorkCompletion.array(1);
            final long deadline = System.nanoTime() + WAIT;
            while (cq.poll(wc) == 0) {
                driver.progress();
                assertTrue(System.nanoTime() < deadline, () -> "timed out waiting for " + what);
            }
            return wc[0];
        }

        void assertNothing(final CompletionQueue cq, final String what) {
            for (int i = 0; i < 2000; i++) {
                driver.progress();
            }
            final WorkCompletion[] wc = WorkCompletion.array(1);
            assertEquals(0, cq.poll(wc), () -> what + ": " + wc[0]);
        }

        @Override
        public void close() {
            driver.close();
            arena.close();
        }
    }

    static void toRts(final QueuePair qp, final int qkey) {
        final QpAttr a = new QpAttr().qkey(qkey).state(QpState.INIT);
        a.pkeyIndex = 0;
        a.portNum = 1;
        qp.modify(a, QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.QKEY);
        qp.modify(new QpAttr().state(QpState.RTR), QpAttrMask.STATE);
        final QpAttr rts = new QpAttr().state(QpState.RTS);
        rts.sqPsn = 0;
        qp.modify(rts, QpAttrMask.STATE | QpAttrMask.SQ_PSN);
    }

    /**
     * A UD send queue is not handed to a direct poster (a GPU writing WQEs): the datagram engine does not check what
     * such a poster writes, so the refusal is EINVAL by name and the queue stays the CPU's.
     */
    @Test
    void aUdQueueIsNotHandedToADirectPoster() {
        try (Pair p = new Pair(new SoftNicContext())) {
            final QueuePair q = p.pa.createQp(new QpInitAttr().cqs(p.da.open().createCq(16), p.cqa).qpType(QpType.UD));
            final VerbsException e = assertThrows(VerbsException.class, () -> q.direct().takeOwnership());
            assertEquals(Errno.EINVAL, e.errno(), e.getMessage());
            assertTrue(e.getMessage().contains("is UD; a direct queue is for RC QPs only"), e.getMessage());
            assertFalse(q.direct().owned());
        }
    }

    @Test
    void aDatagramArrivesByteForByteAfterTheGrhArea() {
        try (Pair p = new Pair(new SoftNicContext())) {
            final AddressHandle ah = p.pa.createAh(new AhAttr().dlid(p.db.lid()));
            final MemorySegment dst = p.mb.segment();
            dst.asSlice(0, 200).fill((byte) 0x7E);
            final SplittableRandom rnd = new SplittableRandom(15);
            for (int i = 0; i < 100; i++) {
                p.ma.segment().set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            p.qb.postRecv(new RecvWorkRequest().wrId(9).sge(p.mb, 0, 200));
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED).wrId(3)
                .sge(p.ma, 0, 100).imm(0xCAFE).ud(ah, p.qb.qpNum(), QKEY));
            final WorkCompletion s = p.await(p.cqa, "send");
            assertEquals(WcStatus.SUCCESS, s.status);
            assertEquals(WcOpcode.SEND, s.opcode);
            assertEquals(3, s.wrId);
            final WorkCompletion r = p.await(p.cqb, "receive");
            assertEquals(WcStatus.SUCCESS, r.status, r::toString);
            assertEquals(9, r.wrId);
            assertEquals(WcOpcode.RECV, r.opcode);
            assertEquals(40 + 100, r.byteLen, "byte_len counts the GRH area");
            assertEquals(p.qa.qpNum(), r.srcQp);
            assertEquals(p.da.lid(), r.slid, "the sender's LID, to answer to");
            assertTrue(r.hasImm());
            assertEquals(0xCAFE, r.immData);
            assertEquals(0, r.wcFlags & WorkCompletion.GRH, "no GRH was present");
            for (int i = 0; i < 40; i++) {
                assertEquals((byte) 0x7E, dst.get(ValueLayout.JAVA_BYTE, i), "GRH area byte " + i + " untouched");
            }
            assertEquals(-1, dst.asSlice(40, 100).mismatch(p.ma.segment().asSlice(0, 100)), "payload");
            assertEquals((byte) 0x7E, dst.get(ValueLayout.JAVA_BYTE, 140), "nothing past the message");
            assertEquals(QpType.UD, p.qa.qpType());
            assertEquals(QKEY, p.qb.queryQp().qkey);
        }
    }

    /**
     * A port that is down neither sends nor receives: a datagram posted on it completes (UD completes once the
     * packet leaves the send queue) and is lost; one sent to it is lost too, not queued for when it comes back.
     */
    @Test
    void datagramsAreLostWhileEitherPortIsDown() {
        try (Pair p = new Pair(new SoftNicContext())) {
            final AddressHandle ah = p.pa.createAh(new AhAttr().dlid(p.db.lid()));
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 256));
            for (int i = 0; i < 64; i++) {
                p.ma.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
            }
            for (final SoftDevice down : new SoftDevice[] {p.da, p.db}) {
                assertTrue(down.portDown("test"));
                p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(5)
                    .sge(p.ma, 0, 64).ud(ah, p.qb.qpNum(), QKEY));
                final WorkCompletion s = p.await(p.cqa, "send with " + down.name() + " down");
                assertEquals(WcStatus.SUCCESS, s.status, "UD: sent is done, even into a dead link");
                p.assertNothing(p.cqb, "a datagram while " + down.name() + "'s port is down");
                assertTrue(down.packetsLostPortDown() > 0);
                assertTrue(down.portUp());
                p.assertNothing(p.cqb, "the lost datagram after " + down.name() + "'s port came back");
                assertEquals(QpState.RTS, p.qa.state());
                assertEquals(QpState.RTS, p.qb.state());
            }
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(6)
                .sge(p.ma, 0, 64).ud(ah, p.qb.qpNum(), QKEY));
            assertEquals(WcStatus.SUCCESS, p.await(p.cqa, "send with both ports up").status);
            final WorkCompletion r = p.await(p.cqb, "the datagram once both ports are up");
            assertEquals(WcStatus.SUCCESS, r.status, r::toString);
            assertEquals(1, r.wrId, "the receive WQE the lost datagrams never used");
            assertEquals(40 + 64, r.byteLen);
            assertEquals(-1, p.mb.segment().asSlice(40, 64).mismatch(p.ma.segment().asSlice(0, 64)), "payload");
        }
    }

    @Test
    void aWrongQkeyIsDroppedAndAControlledQkeySendsTheQpsOwn() {
        try (Pair p = new Pair(new SoftNicContext())) {
            final AddressHandle ah = p.pa.createAh(new AhAttr().dlid(p.db.lid()));
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 256));
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(p.ma, 0, 8)
                .ud(ah, p.qb.qpNum(), QKEY + 1));
            assertEquals(WcStatus.SUCCESS, p.await(p.cqa, "send with a wrong Q_Key").status, "UD: sent is done");
            p.assertNothing(p.cqb, "a datagram with another Q_Key");
            assertEquals(1, p.db.ud.qkeyMismatches());
            // a controlled Q_Key (high bit set) in the WR: the sender's QP Q_Key goes instead (C10-15)
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(p.ma, 0, 8)
                .ud(ah, p.qb.qpNum(), 0x8000_0001));
            p.await(p.cqa, "send with a controlled Q_Key");
            assertEquals(WcStatus.SUCCESS, p.await(p.cqb, "received under the QP's Q_Key").status);
        }
    }

    @Test
    void lostDatagramsStayLost() {
        final AtomicInteger seen = new AtomicInteger();
        final Packet view = new Packet();
        // every other UD datagram is dropped by the link; nothing resends them
        try (Pair p = new Pair(new SoftNicContext().linkHook((s, d, b, o, l) -> {
            view.wrap(b, o, l);
            return view.opcode() == BthOpcode.UD_SEND_ONLY && seen.getAndIncrement() % 2 == 1
                ? LinkHook.DROP : LinkHook.DELIVER;
        }))) {
            final AddressHandle ah = p.pa.createAh(new AhAttr().dlid(p.db.lid()));
            for (int i = 0; i < 10; i++) {
                p.qb.postRecv(new RecvWorkRequest().wrId(100 + i).sge(p.mb, 256L * i, 256));
            }
            for (int i = 0; i < 10; i++) {
                p.ma.segment().set(ValueLayout.JAVA_INT, 4L * i, i);
                p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(i)
                    .sge(p.ma, 4L * i, 4).ud(ah, p.qb.qpNum(), QKEY));
            }
            for (int i = 0; i < 10; i++) {
                final WorkCompletion s = p.await(p.cqa, "send " + i);
                assertEquals(WcStatus.SUCCESS, s.status, "every send completes, delivered or not");
                assertEquals(i, s.wrId);
            }
            for (int i = 0; i < 5; i++) {
                final WorkCompletion r = p.await(p.cqb, "datagram " + i);
                assertEquals(100 + i, r.wrId, "receive WQEs are taken in order by the datagrams that arrive");
                assertEquals(2 * i, p.mb.segment().get(ValueLayout.JAVA_INT, 256L * i + 40), "the even ones");
            }
            p.assertNothing(p.cqb, "the dropped datagrams");
            assertEquals(10, seen.get(), "each datagram went on the link once");
        }
    }

    @Test
    void postAndCreateErrors() {
        try (Pair p = new Pair(new SoftNicContext())) {
            final AddressHandle ah = p.pa.createAh(new AhAttr().dlid(p.db.lid()));
            // over the path MTU (4096)
            final PostException mtu = assertThrows(PostException.class, () -> p.qa.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND).sge(p.ma, 0, 4097).ud(ah, p.qb.qpNum(), QKEY)));
            assertEquals(Errno.EINVAL, mtu.errno());
            // not a SEND
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> p.qa.postSend(new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE).sge(p.ma, 0, 8).remote(0, 0).ud(ah, p.qb.qpNum(), QKEY))).errno());
            // no AH
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> p.qa.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND).sge(p.ma, 0, 8))).errno());
            // AH errors: LID 0, multicast, GRH, port 2
            assertErrno(Errno.EINVAL, () -> p.pa.createAh(new AhAttr().dlid(0)));
            assertErrno(Errno.EINVAL, () -> p.pa.createAh(new AhAttr().dlid(0xC001)));
            final byte[] gid = new byte[16];
            gid[0] = (byte) 0xfe;
            gid[15] = 1;
            assertErrno(Errno.EOPNOTSUPP, () -> p.pa.createAh(new AhAttr().dlid(1).grh(new io.gdrkit.verbs
                .GlobalRoute().dgid(gid))));
            assertErrno(Errno.EINVAL, () -> p.pa.createAh(new AhAttr().dlid(1).portNum(2)));
            // a destroyed AH
            final AddressHandle gone = p.pa.createAh(new AhAttr().dlid(p.db.lid()));
            gone.close();
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> p.qa.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND).sge(p.ma, 0, 8).ud(gone, p.qb.qpNum(), QKEY))).errno());
            // an AH for a LID nobody has: the send completes, the datagram is lost
            final AddressHandle nowhere = p.pa.createAh(new AhAttr().dlid(777));
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(p.ma, 0, 8)
                .ud(nowhere, p.qb.qpNum(), QKEY));
            assertEquals(WcStatus.SUCCESS, p.await(p.cqa, "send to an unknown LID").status);
            // no receive posted: dropped silently, no RNR for UD
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(p.ma, 0, 8)
                .ud(ah, p.qb.qpNum(), QKEY));
            p.await(p.cqa, "send to a QP without receives");
            p.assertNothing(p.cqb, "no receive WQE");
            assertEquals(1, p.db.ud.noReceiveWqe());
            // a receive buffer smaller than GRH area + message: LOC_LEN_ERR, the QP goes to ERR
            p.qb.postRecv(new RecvWorkRequest().wrId(5).sge(p.mb, 0, 40 + 7));
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).sge(p.ma, 0, 8).ud(ah, p.qb.qpNum(), QKEY));
            assertEquals(WcStatus.LOC_LEN_ERR, p.await(p.cqb, "too small").status);
            assertEquals(QpState.ERR, p.qb.state());
        }
    }

    @Test
    void theUdStateTable() {
        try (Pair p = new Pair(new SoftNicContext())) {
            final QueuePair q = p.pa.createQp(new QpInitAttr().cqs(p.cqa, p.cqa).qpType(QpType.UD));
            // RESET -> INIT needs the Q_Key, and takes no RC attributes
            final QpAttr init = new QpAttr().state(QpState.INIT);
            assertErrno(Errno.EINVAL, () -> q.modify(init, QpAttrMask.STATE | QpAttrMask.PKEY_INDEX
                | QpAttrMask.PORT), "INIT without QKEY");
            assertErrno(Errno.EINVAL, () -> q.modify(init.qkey(1), QpAttrMask.STATE | QpAttrMask.PKEY_INDEX
                | QpAttrMask.PORT | QpAttrMask.QKEY | QpAttrMask.ACCESS_FLAGS), "INIT with access flags");
            q.modify(init, QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.QKEY);
            // RTR needs no destination
            assertErrno(Errno.EINVAL, () -> q.modify(new QpAttr().state(QpState.RTR), QpAttrMask.STATE
                | QpAttrMask.DEST_QPN), "RTR with a destination");
            q.modify(new QpAttr().state(QpState.RTR), QpAttrMask.STATE);
            // posting a send in RTR: EINVAL
            final AddressHandle ah = p.pa.createAh(new AhAttr().dlid(p.db.lid()));
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> q.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND).sge(p.ma, 0, 8).ud(ah, p.qb.qpNum(), QKEY))).errno(), "send in RTR");
            assertErrno(Errno.EINVAL, () -> q.modify(new QpAttr().state(QpState.RTS), QpAttrMask.STATE),
                "RTS without SQ_PSN");
            q.modify(new QpAttr().state(QpState.RTS), QpAttrMask.STATE | QpAttrMask.SQ_PSN);
            q.modify(new QpAttr().qkey(5), QpAttrMask.QKEY);
            assertEquals(5, q.queryQp().qkey);
            assertFalse(q.queryQp().qpState != QpState.RTS);
        }
    }

    private static void assertErrno(final int errno, final Runnable r) {
        assertErrno(errno, r, "");
    }

    private static void assertErrno(final int errno, final Runnable r, final String what) {
        final VerbsException e = assertThrows(VerbsException.class, r::run, what);
        assertEquals(Errno.name(errno), Errno.name(e.errno()), () -> what + ": " + e.getMessage());
    }
}
