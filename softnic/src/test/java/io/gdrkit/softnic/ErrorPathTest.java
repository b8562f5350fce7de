/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.core.Errno;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/** Remote and local errors, flushing, CQ overflow, posting errors, inline, FENCE, sq_sig_all, SOLICITED. */
class ErrorPathTest {
    private static final int BUF = 1 << 20;

    enum Fault { UNKNOWN_RKEY, WRONG_PD, MISSING_ACCESS, OUT_OF_BOUNDS }

    static Stream<Arguments> remoteFaults() {
        final List<Arguments> args = new ArrayList<>();
        for (final int op : new int[] {WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM, WrOpcode.RDMA_READ,
            WrOpcode.ATOMIC_FETCH_AND_ADD, WrOpcode.ATOMIC_CMP_AND_SWP}) {
            for (final Fault f : Fault.values()) {
                args.add(Arguments.of(WrOpcode.name(op), op, f));
            }
        }
        return args.stream();
    }

    private static int neededAccess(final int op) {
        return switch (op) {
            case WrOpcode.RDMA_READ -> AccessFlags.REMOTE_READ;
            case WrOpcode.ATOMIC_FETCH_AND_ADD, WrOpcode.ATOMIC_CMP_AND_SWP -> AccessFlags.REMOTE_ATOMIC;
            default -> AccessFlags.REMOTE_WRITE;
        };
    }

    private static MemorySegment snapshot(final MemorySegment seg) {
        return Arena.ofAuto().allocate(seg.byteSize()).copyFrom(seg);
    }

