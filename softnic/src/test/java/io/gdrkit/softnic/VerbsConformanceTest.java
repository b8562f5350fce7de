/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.CompletionChannel;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.DeviceAttr;
import io.gdrkit.verbs.DeviceCap;
import io.gdrkit.verbs.Imm;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QpType;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.SharedReceiveQueue;
import io.gdrkit.verbs.SrqAttr;
import io.gdrkit.verbs.SrqInitAttr;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Conformance of the verbs issue 15 added, written from the libibverbs man pages and the IB spec: each call's
 * success path byte for byte, each documented error with libibverbs' errno, and the capability flags of
 * queryDevice checked against probes.
 */
class VerbsConformanceTest {
    private static final long SEC = TimeUnit.SECONDS.toNanos(1);
    private static final long WAIT = 20 * SEC;
    private static final int BUF = 1 << 16;

    private static Fixture fixture() {
        return new Fixture(new SoftNicContext(), BUF);
    }

    private static void assertErrno(final int errno, final Runnable call, final String what) {
        final VerbsException e = assertThrows(VerbsException.class, call::run, what);
        assertEquals(Errno.name(errno), Errno.name(e.errno()), () -> what + ": " + e.getMessage());
    }

    private static void send(final QueuePair qp, final MemoryRegion mr, final long off, final int len,
                             final long wrId, final int flags) {
        qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).wrId(wrId).flags(SendFlags.SIGNALED | flags)
            .sge(mr, off, len));
    }

    private static void recv(final QueuePair qp, final MemoryRegion mr, final long off, final int len,
                             final long wrId) {
        qp.postRecv(new RecvWorkRequest().wrId(wrId).sge(mr, off, len));
    }

    // ---------------- queries ----------------

    @Test
    void queryDeviceReportsTheLimitsAndCapabilitiesTheNicHas() {
        try (Fixture f = fixture()) {
            final DeviceAttr a = f.a.ctx.queryDevice();
            assertEquals(1, a.physPortCnt());
            assertEquals(f.a.dev.guid(), a.nodeGuid());
            assertEquals(a.nodeGuid(), a.sysImageGuid());
            assertEquals(SoftDevice.MAX_SGE, a.maxSge());
            assertEquals(SoftDevice.MAX_QP_WR, a.maxQpWr());
            assertEquals(SoftDevice.MAX_RD_ATOMIC, a.maxQpRdAtom());
            assertEquals(SoftDevice.MAX_RD_ATOMIC, a.maxQpInitRdAtom());
            assertEquals(DeviceCap.ATOMIC_HCA, a.atomicCap());
            assertEquals(Integer.MAX_VALUE, a.maxAh(), "address handles are not limited");
            assertTrue(a.maxSrq() > 0 && a.maxSrqWr() > 0 && a.maxSrqSge() > 0);
            assertTrue(a.maxPd() > 0);
            assertEquals(1, a.maxPkeys());
            assertTrue(a.simulated());
            assertEquals(DeviceCap.RC_RNR_NAK_GEN | DeviceCap.CURR_QP_STATE_MOD | DeviceCap.SYS_IMAGE_GUID
                | DeviceCap.MEM_WINDOW | DeviceCap.MEM_WINDOW_TYPE_2B | DeviceCap.PORT_ACTIVE_EVENT, a.deviceCapFlags(),
                "exactly the capabilities probed below and in MemoryWindowTest");
            assertTrue(a.maxMw() > 0);
        }
    }

    @Test
    void everyCapabilityFlagAgreesWithAProbe() {
        final SoftNicContext ctx = new SoftNicContext();
        try (Fixture f = new Fixture(ctx, BUF, new QpInitAttr(), QpBringUp.rcDefaults().rnrRetry(0).minRnrTimer(1))) {
            final DeviceAttr a = f.a.ctx.queryDevice();
            // RC_RNR_NAK_GEN: a SEND with no receive posted is answered RNR NAK (rnr_retry 0: the sender fails)
            assertTrue(a.has(DeviceCap.RC_RNR_NAK_GEN));
            send(f.a.qp, f.a.mr, 0, 8, 1, 0);
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, f.awaitOne(f.a.scq, "RNR").status);
            // SYS_IMAGE_GUID: the field is set
            assertTrue(a.has(DeviceCap.SYS_IMAGE_GUID));
            assertNotEquals(0L, a.sysImageGuid());
            // atomic_cap HCA: a FETCH_ADD executes (probed on a fresh pair)
        }
        try (Fixture f = fixture()) {
            final DeviceAttr a = f.a.ctx.queryDevice();
            assertTrue(a.has(DeviceCap.CURR_QP_STATE_MOD));
            final QpAttr cur = new QpAttr();
            cur.qpState = QpState.RTS;
            cur.curQpState = QpState.RTS;
            f.a.qp.modify(cur, QpAttrMask.STATE | QpAttrMask.CUR_STATE);
            assertEquals(QpState.RTS, f.a.qp.queryQp().qpState);

            f.b.buf.set(ValueLayout.JAVA_LONG, 0, 40);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 8, 8).remote(f.b.mr.address(), f.b.mr.rkey()).atomic(2, 0));
            f.awaitSuccess(f.a.scq, "fetch-add");
            assertNotEquals(DeviceCap.ATOMIC_NONE, a.atomicCap());
            assertEquals(40, f.a.buf.get(ValueLayout.JAVA_LONG, 8));
            assertEquals(42, f.b.buf.get(ValueLayout.JAVA_LONG, 0));

            // MEM_WINDOW and TYPE_2B: windows of both types are allocated (their behaviour: MemoryWindowTest)
            assertTrue(a.has(DeviceCap.MEM_WINDOW | DeviceCap.MEM_WINDOW_TYPE_2B));
            f.a.pd.allocMw(1).close();
            f.a.pd.allocMw(2).close();
            // flags not reported, and the matching calls refused
            for (final int op : new int[] {WrOpcode.TSO, WrOpcode.DRIVER1}) {
                final PostException e = assertThrows(PostException.class, () -> f.a.qp.postSend(
                    new SendWorkRequest().opcode(op).flags(SendFlags.SIGNALED).sge(f.a.mr, 0, 8)
                        .remote(f.b.mr.address(), f.b.mr.rkey())), WrOpcode.name(op));
                assertEquals(Errno.EINVAL, e.errno(), WrOpcode.name(op));
            }
            assertFalse(a.has(DeviceCap.SRQ_RESIZE));
            try (SharedReceiveQueue srq = f.a.pd.createSrq(new SrqInitAttr().maxWr(4))) {
                assertErrno(Errno.EINVAL, () -> srq.modifySrq(new SrqAttr().maxWr(8), SrqAttr.MAX_WR), "resize");
            }
            assertTrue(a.has(DeviceCap.PORT_ACTIVE_EVENT));
            assertNull(f.a.ctx.pollAsyncEvent(), "no port event while the port stays up");
            f.a.dev.portDown("probe");
            assertEquals(AsyncEventType.PORT_ERR, f.a.ctx.pollAsyncEvent().type());
            f.a.dev.portUp();
            final AsyncEvent active = f.a.ctx.pollAsyncEvent();
            assertEquals(AsyncEventType.PORT_ACTIVE, active.type(), "PORT_ACTIVE_EVENT: the event is generated");
            assertEquals(1, active.element());
            assertErrno(Errno.EOPNOTSUPP, () -> f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq)
                .qpType(QpType.UC)), "UC QP");
        }
    }

    @Test
    void queryPortReportsPortOneAndRefusesOthers() {
        try (Fixture f = fixture()) {
            final PortAttr p = f.a.ctx.queryPort(1);
            assertEquals(PortAttr.PORT_ACTIVE, p.state());
            assertEquals(PortAttr.PHYS_LINK_UP, p.physState());
            assertEquals(f.a.dev.lid(), p.lid());
            assertEquals(Mtu.MTU_4096, p.activeMtu());
            assertEquals(1, p.pkeyTblLen());
            assertEquals(1L << 31, p.maxMsgSz());
            assertErrno(Errno.EINVAL, () -> f.a.ctx.queryPort(0), "port 0");
            assertErrno(Errno.EINVAL, () -> f.a.ctx.queryPort(2), "port 2");
        }
    }

    @Test
    void queryQpReturnsTheAttributesSet() {
        final QpAttr attr = QpBringUp.rcDefaults().access(AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE
            | AccessFlags.FLUSH).timeout(13).retryCnt(5).pathMtu(Mtu.MTU_1024);
        try (Fixture f = new Fixture(new SoftNicContext(), BUF, new QpInitAttr(), attr, 77, 99)) {
            final QpAttr q = f.a.qp.queryQp();
            assertEquals(QpState.RTS, q.qpState);
            assertEquals(f.b.qp.qpNum(), q.destQpNum);
            assertEquals(f.b.dev.lid(), q.dlid);
            assertEquals(77, q.sqPsn);
            assertEquals(99, q.rqPsn);
            assertEquals(13, q.timeout);
            assertEquals(5, q.retryCnt);
            assertEquals(Mtu.MTU_1024, q.pathMtu);
            assertEquals(0x30F, q.qpAccessFlags, "783 = FLUSH_PERSISTENT|FLUSH_GLOBAL|ATOMIC|READ|WRITE|LOCAL_WRITE");
        }
    }

    // ---------------- access bits ----------------

    @Test
    void flushAccessBitsAreAcceptedOnQpsAndMrsAndUnknownBitsRefused() {
        try (Fixture f = fixture(); Arena arena = Arena.ofConfined()) {
            final QpAttr a = new QpAttr().access(AccessFlags.ALL_REMOTE | AccessFlags.FLUSH);
            f.a.qp.modify(a, QpAttrMask.ACCESS_FLAGS);
            assertEquals(AccessFlags.ALL_REMOTE | AccessFlags.FLUSH, f.a.qp.queryQp().qpAccessFlags);
            assertErrno(Errno.EINVAL, () -> f.a.qp.modify(new QpAttr().access(1 << 11), QpAttrMask.ACCESS_FLAGS),
                "unknown QP access bit");
            final MemoryRegion mr = f.a.pd.registerMr(arena.allocate(64), AccessFlags.LOCAL_WRITE
                | AccessFlags.FLUSH_GLOBAL | AccessFlags.FLUSH_PERSISTENT);
            assertEquals(AccessFlags.LOCAL_WRITE | AccessFlags.FLUSH, mr.access());
            mr.deregister();
            assertErrno(Errno.EINVAL, () -> f.a.pd.registerMr(arena.allocate(64), 1 << 11), "unknown MR bit");
        }
    }

    // ---------------- inline, poll, imm ----------------

    @Test
    void inlineSendFromUnregisteredMemoryNeedsNoLkey() {
        try (Fixture f = fixture(); Arena arena = Arena.ofConfined()) {
            final MemorySegment plain = arena.allocate(48);
            for (int i = 0; i < 48; i++) {
                plain.set(ValueLayout.JAVA_BYTE, i, (byte) (0xA0 + i));
            }
            recv(f.b.qp, f.b.mr, 0, 64, 5);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED | SendFlags.INLINE)
                .sge(plain, 8, 32));
            plain.fill((byte) 0); // copied at post time: later changes do not travel
            f.awaitSuccess(f.a.scq, "inline send");
            final WorkCompletion wc = f.awaitSuccess(f.b.rcq, "receive");
            assertEquals(32, wc.byteLen);
            for (int i = 0; i < 32; i++) {
                assertEquals((byte) (0xA8 + i), f.b.buf.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            // out of the segment: EINVAL at post time, nothing posted
            final PostException e = assertThrows(PostException.class, () -> f.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND).flags(SendFlags.INLINE).sge(plain, 40, 16)));
            assertEquals(Errno.EINVAL, e.errno());
            // lkey 0 and no segment: nothing says where the bytes are
            final PostException e2 = assertThrows(PostException.class, () -> f.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND).flags(SendFlags.INLINE).sge(plain.address(), 8, 0)));
            assertEquals(Errno.EINVAL, e2.errno());
            // without INLINE the lkey is checked: unregistered memory completes with LOC_PROT_ERR
            recv(f.b.qp, f.b.mr, 0, 64, 6);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(plain, 0, 8));
            assertEquals(WcStatus.LOC_PROT_ERR, f.awaitOne(f.a.scq, "non-inline unregistered").status);
        }
    }

    @Test
    void pollFillsAPlainArray() {
        try (Fixture f = fixture()) {
            recv(f.b.qp, f.b.mr, 0, 64, 11);
            recv(f.b.qp, f.b.mr, 64, 64, 12);
            send(f.a.qp, f.a.mr, 0, 16, 21, 0);
            send(f.a.qp, f.a.mr, 16, 16, 22, 0);
            final WorkCompletion[] wcs = new WorkCompletion[4];
            f.await(() -> f.b.rcq.poll(wcs) > 0 || wcs[0] != null, "a receive completion");
            int got = wcs[1] != null ? 2 : 1;
            final long first = wcs[0].wrId;
            while (got < 2) {
                final WorkCompletion[] more = WorkCompletion.array(4);
                if (f.b.rcq.poll(more) == 1) {
                    assertEquals(12, more[0].wrId);
                    got++;
                }
                f.driver.progress();
            }
            assertEquals(11, first);
            assertEquals(WcOpcode.RECV, wcs[0].opcode);
            assertNull(wcs[3], "entries past the completions stay untouched");
        }
    }

    @Test
    void immediateDataInNetworkOrderRoundTripsAsLibibverbsDoes() {
        try (Fixture f = fixture()) {
            recv(f.b.qp, f.b.mr, 0, 64, 1);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 8).immBe(Imm.htonl(1234)));
            f.awaitSuccess(f.a.scq, "send");
            final WorkCompletion wc = f.awaitSuccess(f.b.rcq, "recv");
            assertTrue(wc.hasImm());
            assertEquals(1234, wc.immData, "host order: what the sender meant");
            assertEquals(1234, Imm.ntohl(wc.immDataBe()), "ntohl(wc.imm_data) as ported C code reads it");
            assertEquals(0xD2040000, Imm.htonl(1234), "htonl on this little-endian host");
            assertEquals(1234, Imm.ntohl(Imm.htonl(1234)));
        }
    }

    // ---------------- completion channels ----------------

    @ParameterizedTest
    @EnumSource(value = SoftNicContext.ProgressMode.class, names = {"INVOKER", "OWN_DEVICE", "DEDICATED"})
    void anArmedCqRaisesOneEventAndGetCqEventNeedsNoOtherThread(final SoftNicContext.ProgressMode mode) {
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(mode), BUF)) {
            final CompletionChannel ch = f.b.ctx.createCompChannel();
            final CompletionQueue cq = f.b.ctx.createCq(16, ch, 0);
            assertSame(ch, cq.channel());
            assertEquals(0, cq.compVector());
            final QueuePair qb = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, cq));
            final QueuePair qa = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            QpBringUp.connect(qa, f.a.dev.lid(), 1, qb, f.b.dev.lid(), 2, QpBringUp.rcDefaults());
            assertNull(ch.getCqEvent(0), "not armed, nothing arrived");
            cq.reqNotifyCq(false);
            recv(qb, f.b.mr, 0, 64, 7);
            f.a.buf.asSlice(0, 16).fill((byte) 0x5C);
            send(qa, f.a.mr, 0, 16, 8, 0);
            // one thread: it waits on b's channel; a's NIC must move too (own_device: the channel's CQs' NICs
            // and, since a's SEND needs a's NIC, the harness polls a's CQ afterwards in that mode)
            CompletionQueue got = null;
            final long deadline = System.nanoTime() + WAIT;
            while (got == null && System.nanoTime() < deadline) {
                got = ch.getCqEvent(SEC / 100);
                if (got == null) {
                    f.a.scq.poll(new WorkCompletion[1]); // a's NIC, as a one-thread harness polls each side
                }
            }
            assertSame(cq, got);
            final WorkCompletion wc = f.awaitSuccess(cq, "receive after the event");
            assertEquals(7, wc.wrId);
            assertEquals(0x5C, f.b.buf.get(ValueLayout.JAVA_BYTE, 15));
            assertNull(ch.getCqEvent(SEC / 50), "disarmed after one event");
            assertErrno(Errno.EBUSY, cq::close, "destroy with an unacknowledged event");
            assertErrno(Errno.EINVAL, () -> cq.ackCqEvents(2), "more acks than events");
            assertErrno(Errno.EINVAL, () -> cq.ackCqEvents(-1), "negative acks");
            cq.ackCqEvents(1);
            assertErrno(Errno.EBUSY, ch::close, "channel still used by a CQ");
            qb.close();
            qa.close();
            cq.close();
            ch.close();
            assertErrno(Errno.EBADF, () -> ch.getCqEvent(0), "closed channel");
            assertErrno(Errno.EINVAL, () -> f.b.ctx.createCq(16, ch, 0), "CQ on a closed channel");
        }
    }

    @Test
    void solicitedOnlyFiresOnASolicitedReceiveOrAnError() {
        try (Fixture f = fixture()) {
            final CompletionChannel ch = f.b.ctx.createCompChannel();
            final CompletionQueue cq = f.b.ctx.createCq(16, ch, 0);
            final QueuePair qb = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, cq));
            final QueuePair qa = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            QpBringUp.connect(qa, f.a.dev.lid(), 1, qb, f.b.dev.lid(), 2, QpBringUp.rcDefaults());
            cq.reqNotifyCq(true);
            recv(qb, f.b.mr, 0, 64, 1);
            recv(qb, f.b.mr, 64, 64, 2);
            send(qa, f.a.mr, 0, 8, 1, 0);
            f.awaitSuccess(f.a.scq, "unsolicited send");
            assertNull(ch.getCqEvent(SEC / 20), "an unsolicited receive does not fire a solicited-only CQ");
            send(qa, f.a.mr, 0, 8, 2, SendFlags.SOLICITED);
            assertSame(cq, ch.getCqEvent(WAIT), "a solicited receive fires it");
            cq.ackCqEvents(1);
            final WorkCompletion[] wcs = WorkCompletion.array(2);
            f.await(() -> cq.poll(wcs, 1) == 1 && wcs[0].wrId == 2 || false, "both receives");
            // an error completion fires a solicited-only CQ too: move the QP to ERR with a receive posted
            cq.reqNotifyCq(true);
            recv(qb, f.b.mr, 0, 64, 3);
            final QpAttr err = new QpAttr();
            err.qpState = QpState.ERR;
            qb.modify(err, QpAttrMask.STATE);
            assertSame(cq, ch.getCqEvent(WAIT), "the flush error fires it");
            cq.ackCqEvents(1);
            final CompletionQueue plain = f.b.ctx.createCq(4);
            assertErrno(Errno.EINVAL, () -> plain.reqNotifyCq(false), "CQ without a channel");
            assertErrno(Errno.EINVAL, () -> f.b.ctx.createCq(4, ch, 1), "comp_vector past num_comp_vectors");
            assertErrno(Errno.EINVAL, () -> f.b.ctx.createCq(4, f.a.ctx.createCompChannel(), 0),
                "channel of another device");
            assertEquals(1, f.b.ctx.numCompVectors());
        }
    }

    @Test
    void getAsyncEventWaitsAndMovesTheNic() {
        try (Fixture f = fixture()) {
            assertNull(f.a.ctx.getAsyncEvent(SEC / 50), "none pending");
            // a WRITE with a bad rkey: the responder raises QP_ACCESS_ERR; only the wait moves the NICs here
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 8).remote(f.b.mr.address(), 0x7777));
            final AsyncEvent e = f.b.ctx.getAsyncEvent(WAIT);
            assertNotNull(e);
            assertEquals(AsyncEventType.QP_ACCESS_ERR, e.type());
            assertEquals(f.b.qp.qpNum(), e.element());
        }
    }

    // ---------------- SRQ ----------------

    @Test
    void qpsOnAnSrqTakeItsWqesInOrderByteForByte() {
        try (SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext()); Arena arena = Arena.ofShared()) {
            final SoftDevice da = driver.addDevice("a");
            final SoftDevice db = driver.addDevice("b");
            final VerbsContext ca = da.open();
            final VerbsContext cb = db.open();
            final ProtectionDomain pa = ca.allocPd();
            final ProtectionDomain pb = cb.allocPd();
            final CompletionQueue cqa = ca.createCq(64);
            final CompletionQueue cqb = cb.createCq(64);
            final MemoryRegion ma = pa.registerMr(arena.allocate(BUF), AccessFlags.LOCAL_WRITE);
            final MemoryRegion mb = pb.registerMr(arena.allocate(BUF), AccessFlags.LOCAL_WRITE);
            final SharedReceiveQueue srq = pb.createSrq(new SrqInitAttr().maxWr(4).maxSge(2));
            assertEquals(4, srq.querySrq().maxWr);
            assertEquals(0, srq.querySrq().srqLimit);
            final QueuePair[] senders = new QueuePair[2];
            final QueuePair[] receivers = new QueuePair[2];
            for (int i = 0; i < 2; i++) {
                senders[i] = pa.createQp(new QpInitAttr().cqs(cqa, cqa));
                receivers[i] = pb.createQp(new QpInitAttr().cqs(cqb, cqb).srq(srq));
                assertEquals(0, receivers[i].queryQp().cap.maxRecvWr, "receives come from the SRQ");
                QpBringUp.connect(senders[i], da.lid(), 10 * i, receivers[i], db.lid(), 20 * i,
                    QpBringUp.rcDefaults().pathMtu(Mtu.MTU_256));
            }
            final PostException direct = assertThrows(PostException.class, () -> recv(receivers[0], mb, 0, 8, 0));
            assertEquals(Errno.EINVAL, direct.errno(), "ibv_post_recv on a QP with an SRQ");
            for (int w = 0; w < 4; w++) {
                srq.postSrqRecv(new RecvWorkRequest().wrId(100 + w).sge(mb, 1024L * w, 1024));
            }
            final PostException full = assertThrows(PostException.class,
                () -> srq.postSrqRecv(new RecvWorkRequest().wrId(9).sge(mb, 0, 8)));
            assertEquals(Errno.ENOMEM, full.errno(), "SRQ full");
            srq.modifySrq(new SrqAttr().srqLimit(2), SrqAttr.LIMIT);
            assertEquals(2, srq.querySrq().srqLimit);
            for (int i = 0; i < 700; i++) {
                ma.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
            }
            // three messages, the first of several packets, from two QPs
            send(senders[0], ma, 0, 700, 1, 0);
            final WorkCompletion[] wc = WorkCompletion.array(1);
            awaitPoll(driver, cqb, wc, "first receive");
            assertEquals(100, wc[0].wrId);
            assertEquals(700, wc[0].byteLen);
            assertEquals(receivers[0].qpNum(), wc[0].qpNum);
            assertTrue(mb.segment().asSlice(0, 700).mismatch(ma.segment().asSlice(0, 700)) == -1, "bytes");
            send(senders[1], ma, 100, 50, 2, 0);
            awaitPoll(driver, cqb, wc, "second receive");
            assertEquals(101, wc[0].wrId);
            assertEquals(receivers[1].qpNum(), wc[0].qpNum);
            assertEquals(-1, mb.segment().asSlice(1024, 50).mismatch(ma.segment().asSlice(100, 50)));
            // 2 WQEs left: not below the limit yet; the next take leaves 1 < 2 and fires it once
            assertNull(ca.pollAsyncEvent());
            send(senders[0], ma, 0, 8, 3, 0);
            awaitPoll(driver, cqb, wc, "third receive");
            assertEquals(102, wc[0].wrId);
            AsyncEvent limit = null;
            for (int i = 0; i < 1000 && limit == null; i++) {
                limit = cb.pollAsyncEvent();
            }
            assertNotNull(limit);
            assertEquals(AsyncEventType.SRQ_LIMIT_REACHED, limit.type());
            assertEquals(0, srq.querySrq().srqLimit, "the limit disarms when it fires");
            assertErrno(Errno.EINVAL, () -> srq.modifySrq(new SrqAttr().srqLimit(5), SrqAttr.LIMIT), "limit > max_wr");
            assertErrno(Errno.EBUSY, srq::close, "SRQ used by QPs");
            // a QP on an SRQ in ERR: QP_LAST_WQE_REACHED, and the SRQ's WQE stays for the other QP
            final QpAttr err = new QpAttr();
            err.qpState = QpState.ERR;
            receivers[0].modify(err, QpAttrMask.STATE);
            AsyncEvent last = null;
            for (int i = 0; i < 100_000 && last == null; i++) {
                driver.progress();
                last = cb.pollAsyncEvent();
            }
            assertNotNull(last);
            assertEquals(AsyncEventType.QP_LAST_WQE_REACHED, last.type());
            assertEquals(receivers[0].qpNum(), last.element());
            send(senders[1], ma, 0, 4, 4, 0);
            awaitPoll(driver, cqb, wc, "fourth receive, on the QP still up");
            assertEquals(103, wc[0].wrId);
            assertEquals(receivers[1].qpNum(), wc[0].qpNum);
        }
    }

    @Test
    void srqCreationErrors() {
        try (Fixture f = fixture()) {
            final int max = f.a.ctx.queryDevice().maxSrqWr();
            assertErrno(Errno.EINVAL, () -> f.a.pd.createSrq(new SrqInitAttr().maxWr(max + 1)), "too many WRs");
            assertErrno(Errno.EINVAL, () -> f.a.pd.createSrq(new SrqInitAttr().maxWr(0)), "no WRs");
            assertErrno(Errno.EINVAL, () -> f.a.pd.createSrq(new SrqInitAttr().maxSge(SoftDevice.MAX_SGE + 1)),
                "too many SGEs");
            assertErrno(Errno.EINVAL, () -> f.a.pd.createSrq(new SrqInitAttr().maxWr(4).srqLimit(5)),
                "limit above max_wr");
            final SharedReceiveQueue srq = f.a.pd.createSrq(new SrqInitAttr().maxWr(4));
            final ProtectionDomain other = f.a.ctx.allocPd();
            assertErrno(Errno.EINVAL, () -> other.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq).srq(srq)),
                "SRQ of another PD");
            assertErrno(Errno.EINVAL, () -> f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, f.b.rcq).srq(srq)),
                "SRQ of another device");
            final ProtectionDomain lone = f.a.ctx.allocPd();
            final SharedReceiveQueue held = lone.createSrq(new SrqInitAttr().maxWr(2));
            assertErrno(Errno.EBUSY, lone::close, "PD that still has an SRQ");
            held.close();
            lone.close();
            final PostException e = assertThrows(PostException.class, () -> srq.postSrqRecv(
                new RecvWorkRequest(8).numSge(5)));
            assertEquals(Errno.EINVAL, e.errno(), "num_sge > max_sge");
            srq.close();
            assertErrno(Errno.EINVAL, () -> f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq).srq(srq)),
                "destroyed SRQ");
            assertErrno(Errno.EINVAL, srq::querySrq, "query a destroyed SRQ");
        }
    }

    private static void awaitPoll(final SoftNicDriver driver, final CompletionQueue cq, final WorkCompletion[] wc,
                                  final String what) {
        final long deadline = System.nanoTime() + WAIT;
        while (cq.poll(wc) == 0) {
            driver.progress();
            assertTrue(System.nanoTime() < deadline, () -> "timed out waiting for " + what);
        }
        assertEquals(WcStatus.SUCCESS, wc[0].status, () -> what + ": " + wc[0]);
    }

    // ---------------- reregMr ----------------

    @Test
    void reregMrChangesAccessTranslationAndPdWithNewKeys() {
        try (Fixture f = fixture(); Arena arena = Arena.ofShared()) {
            final MemoryRegion mr = f.b.pd.registerMr(arena.allocate(256), AccessFlags.LOCAL_WRITE
                | AccessFlags.REMOTE_WRITE);
            final int oldKey = mr.rkey();
            f.a.buf.asSlice(0, 32).fill((byte) 0x11);
            // access: REMOTE_WRITE taken away, the new rkey refuses a WRITE
            mr.reregMr(MemoryRegion.REREG_CHANGE_ACCESS, null, null, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_READ);
            assertNotEquals(oldKey, mr.rkey(), "new keys");
            assertEquals(AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_READ, mr.access());
            // translation: the MR now covers other memory; a READ through the new rkey reads it byte for byte
            final MemorySegment fresh = arena.allocate(128);
            for (int i = 0; i < 128; i++) {
                fresh.set(ValueLayout.JAVA_BYTE, i, (byte) (i ^ 0x5A));
            }
            mr.reregMr(MemoryRegion.REREG_CHANGE_TRANSLATION, null, fresh, 0);
            assertEquals(fresh.address(), mr.address());
            assertEquals(128, mr.length());
            assertEquals(AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_READ, mr.access(), "access kept");
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 1000, 128).remote(fresh.address(), mr.rkey()));
            f.awaitSuccess(f.a.scq, "READ through the new rkey");
            final byte[] want = fresh.toArray(ValueLayout.JAVA_BYTE);
            assertArrayEquals(want, f.a.buf.asSlice(1000, 128).toArray(ValueLayout.JAVA_BYTE));
            // errors: no flags, unknown flags, heap memory, a PD of another device; nothing changes
            final int key = mr.rkey();
            assertErrno(Errno.EINVAL, () -> mr.reregMr(0, null, null, 0), "no flags");
            assertErrno(Errno.EINVAL, () -> mr.reregMr(8, null, null, 0), "unknown flag");
            assertErrno(Errno.EINVAL, () -> mr.reregMr(MemoryRegion.REREG_CHANGE_TRANSLATION, null,
                MemorySegment.ofArray(new byte[8]), 0), "heap memory");
            assertErrno(Errno.EINVAL, () -> mr.reregMr(MemoryRegion.REREG_CHANGE_PD, f.a.pd, null, 0),
                "PD of another device");
            assertErrno(Errno.EINVAL, () -> mr.reregMr(MemoryRegion.REREG_CHANGE_ACCESS, null, null,
                AccessFlags.REMOTE_WRITE), "REMOTE_WRITE without LOCAL_WRITE");
            assertEquals(key, mr.rkey(), "a failed rereg changes nothing");
            // PD: moved into another PD, the QP (old PD) is refused with the new key
            final ProtectionDomain other = f.b.ctx.allocPd();
            mr.reregMr(MemoryRegion.REREG_CHANGE_PD, other, null, 0);
            assertSame(other, mr.pd());
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 8).remote(fresh.address(), mr.rkey()));
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "READ from another PD").status);
            mr.deregister();
            assertErrno(Errno.EINVAL, () -> mr.reregMr(MemoryRegion.REREG_CHANGE_ACCESS, null, null,
                AccessFlags.LOCAL_WRITE), "rereg after dereg");
        }
    }

    @Test
    void theOldKeysAreRefusedAfterRereg() {
        try (Fixture f = fixture(); Arena arena = Arena.ofShared()) {
            final MemoryRegion mr = f.b.pd.registerMr(arena.allocate(256), AccessFlags.LOCAL_WRITE
                | AccessFlags.REMOTE_WRITE);
            final int oldKey = mr.rkey();
            mr.reregMr(MemoryRegion.REREG_CHANGE_ACCESS, null, null, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 8).remote(mr.address(), oldKey));
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "WRITE with the old rkey").status);
        }
    }
}
