/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.MemoryWindow;
import io.gdrkit.verbs.MwBind;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpBringUp;
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
import org.junit.jupiter.api.Test;

/**
 * Memory windows type 1 and 2 (IB spec 10.6.7, libibverbs ibv_alloc_mw/ibv_bind_mw, rxe): remote access through
 * the window's rkey byte for byte, checks against both the window and the MR, invalidation (LOCAL_INV, a peer's
 * SEND_WITH_INV), the QP a type 2 window is bound to, and every error with its status or errno.
 */
class MemoryWindowTest {
    private static final int BUF = 1 << 16;
    private static final int WINDOWABLE = AccessFlags.LOCAL_WRITE | AccessFlags.MW_BIND;

    private static void write(final Fixture f, final long off, final int len, final long remote, final int rkey,
                              final long wrId) {
        f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(wrId)
            .sge(f.a.mr, off, len).remote(remote, rkey));
    }

    private static void assertErrno(final int errno, final Runnable r, final String what) {
        final VerbsException e = assertThrows(VerbsException.class, r::run, what);
        assertEquals(Errno.name(errno), Errno.name(e.errno()), () -> what + ": " + e.getMessage());
    }

    @Test
    void aType1WindowGrantsItsRangeAndARebindRevokesTheOldRkey() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF); Arena arena = Arena.ofShared()) {
            final MemorySegment mem = arena.allocate(4096);
            final MemoryRegion mr = f.b.pd.registerMr(mem, WINDOWABLE); // no remote access of its own
            final MemoryWindow mw = f.b.pd.allocMw(MemoryWindow.TYPE_1);
            final int unbound = mw.rkey();
            f.b.qp.bindMw(mw, new MwBind().wrId(31).flags(SendFlags.SIGNALED).range(mr, mem.address() + 1024, 256,
                AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_READ));
            assertNotEquals(unbound, mw.rkey(), "ibv_bind_mw gives the window its next rkey");
            assertEquals(unbound & ~0xFF, mw.rkey() & ~0xFF, "same index, next key");
            final WorkCompletion bind = f.awaitSuccess(f.b.scq, "bind");
            assertEquals(WcOpcode.BIND_MW, bind.opcode);
            assertEquals(31, bind.wrId);
            for (int i = 0; i < 256; i++) {
                f.a.buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 3 + 1));
            }
            write(f, 0, 256, mem.address() + 1024, mw.rkey(), 1);
            f.awaitSuccess(f.a.scq, "WRITE through the window");
            assertEquals(-1, mem.asSlice(1024, 256).mismatch(f.a.buf.asSlice(0, 256)), "placed byte for byte");
            assertEquals(0, mem.get(ValueLayout.JAVA_BYTE, 1023), "nothing before the window");
            assertEquals(0, mem.get(ValueLayout.JAVA_BYTE, 1280), "nothing after it");
            // READ through it too
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 4096, 16).remote(mem.address() + 1024, mw.rkey()));
            f.awaitSuccess(f.a.scq, "READ through the window");
            assertEquals(-1, f.a.buf.asSlice(4096, 16).mismatch(mem.asSlice(1024, 16)));
            // the MR cannot go while the window is bound
            assertErrno(Errno.EBUSY, mr::deregister, "dereg with a bound window");
            assertErrno(Errno.EBUSY, () -> mr.reregMr(MemoryRegion.REREG_CHANGE_ACCESS, null, null,
                AccessFlags.LOCAL_WRITE), "rereg with a bound window");
            // rebind elsewhere: the old rkey is dead, the new one works
            final int old = mw.rkey();
            f.b.qp.bindMw(mw, new MwBind().flags(SendFlags.SIGNALED).range(mr, mem.address(), 64,
                AccessFlags.REMOTE_WRITE));
            f.awaitSuccess(f.b.scq, "rebind");
            write(f, 0, 8, mem.address(), mw.rkey(), 2);
            f.awaitSuccess(f.a.scq, "WRITE through the new rkey");
            write(f, 0, 8, mem.address() + 1024, old, 3);
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "the old rkey").status);
            mw.close();
            mr.deregister(); // no window any more
        }
    }

    @Test
    void accessIsCheckedAgainstTheWindowAndTheMr() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF); Arena arena = Arena.ofShared()) {
            final MemorySegment mem = arena.allocate(4096);
            final MemoryRegion mr = f.b.pd.registerMr(mem, WINDOWABLE);
            final MemoryWindow mw = f.b.pd.allocMw(MemoryWindow.TYPE_1);
            f.b.qp.bindMw(mw, new MwBind().flags(SendFlags.SIGNALED).range(mr, mem.address(), 128,
                AccessFlags.REMOTE_READ));
            f.awaitSuccess(f.b.scq, "read-only bind");
            write(f, 0, 8, mem.address(), mw.rkey(), 1);
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "WRITE through a read-only window").status);
        }
        try (Fixture f = new Fixture(new SoftNicContext(), BUF); Arena arena = Arena.ofShared()) {
            final MemorySegment mem = arena.allocate(4096);
            final MemoryRegion mr = f.b.pd.registerMr(mem, WINDOWABLE);
            final MemoryWindow mw = f.b.pd.allocMw(MemoryWindow.TYPE_1);
            f.b.qp.bindMw(mw, new MwBind().flags(SendFlags.SIGNALED).range(mr, mem.address(), 128,
                AccessFlags.REMOTE_WRITE));
            f.awaitSuccess(f.b.scq, "bind");
            write(f, 0, 8, mem.address() + 124, mw.rkey(), 1);
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "WRITE past the window").status);
        }
        try (Fixture f = new Fixture(new SoftNicContext(), BUF); Arena arena = Arena.ofShared()) {
            final MemorySegment mem = arena.allocate(4096);
            final MemoryRegion noBind = f.b.pd.registerMr(mem, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final MemoryWindow mw = f.b.pd.allocMw(MemoryWindow.TYPE_1);
            f.b.qp.bindMw(mw, new MwBind().wrId(9).range(noBind, mem.address(), 64, AccessFlags.REMOTE_READ));
            final WorkCompletion wc = f.awaitOne(f.b.scq, "bind on an MR without MW_BIND");
            assertEquals(WcStatus.MW_BIND_ERR, wc.status);
            assertEquals(QpState.ERR, f.b.qp.state(), "a failed bind moves the QP to ERR");
        }
        try (Fixture f = new Fixture(new SoftNicContext(), BUF); Arena arena = Arena.ofShared()) {
            final MemorySegment mem = arena.allocate(4096);
            final MemoryRegion readOnly = f.b.pd.registerMr(mem, AccessFlags.MW_BIND);
            final MemoryWindow mw = f.b.pd.allocMw(MemoryWindow.TYPE_1);
            f.b.qp.bindMw(mw, new MwBind().range(readOnly, mem.address(), 64, AccessFlags.REMOTE_WRITE));
            assertEquals(WcStatus.MW_BIND_ERR, f.awaitOne(f.b.scq, "remote write on an MR without LOCAL_WRITE")
                .status);
            // a bind on a QP in ERR is flushed
            f.b.qp.bindMw(mw, new MwBind().range(readOnly, mem.address(), 64, AccessFlags.REMOTE_READ));
            assertEquals(WcStatus.WR_FLUSH_ERR, f.awaitOne(f.b.scq, "bind in ERR").status);
        }
    }

    @Test
    void aType2WindowWorksOnlyThroughItsQpAndIsInvalidatedLocallyOrByTheSender() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF); Arena arena = Arena.ofShared()) {
            final MemorySegment mem = arena.allocate(4096);
            final MemoryRegion mr = f.b.pd.registerMr(mem, WINDOWABLE);
            final MemoryWindow mw = f.b.pd.allocMw(MemoryWindow.TYPE_2);
            final int rkey = (mw.rkey() & ~0xFF) | 0x42;
            f.b.qp.postSend(new SendWorkRequest().bindMw(mw, rkey, mr, mem.address(), 512, AccessFlags.REMOTE_WRITE)
                .flags(SendFlags.SIGNALED).wrId(4));
            assertEquals(WcOpcode.BIND_MW, f.awaitSuccess(f.b.scq, "type 2 bind").opcode);
            f.a.buf.asSlice(0, 64).fill((byte) 0x5D);
            write(f, 0, 64, mem.address() + 64, rkey, 1);
            f.awaitSuccess(f.a.scq, "WRITE through the bound QP");
            assertEquals(-1, mem.asSlice(64, 64).mismatch(f.a.buf.asSlice(0, 64)));
            // another QP pair between the same devices: the window is not theirs
            final QueuePair qa2 = f.a.pd.createQp(new QpInitAttr().cqs(f.a.scq, f.a.rcq));
            final QueuePair qb2 = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, f.b.rcq));
            QpBringUp.connect(qa2, f.a.dev.lid(), 5, qb2, f.b.dev.lid(), 6, QpBringUp.rcDefaults());
            qa2.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 8).remote(mem.address(), rkey));
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "WRITE through another QP").status);
            // a bound type 2 window cannot be bound again before it is invalidated
            f.b.qp.postSend(new SendWorkRequest().opcode(WrOpcode.LOCAL_INV).invalidate(rkey)
                .flags(SendFlags.SIGNALED).wrId(6));
            final WorkCompletion inv = f.awaitSuccess(f.b.scq, "LOCAL_INV");
            assertEquals(WcOpcode.LOCAL_INV, inv.opcode);
            write(f, 0, 8, mem.address(), rkey, 2);
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "WRITE after LOCAL_INV").status);
        }
        try (Fixture f = new Fixture(new SoftNicContext(), BUF); Arena arena = Arena.ofShared()) {
            final MemorySegment mem = arena.allocate(4096);
            final MemoryRegion mr = f.b.pd.registerMr(mem, WINDOWABLE);
            final MemoryWindow mw = f.b.pd.allocMw(MemoryWindow.TYPE_2);
            final int rkey = (mw.rkey() & ~0xFF) | 0x07;
            f.b.qp.postSend(new SendWorkRequest().bindMw(mw, rkey, mr, mem.address(), 512, AccessFlags.REMOTE_WRITE)
                .flags(SendFlags.SIGNALED));
            f.awaitSuccess(f.b.scq, "type 2 bind");
            // the sender invalidates it with its SEND
            f.b.qp.postRecv(new RecvWorkRequest().wrId(70).sge(f.b.mr, 0, 64));
            f.a.buf.asSlice(0, 16).fill((byte) 0x21);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND_WITH_INV).invalidate(rkey)
                .flags(SendFlags.SIGNALED).sge(f.a.mr, 0, 16));
            assertEquals(WcOpcode.SEND, f.awaitSuccess(f.a.scq, "SEND_WITH_INV").opcode);
            final WorkCompletion r = f.awaitSuccess(f.b.rcq, "receive of SEND_WITH_INV");
            assertEquals(WorkCompletion.WITH_INV, r.wcFlags & WorkCompletion.WITH_INV);
            assertEquals(rkey, r.invalidatedRkey());
            assertEquals(16, r.byteLen);
            assertEquals(0x21, f.b.buf.get(ValueLayout.JAVA_BYTE, 15));
            write(f, 0, 8, mem.address(), rkey, 3);
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "WRITE after SEND_WITH_INV").status);
        }
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            // SEND_WITH_INV of an MR's rkey: the responder refuses it
            f.b.qp.postRecv(new RecvWorkRequest().wrId(71).sge(f.b.mr, 0, 64));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND_WITH_INV).invalidate(f.b.mr.rkey())
                .flags(SendFlags.SIGNALED).sge(f.a.mr, 0, 8));
            assertEquals(WcStatus.REM_INV_REQ_ERR, f.awaitOne(f.a.scq, "SEND_WITH_INV of an MR").status);
            assertEquals(WcStatus.REM_INV_REQ_ERR, f.awaitOne(f.b.rcq, "its receive").status);
        }
    }

    @Test
    void postTimeErrors() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF); Arena arena = Arena.ofShared()) {
            final MemorySegment mem = arena.allocate(4096);
            final MemoryRegion mr = f.b.pd.registerMr(mem, WINDOWABLE);
            assertErrno(Errno.EINVAL, () -> f.b.pd.allocMw(3), "type 3");
            final MemoryWindow t1 = f.b.pd.allocMw(MemoryWindow.TYPE_1);
            final MemoryWindow t2 = f.b.pd.allocMw(MemoryWindow.TYPE_2);
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> f.b.qp.bindMw(t2, new MwBind()
                .range(mr, mem.address(), 8, AccessFlags.REMOTE_READ))).errno(), "ibv_bind_mw of type 2");
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> f.b.qp.postSend(new SendWorkRequest()
                .bindMw(t1, t1.rkey(), mr, mem.address(), 8, AccessFlags.REMOTE_READ))).errno(), "WR bind of type 1");
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> f.a.qp.bindMw(t1, new MwBind()
                .range(mr, mem.address(), 8, AccessFlags.REMOTE_READ))).errno(), "window of another device");
            final SendWorkRequest withSge = new SendWorkRequest().opcode(WrOpcode.LOCAL_INV).invalidate(1);
            withSge.sge(f.b.mr, 0, 8);
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> f.b.qp.postSend(withSge)).errno());
            // a QP in RESET cannot bind
            final QueuePair fresh = f.b.pd.createQp(new QpInitAttr().cqs(f.b.scq, f.b.rcq));
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> fresh.bindMw(t1, new MwBind()
                .range(mr, mem.address(), 8, AccessFlags.REMOTE_READ))).errno(), "bind in RESET");
            // a type 2 bind whose rkey names another window's index: MW_BIND_ERR at execution
            f.b.qp.postSend(new SendWorkRequest().bindMw(t2, t1.rkey() ^ 0x100, mr, mem.address(), 8,
                AccessFlags.REMOTE_READ).flags(SendFlags.SIGNALED));
            assertEquals(WcStatus.MW_BIND_ERR, f.awaitOne(f.b.scq, "rkey of another index").status);
            final QpAttr err = new QpAttr().state(QpState.RESET);
            fresh.modify(err, QpAttrMask.STATE);
        }
    }
}