    @ParameterizedTest(name = "{0} {2}")
    @MethodSource("remoteFaults")
    void remoteAccessErrorFailsBothSidesAndTouchesNothing(final String name, final int op, final Fault fault) {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            final int len = WrOpcode.isAtomic(op) ? 8 : 4096;
            final MemorySegment victimSeg = f.arena.allocate(8192, 4096);
            Fixture.fill(victimSeg, 11);
            long remoteAddr;
            int rkey;
            switch (fault) {
                case UNKNOWN_RKEY -> {
                    remoteAddr = f.b.mr.address() + 4096;
                    rkey = (0x7ABCD << 8) | 0x35;
                }
                case WRONG_PD -> {
                    final MemoryRegion other = f.b.ctx.allocPd().registerMr(victimSeg,
                        AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                    remoteAddr = other.address() + 64;
                    rkey = other.rkey();
                }
                case MISSING_ACCESS -> {
                    final MemoryRegion other = f.b.pd.registerMr(victimSeg,
                        AccessFlags.LOCAL_WRITE | (AccessFlags.ALL_REMOTE & ~neededAccess(op)));
                    remoteAddr = other.address() + 64;
                    rkey = other.rkey();
                }
                default -> {
                    final MemoryRegion other = f.b.pd.registerMr(victimSeg.asSlice(0, 4096),
                        AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                    // straddles the end of the MR (the bytes after it are the victim's too)
                    remoteAddr = other.address() + 4096 - (WrOpcode.isAtomic(op) ? 0 : 64);
                    rkey = other.rkey();
                }
            }
            Fixture.fill(f.b.buf, 12);
            Fixture.fill(f.a.buf, 13);
            final MemorySegment victimBefore = snapshot(victimSeg);
            final MemorySegment bBefore = snapshot(f.b.buf);
            final MemorySegment aBefore = snapshot(f.a.buf);
            f.b.qp.postRecv(new RecvWorkRequest().wrId(501).sge(f.b.mr, 0, 100)
                .next(new RecvWorkRequest().wrId(502).sge(f.b.mr, 200, 100)));

            final SendWorkRequest bad = new SendWorkRequest().opcode(op).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, len).remote(remoteAddr, rkey).imm(77).atomic(5, 6);
            final SendWorkRequest unsignaled = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(2)
                .sge(f.a.mr, 8192, 512).remote(f.b.mr.address() + 8192, f.b.mr.rkey());
            final SendWorkRequest signaled = new SendWorkRequest().opcode(WrOpcode.SEND).wrId(3)
                .flags(SendFlags.SIGNALED).sge(f.a.mr, 16384, 50);
            f.a.qp.postSend(bad.next(unsignaled.next(signaled)));

            final List<WorkCompletion> wcs = f.awaitN(f.a.scq, 3, "requester completions");
            assertEquals(1, wcs.get(0).wrId);
            assertEquals(WcStatus.REM_ACCESS_ERR, wcs.get(0).status, () -> WcStatus.name(wcs.get(0).status));
            assertEquals(2, wcs.get(1).wrId, "unsignaled WR gets a flush CQE, in order");
            assertEquals(WcStatus.WR_FLUSH_ERR, wcs.get(1).status);
            assertEquals(3, wcs.get(2).wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, wcs.get(2).status);
            f.await(() -> f.a.qp.state() == QpState.ERR, "requester QP in ERR");

            // a WR posted after the error flushes too
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(4)
                .sge(f.a.mr, 0, 16).remote(f.b.mr.address(), f.b.mr.rkey()));
            final WorkCompletion late = f.awaitOne(f.a.scq, "late flush");
            assertEquals(4, late.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, late.status);

            // responder: ERR, receive queue flushed in order, async event
            final List<WorkCompletion> rwcs = f.awaitN(f.b.rcq, 2, "responder receive flush");
            assertEquals(501, rwcs.get(0).wrId);
            assertEquals(502, rwcs.get(1).wrId);
            for (final WorkCompletion r : rwcs) {
                assertEquals(WcStatus.WR_FLUSH_ERR, r.status);
                assertEquals(WcOpcode.RECV, r.opcode);
            }
            assertEquals(QpState.ERR, f.b.qp.state());
            f.awaitEvent(f.b.ctx, AsyncEventType.QP_ACCESS_ERR, f.b.qp.qpNum());

            f.settle(1000);
            Fixture.assertBytes(victimBefore, victimSeg, "target memory");
            Fixture.assertBytes(bBefore, f.b.buf, "responder buffer (later WRs never executed)");
            Fixture.assertBytes(aBefore, f.a.buf, "requester buffer (no READ/ATOMIC result)");
            f.assertNoCompletion(f.a.scq, "requester CQ after flush");
        }
    }

    @Test
    void writeToQpWithoutRemoteWriteIsInvalidRequest() {
        invalidRequest(AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_READ | AccessFlags.REMOTE_ATOMIC,
            new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE), 0);
    }

    @Test
    void readFromQpWithoutRemoteReadIsInvalidRequest() {
        invalidRequest(AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_ATOMIC,
            new SendWorkRequest().opcode(WrOpcode.RDMA_READ), 0);
    }

    @Test
    void atomicOnQpWithoutRemoteAtomicIsInvalidRequest() {
        invalidRequest(AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_READ,
            new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).atomic(1, 0), 0);
    }

    @Test
    void misalignedAtomicIsInvalidRequest() {
        invalidRequest(-1, new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).atomic(1, 0), 4);
        invalidRequest(-1, new SendWorkRequest().opcode(WrOpcode.ATOMIC_CMP_AND_SWP).atomic(0, 9), 1);
    }

    private void invalidRequest(final int responderQpAccess, final SendWorkRequest wr, final int misalign) {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            if (responderQpAccess >= 0) {
                f.b.qp.modify(new QpAttr().state(QpState.RTS).access(responderQpAccess),
                    QpAttrMask.STATE | QpAttrMask.ACCESS_FLAGS);
                assertEquals(responderQpAccess, f.b.qp.queryQp().qpAccessFlags);
            }
            Fixture.fill(f.b.buf, 21);
            Fixture.fill(f.a.buf, 22);
            final MemorySegment bBefore = snapshot(f.b.buf);
            final MemorySegment aBefore = snapshot(f.a.buf);
            f.b.qp.postRecv(new RecvWorkRequest().wrId(900).sge(f.b.mr, 0, 64));
            final int len = WrOpcode.isAtomic(wr.opcode) ? 8 : 1000;
            f.a.qp.postSend(wr.flags(SendFlags.SIGNALED).wrId(10).sge(f.a.mr, 0, len)
                .remote(f.b.mr.address() + 4096 + misalign, f.b.mr.rkey())
                .next(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(11).sge(f.a.mr, 0, 8)
                    .remote(f.b.mr.address(), f.b.mr.rkey())));
            final List<WorkCompletion> wcs = f.awaitN(f.a.scq, 2, "completions");
            assertEquals(10, wcs.get(0).wrId);
            assertEquals(WcStatus.REM_INV_REQ_ERR, wcs.get(0).status, () -> WcStatus.name(wcs.get(0).status));
            assertEquals(11, wcs.get(1).wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, wcs.get(1).status);
            final WorkCompletion r = f.awaitOne(f.b.rcq, "receive flush");
            assertEquals(900, r.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, r.status);
            f.awaitEvent(f.b.ctx, AsyncEventType.QP_REQ_ERR, f.b.qp.qpNum());
            assertEquals(QpState.ERR, f.a.qp.state());
            assertEquals(QpState.ERR, f.b.qp.state());
            Fixture.assertBytes(bBefore, f.b.buf, "responder memory");
            Fixture.assertBytes(aBefore, f.a.buf, "requester memory");
        }
    }

    @Test
    void sendLongerThanReceiveBufferIsLengthError() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            Fixture.fill(f.a.buf, 31);
            f.b.qp.postRecv(new RecvWorkRequest().wrId(70).sge(f.b.mr, 1000, 5000)
                .next(new RecvWorkRequest().wrId(71).sge(f.b.mr, 20000, 100_000)));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, 9000));
            final WorkCompletion wc = f.awaitOne(f.a.scq, "SEND completion");
            assertEquals(1, wc.wrId);
            assertEquals(WcStatus.REM_INV_REQ_ERR, wc.status, () -> WcStatus.name(wc.status));
            final WorkCompletion r = f.awaitOne(f.b.rcq, "receive completion");
            assertEquals(70, r.wrId);
            assertEquals(WcStatus.LOC_LEN_ERR, r.status, () -> WcStatus.name(r.status));
            final WorkCompletion r2 = f.awaitOne(f.b.rcq, "second receive flushed");
            assertEquals(71, r2.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, r2.status);
            f.awaitEvent(f.b.ctx, AsyncEventType.QP_REQ_ERR, f.b.qp.qpNum());
            // nothing written outside the 5000-byte receive buffer
            for (long i = 0; i < 1000; i++) {
                assertEquals(0, f.b.buf.get(ValueLayout.JAVA_BYTE, i));
            }
            for (long i = 6000; i < 200_000; i++) {
                if (f.b.buf.get(ValueLayout.JAVA_BYTE, i) != 0) {
                    fail("byte " + i + " outside the receive buffer was written");
                }
            }
        }
    }

    // ---------------- local errors ----------------

    enum LocalFault { UNKNOWN_LKEY, OTHER_PD_LKEY, SGE_OUT_OF_MR, DEREGISTERED_LKEY }

    @ParameterizedTest
    @EnumSource(LocalFault.class)
    void localProtectionErrorOnWrite(final LocalFault fault) {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            Fixture.fill(f.a.buf, 41);
            final MemorySegment bBefore = snapshot(f.b.buf);
            final SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .wrId(1).remote(f.b.mr.address(), f.b.mr.rkey());
            switch (fault) {
                case UNKNOWN_LKEY -> wr.sge(f.a.mr.address(), 100, f.a.mr.lkey() ^ 0x100);
                case OTHER_PD_LKEY -> {
                    final MemoryRegion other = f.a.ctx.allocPd().registerMr(f.a.buf.asSlice(0, 4096),
                        AccessFlags.LOCAL_WRITE);
                    wr.sge(other, 0, 100);
                }
                case SGE_OUT_OF_MR -> wr.sge(f.a.mr, BUF - 50, 100);
                default -> {
                    final MemoryRegion tmp = f.a.pd.registerMr(f.a.buf.asSlice(0, 4096), AccessFlags.LOCAL_WRITE);
                    wr.sge(tmp, 0, 100);
                    tmp.deregister();
                }
            }
            f.a.qp.postSend(wr.next(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(2)
                .sge(f.a.mr, 0, 64).remote(f.b.mr.address() + 4096, f.b.mr.rkey())));
            final List<WorkCompletion> wcs = f.awaitN(f.a.scq, 2, "completions");
            assertEquals(1, wcs.get(0).wrId);
            assertEquals(WcStatus.LOC_PROT_ERR, wcs.get(0).status, () -> WcStatus.name(wcs.get(0).status));
            assertEquals(2, wcs.get(1).wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, wcs.get(1).status);
            assertEquals(QpState.ERR, f.a.qp.state());
            f.settle(1000);
            Fixture.assertBytes(bBefore, f.b.buf, "remote memory");
            assertEquals(QpState.RTS, f.b.qp.state(), "a local error does not concern the responder");
        }
    }

    @Test
    void readIntoMrWithoutLocalWriteIsLocalProtectionError() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            Fixture.fill(f.b.buf, 51);
            final MemorySegment local = f.arena.allocate(8192, 4096);
            Fixture.fill(local, 52);
            final MemorySegment before = snapshot(local);
            final MemoryRegion ro = f.a.pd.registerMr(local, AccessFlags.REMOTE_READ);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(5)
                .sge(ro, 0, 4096).remote(f.b.mr.address(), f.b.mr.rkey()));
            final WorkCompletion wc = f.awaitOne(f.a.scq, "READ completion");
            assertEquals(5, wc.wrId);
            assertEquals(WcStatus.LOC_PROT_ERR, wc.status, () -> WcStatus.name(wc.status));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).wrId(6)
                .sge(ro, 0, 8).remote(f.b.mr.address(), f.b.mr.rkey()).atomic(1, 0));
            assertEquals(WcStatus.WR_FLUSH_ERR, f.awaitOne(f.a.scq, "flush").status);
            f.settle(1000);
            Fixture.assertBytes(before, local, "local memory without LOCAL_WRITE");
        }
    }

    @Test
    void atomicIntoMrWithoutLocalWriteIsLocalProtectionError() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            f.b.buf.set(ValueLayout.JAVA_LONG, 0, 1000);
            final MemorySegment local = f.arena.allocate(4096, 4096);
            final MemoryRegion ro = f.a.pd.registerMr(local, AccessFlags.REMOTE_READ);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                .wrId(5).sge(ro, 0, 8).remote(f.b.mr.address(), f.b.mr.rkey()).atomic(1, 0));
            final WorkCompletion wc = f.awaitOne(f.a.scq, "ATOMIC completion");
            assertEquals(WcStatus.LOC_PROT_ERR, wc.status, () -> WcStatus.name(wc.status));
            f.settle(1000);
            assertEquals(0, local.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(1000, f.b.buf.get(ValueLayout.JAVA_LONG, 0), "never executed remotely");
        }
    }

    // ---------------- deregistration ----------------

    @ParameterizedTest
    @EnumSource(value = Op.class)
    void staleRkeyAfterDeregistrationIsRemoteAccessError(final Op op) {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            final MemorySegment target = f.arena.allocate(65536, 4096);
            Fixture.fill(target, 61);
            Fixture.fill(f.a.buf, 62);
            final MemoryRegion mr = f.b.pd.registerMr(target, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            // it works while registered
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, 64).remote(mr.address(), mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE before deregistration");
            Fixture.assertBytes(f.a.buf.asSlice(0, 64), target.asSlice(0, 64), "first write");
            final int staleKey = mr.rkey();
            mr.deregister();
            final VerbsException twice = assertThrows(VerbsException.class, mr::deregister);
            assertEquals(Errno.EINVAL, twice.errno());
            final MemoryRegion fresh = f.b.pd.registerMr(f.arena.allocate(4096, 4096), AccessFlags.LOCAL_WRITE);
            assertNotEquals(staleKey, fresh.rkey(), "a new MR never reuses a stale key");

            final MemorySegment targetBefore = snapshot(target);
            final MemorySegment aBefore = snapshot(f.a.buf);
            final int len = op.atomic() ? 8 : 20_000;
            f.a.qp.postSend(new SendWorkRequest().opcode(op.opcode).flags(SendFlags.SIGNALED).wrId(2)
                .sge(f.a.mr, 0, len).remote(mr.address() + 4096, staleKey).atomic(3, 4));
            final WorkCompletion wc = f.awaitOne(f.a.scq, "completion with stale rkey");
            assertEquals(2, wc.wrId);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status, () -> WcStatus.name(wc.status));
            f.awaitEvent(f.b.ctx, AsyncEventType.QP_ACCESS_ERR, f.b.qp.qpNum());
            f.settle(1000);
            Fixture.assertBytes(targetBefore, target, "deregistered memory");
            Fixture.assertBytes(aBefore, f.a.buf, "local memory");
        }
    }

    enum Op {
        WRITE(WrOpcode.RDMA_WRITE), READ(WrOpcode.RDMA_READ), FETCH_ADD(WrOpcode.ATOMIC_FETCH_AND_ADD);

        final int opcode;

        Op(final int opcode) {
            this.opcode = opcode;
        }

        boolean atomic() {
            return WrOpcode.isAtomic(opcode);
        }
    }

    // ---------------- CQ overflow ----------------

    @Test
    void sendCqOverflowIsReportedNeverSilent() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            final CompletionQueue small = f.a.ctx.createCq(4);
            final int cap = small.capacity();
            final QueuePair qa = f.a.pd.createQp(new QpInitAttr().cqs(small, f.a.rcq));
            final QueuePair qb = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, f.b.rcq));
            QpBringUp.connect(qa, f.a.dev.lid(), 7, qb, f.b.dev.lid(), 9, QpBringUp.rcDefaults());
            Fixture.fill(f.a.buf, 71);
            final int n = cap + 12;
            SendWorkRequest chain = null;
            for (int i = n - 1; i >= 0; i--) {
                chain = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(i)
                    .sge(f.a.mr, i * 256L, 256).remote(f.b.mr.address() + i * 256L, f.b.mr.rkey()).next(chain);
            }
            qa.postSend(chain);
            f.awaitEvent(f.a.ctx, AsyncEventType.CQ_ERR, ((SoftCq) small).handle);
            f.await(() -> qa.state() == QpState.ERR, "QP in ERR after CQ overflow");
            final List<WorkCompletion> got = new ArrayList<>();
            final WorkCompletion[] wc = {new WorkCompletion()};
            VerbsException eio = null;
            for (int round = 0; round < 100_000 && eio == null; round++) {
                try {
                    if (small.poll(wc) == 1) {
                        final WorkCompletion c = new WorkCompletion();
                        c.copyFrom(wc[0]);
                        got.add(c);
                    } else {
                        f.driver.progress();
                    }
                } catch (final VerbsException e) {
                    eio = e;
                }
            }
            assertTrue(eio != null, "poll never reported the overflow; got " + got);
            assertEquals(Errno.EIO, eio.errno());
            assertTrue(got.size() >= cap && got.size() < n, "completions that fit: " + got.size());
            for (int i = 0; i < cap; i++) {
                assertEquals(i, got.get(i).wrId);
                assertEquals(WcStatus.SUCCESS, got.get(i).status);
                Fixture.assertBytes(f.a.buf.asSlice(i * 256L, 256), f.b.buf.asSlice(i * 256L, 256), "write " + i);
            }
            long prev = cap - 1;
            for (int i = cap; i < got.size(); i++) {
                assertTrue(got.get(i).wrId > prev, "in order: " + got);
                assertNotEquals(WcStatus.SUCCESS, got.get(i).status, "only completions that fit may succeed");
                prev = got.get(i).wrId;
            }
            // stays in error
            assertThrows(VerbsException.class, () -> small.poll(new WorkCompletion[] {new WorkCompletion()}));
        }
    }

    @Test
    void recvCqOverflowIsReportedNeverSilent() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            final CompletionQueue small = f.b.ctx.createCq(2);
            final QueuePair qa = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final QueuePair qb = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, small));
            QpBringUp.connect(qa, f.a.dev.lid(), 7, qb, f.b.dev.lid(), 9, QpBringUp.rcDefaults());
            for (int i = 0; i < 6; i++) {
                qb.postRecv(new RecvWorkRequest().wrId(100 + i).sge(f.b.mr, i * 128L, 128));
            }
            for (int i = 0; i < 6; i++) {
                qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).wrId(i).sge(f.a.mr, 0, 16));
            }
            f.awaitEvent(f.b.ctx, AsyncEventType.CQ_ERR, ((SoftCq) small).handle);
            f.await(() -> qb.state() == QpState.ERR, "responder QP in ERR after CQ overflow");
            final WorkCompletion[] wc = {new WorkCompletion()};
            int polled = 0;
            VerbsException eio = null;
            for (int round = 0; round < 100_000 && eio == null; round++) {
                try {
                    polled += small.poll(wc);
                    f.driver.progress();
                } catch (final VerbsException e) {
                    eio = e;
                }
            }
            assertTrue(eio != null, "poll never reported the overflow");
            assertEquals(Errno.EIO, eio.errno());
            assertTrue(polled >= 2 && polled < 6, "polled " + polled);
        }
    }

    // ---------------- posting errors ----------------

    private static Fixture smallQueues() {
        final QpInitAttr init = new QpInitAttr();
        init.cap.maxSendWr(4).maxRecvWr(4).maxSendSge(2).maxRecvSge(2).maxInlineData(32);
        return new Fixture(new SoftNicContext(), BUF, init, QpBringUp.rcDefaults());
    }

    @Test
    void fullSendQueueIsEnomemWithBadWrIndex() {
        try (Fixture f = smallQueues()) {
            assertEquals(4, f.a.qp.queryQp().cap.maxSendWr);
            Fixture.fill(f.a.buf, 81);
            SendWorkRequest chain = null;
            for (int i = 5; i >= 0; i--) {
                chain = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(i)
                    .sge(f.a.mr, i * 1000L, 1000).remote(f.b.mr.address() + i * 1000L, f.b.mr.rkey()).next(chain);
            }
            final SendWorkRequest all = chain;
            final PostException e = assertThrows(PostException.class, () -> f.a.qp.postSend(all));
            assertEquals(Errno.ENOMEM, e.errno());
            assertEquals(4, e.badWrIndex());
            final List<WorkCompletion> wcs = f.awaitN(f.a.scq, 4, "the WRs that were posted");
            for (int i = 0; i < 4; i++) {
                assertEquals(i, wcs.get(i).wrId);
                assertEquals(WcStatus.SUCCESS, wcs.get(i).status);
            }
            f.assertNoCompletion(f.a.scq, "nothing beyond the posted WRs");
            Fixture.assertBytes(f.a.buf.asSlice(0, 4000), f.b.buf.asSlice(0, 4000), "posted writes");
            for (long i = 4000; i < 6000; i++) {
                assertEquals(0, f.b.buf.get(ValueLayout.JAVA_BYTE, i), "unposted WRs not executed");
            }
            assertEquals(QpState.RTS, f.a.qp.state());
        }
    }

    @Test
    void fullRecvQueueIsEnomemWithBadWrIndex() {
        try (Fixture f = smallQueues()) {
            RecvWorkRequest chain = null;
            for (int i = 4; i >= 0; i--) {
                chain = new RecvWorkRequest().wrId(i).sge(f.b.mr, i * 100L, 100).next(chain);
            }
            final RecvWorkRequest all = chain;
            final PostException e = assertThrows(PostException.class, () -> f.b.qp.postRecv(all));
            assertEquals(Errno.ENOMEM, e.errno());
            assertEquals(4, e.badWrIndex());
            // the 4 posted receives are usable, in order
            for (int i = 0; i < 4; i++) {
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).wrId(i).sge(f.a.mr, 0, 10));
            }
            final List<WorkCompletion> r = f.awaitN(f.b.rcq, 4, "receives");
            for (int i = 0; i < 4; i++) {
                assertEquals(i, r.get(i).wrId);
                assertEquals(WcStatus.SUCCESS, r.get(i).status);
            }
        }
    }

    @Test
    void invalidWorkRequestsAreEinvalWithBadWrIndex() {
        try (Fixture f = smallQueues()) {
            Fixture.fill(f.a.buf, 91);
            final SendWorkRequest good = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .wrId(1).sge(f.a.mr, 0, 100).remote(f.b.mr.address(), f.b.mr.rkey());
            // too many SGEs (max_send_sge 2)
            final SendWorkRequest threeSge = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(2)
                .remote(f.b.mr.address(), f.b.mr.rkey());
            threeSge.sge(0).set(f.a.mr, 0, 10);
            threeSge.sge(1).set(f.a.mr, 10, 10);
            threeSge.sge(2).set(f.a.mr, 20, 10);
            threeSge.numSge(3);
            PostException e = assertThrows(PostException.class, () -> f.a.qp.postSend(good.next(threeSge)));
            assertEquals(Errno.EINVAL, e.errno());
            assertEquals(1, e.badWrIndex());
            final WorkCompletion wc = f.awaitSuccess(f.a.scq, "the good WR before the bad one");
            assertEquals(1, wc.wrId);
            Fixture.assertBytes(f.a.buf.asSlice(0, 100), f.b.buf.asSlice(0, 100), "good WR data");

            // inline too long (max_inline_data 32)
            e = assertThrows(PostException.class, () -> f.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND).flags(SendFlags.INLINE).sge(f.a.mr, 0, 33)));
            assertEquals(Errno.EINVAL, e.errno());
            assertEquals(0, e.badWrIndex());
            // inline READ
            e = assertThrows(PostException.class, () -> f.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.RDMA_READ).flags(SendFlags.INLINE).sge(f.a.mr, 0, 8)
                .remote(f.b.mr.address(), f.b.mr.rkey())));
            assertEquals(Errno.EINVAL, e.errno());
            // unknown opcode
            e = assertThrows(PostException.class, () -> f.a.qp.postSend(good.next(null)
                .next(new SendWorkRequest().opcode(42).sge(f.a.mr, 0, 8))));
            assertEquals(Errno.EINVAL, e.errno());
            assertEquals(1, e.badWrIndex());
            f.awaitSuccess(f.a.scq, "good WR of the second chain");
            // atomic with a 4-byte SGE
            e = assertThrows(PostException.class, () -> f.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sge(f.a.mr, 0, 4).remote(f.b.mr.address(), f.b.mr.rkey())));
            assertEquals(Errno.EINVAL, e.errno());
            // unknown send flag
            e = assertThrows(PostException.class, () -> f.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND).flags(1 << 6).sge(f.a.mr, 0, 4)));
            assertEquals(Errno.EINVAL, e.errno());
            // too many receive SGEs
            final RecvWorkRequest r3 = new RecvWorkRequest(3).wrId(1);
            r3.sge(0).set(f.b.mr, 0, 1);
            r3.sge(1).set(f.b.mr, 1, 1);
            r3.sge(2).set(f.b.mr, 2, 1);
            r3.numSge(3);
            e = assertThrows(PostException.class, () -> f.b.qp.postRecv(r3));
            assertEquals(Errno.EINVAL, e.errno());
            assertEquals(0, e.badWrIndex());
            // none of the refused WRs did anything, and the QPs still work
            f.assertNoCompletion(f.a.scq, "refused WRs");
            assertEquals(QpState.RTS, f.a.qp.state());
            assertEquals(QpState.RTS, f.b.qp.state());
        }
    }

    @Test
    void postingBeforeRtsIsRefused() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            final QueuePair qp = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.SEND).sge(f.a.mr, 0, 8);
            PostException e = assertThrows(PostException.class, () -> qp.postSend(wr));
            assertEquals(Errno.EINVAL, e.errno());
            assertEquals(0, e.badWrIndex());
            e = assertThrows(PostException.class,
                () -> qp.postRecv(new RecvWorkRequest().sge(f.a.mr, 0, 8)));
            assertEquals(Errno.EINVAL, e.errno());
            final QpAttr a = QpBringUp.rcDefaults().state(QpState.INIT);
            qp.modify(a, QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            e = assertThrows(PostException.class, () -> qp.postSend(wr));
            assertEquals(Errno.EINVAL, e.errno());
            qp.postRecv(new RecvWorkRequest().sge(f.a.mr, 0, 8)); // receives may be posted in INIT
            f.assertNoCompletion(f.a.scq, "nothing was sent");
        }
    }

    // ---------------- inline ----------------

    @Test
    void inlineDataIsCopiedAtPostTime() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            final MemorySegment src = f.a.buf.asSlice(0, 64);
            Fixture.fill(src, 101);
            final MemorySegment original = snapshot(src);
            f.b.qp.postRecv(new RecvWorkRequest().wrId(5).sge(f.b.mr, 0, 4096));
            final SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.SEND)
                .flags(SendFlags.INLINE | SendFlags.SIGNALED).wrId(1);
            wr.sge(0).set(f.a.mr, 0, 40);
            wr.sge(1).set(f.a.mr, 40, 24);
            wr.numSge(2);
            f.a.qp.postSend(wr);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE)
                .flags(SendFlags.INLINE | SendFlags.SIGNALED).wrId(2).sge(f.a.mr, 0, 64)
                .remote(f.b.mr.address() + 8192, f.b.mr.rkey()));
            // the poster reuses its buffer right away
            Fixture.fill(src, 102);
            wr.sge(0).set(f.a.mr, 100, 40);
            f.awaitSuccess(f.a.scq, "inline SEND");
            f.awaitSuccess(f.a.scq, "inline WRITE");
            final WorkCompletion r = f.awaitSuccess(f.b.rcq, "receive");
            assertEquals(64, r.byteLen);
            Fixture.assertBytes(original, f.b.buf.asSlice(0, 64), "inline SEND data");
            Fixture.assertBytes(original, f.b.buf.asSlice(8192, 64), "inline WRITE data");
        }
    }

    // ---------------- FENCE ----------------

    @Test
    void fencedWriteDoesNotOvertakeRead() {
        try (Fixture f = new Fixture(new SoftNicContext(), 4 << 20)) {
            final int len = 1 << 20;
            Fixture.fill(f.b.buf.asSlice(0, len), 111);
            final MemorySegment old = snapshot(f.b.buf.asSlice(0, len));
            Fixture.fill(f.a.buf.asSlice(2L * len, len), 112);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, len).remote(f.b.mr.address(), f.b.mr.rkey())
                .next(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED | SendFlags.FENCE)
                    .wrId(2).sge(f.a.mr, 2L * len, len).remote(f.b.mr.address(), f.b.mr.rkey())));
            final List<WorkCompletion> wcs = f.awaitN(f.a.scq, 2, "READ and fenced WRITE");
            assertEquals(1, wcs.get(0).wrId);
            assertEquals(WcStatus.SUCCESS, wcs.get(0).status);
            assertEquals(2, wcs.get(1).wrId);
            assertEquals(WcStatus.SUCCESS, wcs.get(1).status);
            Fixture.assertBytes(old, f.a.buf.asSlice(0, len), "READ returns the data from before the WRITE");
            Fixture.assertBytes(f.a.buf.asSlice(2L * len, len), f.b.buf.asSlice(0, len), "WRITE landed");
        }
    }

    @Test
    void fencedAtomicWaitsForEarlierAtomic() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            f.b.buf.set(ValueLayout.JAVA_LONG, 0, 10);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                .wrId(1).sge(f.a.mr, 0, 8).remote(f.b.mr.address(), f.b.mr.rkey()).atomic(5, 0)
                .next(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED | SendFlags.FENCE)
                    .wrId(2).sge(f.a.mr, 8, 8).remote(f.b.mr.address(), f.b.mr.rkey())));
            f.awaitN(f.a.scq, 2, "completions").forEach(w -> assertEquals(WcStatus.SUCCESS, w.status));
            assertEquals(10, f.a.buf.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(15, f.a.buf.get(ValueLayout.JAVA_LONG, 8));
        }
    }

    // ---------------- signaling ----------------

    @Test
    void sqSigAllSignalsEveryWr() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF, new QpInitAttr().sqSigAll(true),
            QpBringUp.rcDefaults())) {
            Fixture.fill(f.a.buf, 121);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(5).sge(f.a.mr, 0, 300)
                .remote(f.b.mr.address(), f.b.mr.rkey()));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(6).sge(f.a.mr, 300, 300)
                .remote(f.b.mr.address() + 300, f.b.mr.rkey()));
            assertEquals(5, f.awaitSuccess(f.a.scq, "unsignaled WRITE with sq_sig_all").wrId);
            assertEquals(6, f.awaitSuccess(f.a.scq, "second").wrId);
            Fixture.assertBytes(f.a.buf.asSlice(0, 600), f.b.buf.asSlice(0, 600), "data");
        }
    }

    @Test
    void unsignaledSuccessHasNoCompletion() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            Fixture.fill(f.a.buf, 131);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(1).sge(f.a.mr, 0, 5000)
                .remote(f.b.mr.address(), f.b.mr.rkey())
                .next(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(2)
                    .sge(f.a.mr, 5000, 10).remote(f.b.mr.address() + 5000, f.b.mr.rkey())));
            assertEquals(2, f.awaitSuccess(f.a.scq, "signaled WRITE").wrId);
            f.assertNoCompletion(f.a.scq, "unsignaled WRITE");
            Fixture.assertBytes(f.a.buf.asSlice(0, 5010), f.b.buf.asSlice(0, 5010), "data");
        }
    }

    @Test
    void solicitedFlagIsAcceptedAndCarried() {
        final AtomicInteger solicitedSeen = new AtomicInteger();
        final AtomicInteger sendPackets = new AtomicInteger();
        final LinkHook hook = (s, d, b, o, l) -> {
            final Packet p = new Packet().wrap(b, o, l);
            if (p.is(BthOpcode.SEND)) {
                sendPackets.incrementAndGet();
                if (p.solicited()) {
                    solicitedSeen.incrementAndGet();
                    assertTrue(p.is(BthOpcode.LAST), "SE only on the last packet");
                }
            }
            return LinkHook.DELIVER;
        };
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(hook), BUF)) {
            Fixture.fill(f.a.buf, 141);
            f.b.qp.postRecv(new RecvWorkRequest().wrId(3).sge(f.b.mr, 0, 20000));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM)
                .flags(SendFlags.SIGNALED | SendFlags.SOLICITED).imm(99).wrId(1).sge(f.a.mr, 0, 10000));
            f.awaitSuccess(f.a.scq, "solicited SEND");
            final WorkCompletion r = f.awaitSuccess(f.b.rcq, "receive");
            assertEquals(10000, r.byteLen);
            assertEquals(99, r.immData);
            Fixture.assertBytes(f.a.buf.asSlice(0, 10000), f.b.buf.asSlice(0, 10000), "data");
            assertEquals(3, sendPackets.get());
            assertEquals(1, solicitedSeen.get());
        }
    }
}
