/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * IBA 1.5 ATOMIC_WRITE and FLUSH as rxe implements them: the request packets on the wire, the placement byte for
 * byte, the zero-length READ response, the access bits on QP and MR, execution once under retransmission, and each
 * error with its completion status or errno.
 */
class PlacementOpcodeTest {
    private static final int BUF = 1 << 16;
    private static final QpAttr FLUSHABLE = QpBringUp.rcDefaults().access(AccessFlags.LOCAL_WRITE
        | AccessFlags.ALL_REMOTE | AccessFlags.FLUSH);

    private static SendWorkRequest atomicWrite(final MemoryRegion src, final long off, final long remote,
                                               final int rkey) {
        return new SendWorkRequest().opcode(WrOpcode.ATOMIC_WRITE).flags(SendFlags.SIGNALED).sge(src, off, 8)
            .remote(remote, rkey);
    }

    @Test
    void atomicWritePlacesTheEightBytesAndCompletesAsAtomicWrite() {
        final AtomicInteger requests = new AtomicInteger();
        final AtomicInteger zeroLengthResponses = new AtomicInteger();
        final Packet seen = new Packet();
        try (Fixture f = new Fixture(new SoftNicContext().linkHook((s, d, b, o, l) -> {
            seen.wrap(b, o, l);
            if (seen.opcode() == BthOpcode.ATOMIC_WRITE && seen.rethDmaLength() == 8 && seen.payloadLength() == 8) {
                requests.incrementAndGet();
            }
            if (seen.opcode() == BthOpcode.RDMA_READ_RESPONSE_ONLY && seen.payloadLength() == 0) {
                zeroLengthResponses.incrementAndGet();
            }
            return LinkHook.DELIVER;
        }), BUF)) {
            for (int i = 0; i < 8; i++) {
                f.a.buf.set(ValueLayout.JAVA_BYTE, 16 + i, (byte) (0xE0 + i));
            }
            f.b.buf.asSlice(0, 32).fill((byte) 0x33);
            f.a.qp.postSend(atomicWrite(f.a.mr, 16, f.b.mr.address() + 8, f.b.mr.rkey()).wrId(77));
            final WorkCompletion wc = f.awaitSuccess(f.a.scq, "ATOMIC_WRITE");
            assertEquals(WcOpcode.ATOMIC_WRITE, wc.opcode);
            assertEquals(77, wc.wrId);
            assertEquals(8, wc.byteLen);
            for (int i = 0; i < 32; i++) {
                final byte want = i >= 8 && i < 16 ? (byte) (0xE0 + i - 8) : 0x33;
                assertEquals(want, f.b.buf.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            assertEquals(1, requests.get(), "one ATOMIC_WRITE packet with RETH length 8 and 8 payload bytes");
            assertEquals(1, zeroLengthResponses.get(), "answered by a zero-length READ response");
        }
    }

    @Test
    void atomicWriteErrors() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF)) {
            // post-time checks: EINVAL, nothing posted
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> f.a.qp.postSend(
                new SendWorkRequest().opcode(WrOpcode.ATOMIC_WRITE).sge(f.a.mr, 0, 4)
                    .remote(f.b.mr.address(), f.b.mr.rkey()))).errno(), "4-byte SGE");
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> f.a.qp.postSend(
                atomicWrite(f.a.mr, 0, f.b.mr.address(), f.b.mr.rkey()).flags(SendFlags.INLINE))).errno(), "INLINE");
            // misaligned: the responder refuses it as an invalid request
            f.a.qp.postSend(atomicWrite(f.a.mr, 0, f.b.mr.address() + 4, f.b.mr.rkey()));
            assertEquals(WcStatus.REM_INV_REQ_ERR, f.awaitOne(f.a.scq, "misaligned").status);
        }
        try (Fixture f = new Fixture(new SoftNicContext(), BUF); Arena arena = Arena.ofShared()) {
            final MemoryRegion readOnly = f.b.pd.registerMr(arena.allocate(64, 8), AccessFlags.LOCAL_WRITE
                | AccessFlags.REMOTE_READ);
            f.a.qp.postSend(atomicWrite(f.a.mr, 0, readOnly.address(), readOnly.rkey()));
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "MR without REMOTE_WRITE").status);
        }
        try (Fixture f = new Fixture(new SoftNicContext(), BUF, new QpInitAttr(),
            QpBringUp.rcDefaults().access(AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_READ))) {
            f.a.qp.postSend(atomicWrite(f.a.mr, 0, f.b.mr.address(), f.b.mr.rkey()));
            assertEquals(WcStatus.REM_INV_REQ_ERR, f.awaitOne(f.a.scq, "QP without REMOTE_WRITE").status);
        }
    }

    @Test
    void aRetransmittedAtomicWriteIsExecutedOnce() {
        final AtomicInteger responses = new AtomicInteger();
        final Packet seen = new Packet();
        // the first response is lost: the requester resends, the responder answers the duplicate without placing
        // the bytes again (the test changes them in between, and the change must survive)
        try (Fixture f = new Fixture(new SoftNicContext().linkHook((s, d, b, o, l) -> {
            seen.wrap(b, o, l);
            return seen.opcode() == BthOpcode.RDMA_READ_RESPONSE_ONLY && responses.getAndIncrement() == 0
                ? LinkHook.DROP : LinkHook.DELIVER;
        }), BUF, new QpInitAttr(), QpBringUp.rcDefaults().timeout(8).retryCnt(7))) {
            f.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x1111_2222_3333_4444L);
            f.a.qp.postSend(atomicWrite(f.a.mr, 0, f.b.mr.address(), f.b.mr.rkey()));
            f.await(() -> f.b.buf.get(ValueLayout.JAVA_LONG, 0) == 0x1111_2222_3333_4444L, "the placement");
            f.b.buf.set(ValueLayout.JAVA_LONG, 0, 42);
            f.awaitSuccess(f.a.scq, "ATOMIC_WRITE after a lost response");
            assertTrue(responses.get() >= 2, "the response was sent again");
            assertEquals(42, f.b.buf.get(ValueLayout.JAVA_LONG, 0), "not placed twice");
        }
    }

    @Test
    void flushCompletesAfterEarlierWritesWithItsAccessBits() {
        final AtomicInteger fethSeen = new AtomicInteger(-1);
        final Packet seen = new Packet();
        try (Fixture f = new Fixture(new SoftNicContext().linkHook((s, d, b, o, l) -> {
            seen.wrap(b, o, l);
            if (seen.opcode() == BthOpcode.FLUSH) {
                fethSeen.set(seen.fethSelectivity() << 4 | seen.fethPlacementType());
            }
            return LinkHook.DELIVER;
        }), BUF, new QpInitAttr(), FLUSHABLE)) {
            final MemoryRegion target = f.b.pd.registerMr(f.b.buf.asSlice(4096, 4096), AccessFlags.LOCAL_WRITE
                | AccessFlags.REMOTE_WRITE | AccessFlags.FLUSH);
            f.a.buf.asSlice(0, 256).fill((byte) 0x6B);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sge(f.a.mr, 0, 256)
                .remote(target.address(), target.rkey()));
            f.a.qp.postSend(new SendWorkRequest().flush(target.address(), target.rkey(), 256,
                SendWorkRequest.FLUSH_GLOBAL, SendWorkRequest.FLUSH_RANGE).flags(SendFlags.SIGNALED).wrId(5));
            final WorkCompletion wc = f.awaitSuccess(f.a.scq, "FLUSH");
            assertEquals(WcOpcode.FLUSH, wc.opcode);
            assertEquals(5, wc.wrId);
            assertEquals(0, wc.byteLen);
            assertEquals(SendWorkRequest.FLUSH_GLOBAL, fethSeen.get(), "FETH: range selectivity, global type");
            assertEquals(-1, f.a.buf.asSlice(0, 256).mismatch(target.segment().asSlice(0, 256)), "written first");
            // the whole MR, persistent and global: the range is not checked
            f.a.qp.postSend(new SendWorkRequest().flush(0, target.rkey(), 0, SendWorkRequest.FLUSH_GLOBAL
                | SendWorkRequest.FLUSH_PERSISTENT, SendWorkRequest.FLUSH_MR).flags(SendFlags.SIGNALED));
            f.awaitSuccess(f.a.scq, "FLUSH of the MR");
            assertEquals(SendWorkRequest.FLUSH_MR << 4 | 3, fethSeen.get());
            // a range outside the MR
            f.a.qp.postSend(new SendWorkRequest().flush(target.address() + 4000, target.rkey(), 200,
                SendWorkRequest.FLUSH_GLOBAL, SendWorkRequest.FLUSH_RANGE).flags(SendFlags.SIGNALED));
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "FLUSH past the MR").status);
        }
    }

    @Test
    void flushErrors() {
        try (Fixture f = new Fixture(new SoftNicContext(), BUF, new QpInitAttr(), FLUSHABLE)) {
            final long addr = f.b.mr.address();
            final int rkey = f.b.mr.rkey();
            for (final int[] bad : new int[][] {{0, 0}, {4, 0}, {1, 2}}) {
                final PostException e = assertThrows(PostException.class, () -> f.a.qp.postSend(
                    new SendWorkRequest().flush(addr, rkey, 8, bad[0], bad[1])));
                assertEquals(Errno.EINVAL, e.errno(), "type " + bad[0] + " level " + bad[1]);
            }
            final SendWorkRequest withSge = new SendWorkRequest().flush(addr, rkey, 8, 1, 0);
            withSge.sge(f.a.mr, 0, 8);
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> f.a.qp.postSend(withSge)).errno());
            assertEquals(Errno.EINVAL, assertThrows(PostException.class, () -> f.a.qp.postSend(
                new SendWorkRequest().flush(addr, rkey, 8, 1, 0).flags(SendFlags.INLINE))).errno(), "INLINE");
            // the fixture's MR has no FLUSH bit: REM_ACCESS_ERR
            f.a.qp.postSend(new SendWorkRequest().flush(addr, rkey, 8, SendWorkRequest.FLUSH_GLOBAL,
                SendWorkRequest.FLUSH_RANGE).flags(SendFlags.SIGNALED));
            assertEquals(WcStatus.REM_ACCESS_ERR, f.awaitOne(f.a.scq, "MR without FLUSH_GLOBAL").status);
        }
        try (Fixture f = new Fixture(new SoftNicContext(), BUF, new QpInitAttr(),
            QpBringUp.rcDefaults().access(AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE
                | AccessFlags.FLUSH_GLOBAL)); Arena arena = Arena.ofShared()) {
            final MemorySegment m = arena.allocate(64);
            final MemoryRegion target = f.b.pd.registerMr(m, AccessFlags.LOCAL_WRITE | AccessFlags.FLUSH);
            f.a.qp.postSend(new SendWorkRequest().flush(target.address(), target.rkey(), 8,
                SendWorkRequest.FLUSH_PERSISTENT, SendWorkRequest.FLUSH_RANGE).flags(SendFlags.SIGNALED));
            assertEquals(WcStatus.REM_INV_REQ_ERR, f.awaitOne(f.a.scq, "QP without FLUSH_PERSISTENT").status);
        }
    }
}
