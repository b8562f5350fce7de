/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.softnic.fabric.TcpFabricContext;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

/**
 * Zero copy onto the TCP fabric's socket: a WRITE's or SEND's record holds its headers only and the payload is written
 * from the MR when the socket takes it ({@code FabricPort.deferrablePieces}). Every byte arrives, from one SGE and from
 * several MRs, through a socket that takes little at a time; the copy path (gdrkit.nic.onecopy off) sends the same;
 * an MR deregistered while its records wait for the socket has its bytes copied first (they arrive as they were, not
 * as the memory reads after it was closed), and memory closed under a WR in flight is never read (zeros, no crash).
 */
class TcpZeroCopyTest {
    private static final int MTU = 4096;

    private static final class Side {
        final SoftDevice dev;
        final VerbsContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;

        Side(final SoftDevice dev) {
            this.dev = dev;
            ctx = dev.open();
            pd = ctx.allocPd();
            cq = ctx.createCq(256);
        }
    }

    /** Two NICs over TCP without link CRC or hook (where payloads are deferred), progressed by the test thread. */
    private static final class Pair implements AutoCloseable {
        final SoftNicDriver da;
        final SoftNicDriver db;
        final Side a;
        final Side b;
        final QueuePair qa;
        final QueuePair qb;

        Pair(final SoftNicContext ctx, final TcpFabricContext tcp) {
            final InetSocketAddress lo = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
            final TcpFabric fa = new TcpFabric(lo, 4 << 20, null, false, 1, io.gdrkit.core.auth.Token.fromProcess(),
                tcp);
            final TcpFabric fb = new TcpFabric(lo, 4 << 20, null, false, 1, io.gdrkit.core.auth.Token.fromProcess(),
                tcp);
            da = SoftNicDriver.launch(ctx, fa);
            db = SoftNicDriver.launch(new SoftNicContext(), fb);
            a = new Side(da.addDevice("zc-a", 1));
            b = new Side(db.addDevice("zc-b", 2));
            fa.connect(2, fb.localAddress());
            qa = a.pd.createQp(new QpInitAttr().cqs(a.cq, a.cq));
            qb = b.pd.createQp(new QpInitAttr().cqs(b.cq, b.cq));
            QpBringUp.toRts(qa, qb.qpNum(), 2, 100, 900, QpBringUp.rcDefaults());
            QpBringUp.toRts(qb, qa.qpNum(), 1, 900, 100, QpBringUp.rcDefaults());
        }

        WorkCompletion await(final CompletionQueue cq, final String what) {
            return TcpFabricTest.await(cq, da, db, what);
        }

        @Override
        public void close() {
            da.close();
            db.close();
        }
    }

    /** Bytes 100..196: neither the destination's 0x5a nor the zeros of memory closed under a send. */
    private static void pattern(final MemorySegment s, final int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (100 + (i * 31 + seed) % 97));
        }
    }

    private static void assertPattern(final MemorySegment s, final long from, final long to, final int seed,
                                      final String what) {
        for (long i = from; i < to; i++) {
            final byte want = (byte) (100 + (i * 31 + seed) % 97);
            final byte got = s.get(ValueLayout.JAVA_BYTE, i);
            if (got != want) {
                throw new AssertionError(what + ": byte " + i + " is " + got + ", sent " + want);
            }
        }
    }

    /**
     * A WRITE_WITH_IMM of 4 MiB and 5 bytes from one MR, a WRITE gathered from two MRs, a SEND of 300 KiB and 3.
     */
    private static long[] transfer(final SoftNicContext ctx, final TcpFabricContext tcp) {
        try (Pair p = new Pair(ctx, tcp); Arena arena = Arena.ofShared()) {
            final int write = (4 << 20) + 5;
            final int send = 300 * 1024 + 3;
            final MemorySegment src = arena.allocate(6L << 20, 4096);
            final MemorySegment second = arena.allocate(100_003, 64);
            final MemorySegment dst = arena.allocate(6L << 20, 4096);
            pattern(src, 1);
            pattern(second, 2);
            dst.fill((byte) 0x5a);
            final MemoryRegion ma = p.a.pd.registerMr(src, AccessFlags.LOCAL_WRITE);
            final MemoryRegion ma2 = p.a.pd.registerMr(second, AccessFlags.LOCAL_WRITE);
            final MemoryRegion mb = p.b.pd.registerMr(dst, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            p.qb.postRecv(new RecvWorkRequest().wrId(10).sge(mb, 0, 0)); // the WRITE_WITH_IMM's, taken first
            p.qb.postRecv(new RecvWorkRequest().wrId(9).sge(mb, 5L << 20, send));
            // the gathered WRITE's last span is 38 929 bytes, an odd length read straight into the MR: what follows it
            // (the SEND) starts at a stream offset that is no multiple of 8 past the headers
            final SendWorkRequest gathered = new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE)
                .flags(SendFlags.SIGNALED).remote(mb.address() + (4L << 20) + 8, mb.rkey()).numSge(2);
            gathered.sge(0).set(ma, 4096, 70_001);
            gathered.sge(1).set(ma2, 3, 100_000);
            gathered.next(new SendWorkRequest().wrId(3).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(ma, 5L << 20, send));
            p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).imm(0x1234)
                .flags(SendFlags.SIGNALED).sge(ma, 0, write).remote(mb.address(), mb.rkey()).next(gathered));
            for (int i = 1; i <= 3; i++) {
                final WorkCompletion wc = p.await(p.a.cq, "completion " + i);
                assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
                assertEquals(i, wc.wrId, "in order");
            }
            final WorkCompletion imm = p.await(p.b.cq, "the WRITE_WITH_IMM's receive");
            assertEquals(WcStatus.SUCCESS, imm.status, imm::toString);
            assertEquals(10, imm.wrId, imm::toString);
            assertEquals(0x1234, imm.immData, imm::toString);
            final WorkCompletion recv = p.await(p.b.cq, "the SEND's receive");
            assertEquals(WcStatus.SUCCESS, recv.status, recv::toString);
            assertEquals(send, recv.byteLen);
            Fixture.assertBytes(src.asSlice(0, write), dst.asSlice(0, write), "the WRITE");
            assertEquals((byte) 0x5a, dst.get(ValueLayout.JAVA_BYTE, write), "not one byte more");
            Fixture.assertBytes(src.asSlice(5L << 20, send), dst.asSlice(5L << 20, send), "the SEND");
            final long at = (4L << 20) + 8;
            Fixture.assertBytes(src.asSlice(4096, 70_001), dst.asSlice(at, 70_001), "the gathered WRITE's first MR");
            Fixture.assertBytes(second.asSlice(3, 100_000), dst.asSlice(at + 70_001, 100_000),
                "the gathered WRITE's second MR");
            assertEquals((byte) 0x5a, dst.get(ValueLayout.JAVA_BYTE, at + 170_001), "not one byte more");
            return new long[] {p.a.dev.port.deferredSent(), p.b.dev.port.directReceived()};
        }
    }

    @Test
    void everyByteArrivesWrittenFromTheMr() {
        final long[] n = transfer(new SoftNicContext(), new TcpFabricContext().conclude());
        assertTrue(n[0] >= 16, "records sent from the MR: " + n[0]);
    }

    @Test
    void aSocketThatTakesLittleAtATimeGetsEveryByte() {
        // 4 KiB socket buffers (the kernel's minimum where it asks less): a record's frame, headers and payload
        // are written over many calls, cut anywhere, and the receiver has a span's headers long before its payload:
        // it reads the payload straight into the MR
        final long[] n = transfer(new SoftNicContext(), new TcpFabricContext().sendBuffer(4096)
            .receiveBuffer(4096).conclude());
        assertTrue(n[0] >= 16, "records sent from the MR: " + n[0]);
        assertTrue(n[1] > 0, "payloads read straight into the MR: " + n[1]);
    }

    @Test
    void withDirectMinZeroEveryPayloadArrivesInTheBufferFirst() {
        final long[] n = transfer(new SoftNicContext(), new TcpFabricContext().sendBuffer(4096).receiveBuffer(4096)
            .directMin(0).conclude());
        assertEquals(0, n[1], "gdrkit.tcp.direct.min=0: nothing read straight into the MR");
    }

    @Test
    void theCopyPathSendsTheSameBytes() {
        assertEquals(0, transfer(new SoftNicContext().oneCopy(false), new TcpFabricContext().conclude())[0],
            "gdrkit.nic.onecopy=false copies into the link");
    }

    /**
     * Posts a WRITE of all of {@code src} (its pattern from {@code seed}) into {@code dst} (0x5a) and moves a's NIC a
     * little: its records go into the link while b does not read yet, so the socket fills and records wait with their
     * payload in the MR. Returns a's MR.
     */
    private static MemoryRegion writeUnderway(final Pair p, final MemorySegment src, final MemorySegment dst,
                                              final int seed) {
        pattern(src, seed);
        dst.fill((byte) 0x5a);
        final MemoryRegion ma = p.a.pd.registerMr(src, AccessFlags.LOCAL_WRITE);
        final MemoryRegion mb = p.b.pd.registerMr(dst, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
        p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .sge(ma, 0, (int) src.byteSize()).remote(mb.address(), mb.rkey()));
        for (int i = 0; i < 40; i++) {
            p.da.progress();
        }
        return ma;
    }

    /**
     * 16 MiB WRITE posted and progressed a little, so records wait for the socket with their payload in the MR; then
     * the MR is deregistered and its memory overwritten and closed. What reaches the peer is the bytes as posted (or
     * nothing: the WR fails locally once the lkey is gone), never the overwritten or closed memory.
     */
    @Test
    void aDeregisteredMrsWaitingBytesAreCopiedFirst() {
        final int len = 16 << 20;
        try (Pair p = new Pair(new SoftNicContext(), new TcpFabricContext().sendBuffer(65536).conclude());
             Arena dstArena = Arena.ofShared()) {
            final Arena srcArena = Arena.ofShared();
            final MemorySegment src = srcArena.allocate(len, 4096);
            final MemorySegment dst = dstArena.allocate(len, 4096);
            final MemoryRegion ma = writeUnderway(p, src, dst, 3);
            final long queued = p.a.dev.port.deferredSent();
            ma.deregister();
            src.fill((byte) 0x5a); // what a late read of the MR would now send
            srcArena.close();
            final WorkCompletion wc = p.await(p.a.cq, "the WRITE's completion");
            assertTrue(wc.status == WcStatus.SUCCESS || wc.status == WcStatus.LOC_PROT_ERR, wc::toString);
            long placed = 0;
            while (placed < len && dst.get(ValueLayout.JAVA_BYTE, placed) != 0x5a) {
                placed++;
            }
            assertTrue(placed > 0, "some of the WRITE reached b before the MR went");
            assertPattern(dst, 0, placed, 3, "the WRITE's bytes as posted");
            assertTrue(p.a.dev.port.deferredSent() > queued, "records were still waiting when the MR went: "
                + queued + " sent before, " + p.a.dev.port.deferredSent() + " after");
        }
    }

    /**
     * Memory closed (its arena) under a WR in flight without deregistering it: the socket is not given closed memory
     * (its bytes go as zeros) and the WR completes (LOC_PROT_ERR for what it could not read); no crash, no hang.
     */
    @Test
    void memoryClosedUnderAWriteInFlightIsNeverRead() {
        final int len = 16 << 20;
        try (Pair p = new Pair(new SoftNicContext(), new TcpFabricContext().sendBuffer(65536).conclude());
             Arena dstArena = Arena.ofShared()) {
            final Arena srcArena = Arena.ofShared();
            final MemorySegment src = srcArena.allocate(len, 4096);
            final MemorySegment dst = dstArena.allocate(len, 4096);
            writeUnderway(p, src, dst, 4);
            srcArena.close();
            final WorkCompletion wc = p.await(p.a.cq, "the WRITE's completion");
            assertTrue(wc.status == WcStatus.SUCCESS || wc.status == WcStatus.LOC_PROT_ERR, wc::toString);
            // every byte at b is the posted one, a zero (closed memory), or untouched
            for (long i = 0; i < len; i++) {
                final byte got = dst.get(ValueLayout.JAVA_BYTE, i);
                final byte want = (byte) (100 + (i * 31 + 4) % 97);
                if (got != want && got != 0 && got != 0x5a) {
                    throw new AssertionError("byte " + i + " is " + got);
                }
            }
        }
    }

    /** A NIC on a TCP fabric without CRC, an MR of 4 MiB at the front of 8 MiB of 0x5a, and an RC QP to raw LID 9. */
    private static final class Server implements AutoCloseable {
        static final int CAP = 1 << 20;
        final TcpFabric fabric = new TcpFabric(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), CAP, null,
            false, 1, io.gdrkit.core.auth.Token.NONE);
        final SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext(), fabric);
        final Arena arena = Arena.ofShared();
        final Side side = new Side(driver.addDevice("zc-server", 1));
        final MemorySegment buf = arena.allocate(8L << 20, 4096);
        final MemoryRegion mr;
        final SoftQp qp;

        Server() {
            buf.fill((byte) 0x5a);
            mr = side.pd.registerMr(buf.asSlice(0, 4L << 20), AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            qp = (SoftQp) side.pd.createQp(new QpInitAttr().cqs(side.cq, side.cq));
            QpBringUp.toRts(qp, 0x77, 9, 900, 100, QpBringUp.rcDefaults());
        }

        /** Progresses the NIC until {@code done} or 5 s. */
        void until(final java.util.function.BooleanSupplier done) throws InterruptedException {
            for (int i = 0; i < 5000 && !done.getAsBoolean(); i++) {
                side.dev.doWork();
                Thread.sleep(1);
            }
        }

        boolean placed(final long from, final int n) {
            for (int i = 0; i < n; i++) {
                if (buf.get(ValueLayout.JAVA_BYTE, from + i) != TcpInlineSpanTest.messageByte(i)) {
                    return false;
                }
            }
            return true;
        }

        void assertUntouched(final long from, final long to, final String what) {
            for (long i = from; i < to; i++) {
                if (buf.get(ValueLayout.JAVA_BYTE, i) != 0x5a) {
                    throw new AssertionError(what + ": byte " + i + " was written");
                }
            }
        }

        @Override
        public void close() {
            driver.close();
            fabric.close();
            arena.close();
        }
    }

    /**
     * A raw peer sends a 64 KiB WRITE's headers and its first 1000 bytes, then stalls: the NIC reads the payload
     * straight into the MR from there on. The MR is deregistered meanwhile; the rest of the payload, sent after,
     * lands nowhere (the packet is dropped, ePSN unchanged), and the same packet sent again is refused by name.
     */
    @Test
    void aPayloadReadStraightInStopsWhereItsKeyWent() throws Exception {
        try (Server s = new Server();
             java.net.Socket raw = TcpInlineSpanTest.join(s.fabric, 9, 41, Server.CAP)) {
            final int len = 16 * MTU;
            final byte[] f = TcpInlineSpanTest.frame(io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_ONLY, s.qp.qpNum(),
                100, s.mr.address(), s.mr.rkey(), len, len, 0);
            final int head = 8 + io.gdrkit.softnic.wire.Packet.lengthFor(
                io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_ONLY, 0) + 1000;
            raw.getOutputStream().write(f, 0, head);
            raw.getOutputStream().flush();
            s.until(() -> s.placed(0, 1000));
            assertTrue(s.placed(0, 1000), "the first 1000 bytes placed once the headers were judged");
            s.mr.deregister();
            raw.getOutputStream().write(f, head, f.length - head);
            raw.getOutputStream().write(f); // sent again: now the rkey is gone
            raw.getOutputStream().flush();
            s.until(() -> s.qp.state == io.gdrkit.verbs.QpState.ERR);
            assertEquals(io.gdrkit.verbs.QpState.ERR, s.qp.state, "the packet sent again is refused");
            assertEquals(100, s.qp.ePsn, "nothing accepted");
            s.assertUntouched(1000, len, "after the deregistration");
            final io.gdrkit.verbs.AsyncEvent e = s.side.ctx.pollAsyncEvent();
            assertTrue(e != null && e.detail().contains("refused for WRITE"), () -> "" + e);
        }
    }

    /**
     * Headers that arrive ahead of their payload for memory the rkey does not cover (a WRITE running 1000 bytes past
     * the MR's end): nothing is read straight anywhere, the whole packet is judged as always (remote access error),
     * and neither the MR nor the memory behind it changes.
     */
    @Test
    void headersForMemoryTheKeyDoesNotCoverAreNeverReadStraightIn() throws Exception {
        try (Server s = new Server();
             java.net.Socket raw = TcpInlineSpanTest.join(s.fabric, 9, 42, Server.CAP)) {
            final int len = 16 * MTU;
            final long va = s.mr.address() + (4L << 20) - len + 1000;
            final byte[] f = TcpInlineSpanTest.frame(io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_ONLY, s.qp.qpNum(),
                100, va, s.mr.rkey(), len, len, 0);
            raw.getOutputStream().write(f, 0, 100);
            raw.getOutputStream().flush();
            s.until(() -> false); // let the NIC see the headers alone for a while
            raw.getOutputStream().write(f, 100, f.length - 100);
            raw.getOutputStream().flush();
            s.until(() -> s.qp.state == io.gdrkit.verbs.QpState.ERR);
            assertEquals(io.gdrkit.verbs.QpState.ERR, s.qp.state, "remote access error");
            s.assertUntouched(0, 8L << 20, "the MR and what lies behind it");
            assertEquals(0, s.side.dev.port.directReceived(), "nothing read straight into memory");
        }
    }

    /**
     * The memory a payload is being read straight into is closed (its arena, with the MR still registered) before
     * the rest arrives: the read never touches it (the rest goes to a sink, the packet is dropped), the NIC goes on,
     * and the packet sent again is refused (remote access error) since the MR's memory is gone.
     */
    @Test
    void memoryClosedUnderAPayloadBeingReadInIsNeverWritten() throws Exception {
        try (Server s = new Server();
             java.net.Socket raw = TcpInlineSpanTest.join(s.fabric, 9, 44, Server.CAP)) {
            final int len = 16 * MTU;
            final Arena own = Arena.ofShared();
            final MemorySegment mem = own.allocate(len, 4096);
            final MemoryRegion mr = s.side.pd.registerMr(mem, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final byte[] f = TcpInlineSpanTest.frame(io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_ONLY, s.qp.qpNum(),
                100, mr.address(), mr.rkey(), len, len, 0);
            raw.getOutputStream().write(f, 0, 3000);
            raw.getOutputStream().flush();
            // the bytes that came with the headers are placed once the headers are judged: the rest is read in
            s.until(() -> java.util.stream.IntStream.range(1, 1000)
                .allMatch(i -> mem.get(ValueLayout.JAVA_BYTE, i) == TcpInlineSpanTest.messageByte(i)));
            assertTrue(java.util.stream.IntStream.range(1, 1000)
                .allMatch(i -> mem.get(ValueLayout.JAVA_BYTE, i) == TcpInlineSpanTest.messageByte(i)), "placed");
            own.close();
            raw.getOutputStream().write(f, 3000, f.length - 3000);
            raw.getOutputStream().write(f);
            raw.getOutputStream().flush();
            s.until(() -> s.qp.state == io.gdrkit.verbs.QpState.ERR);
            assertEquals(io.gdrkit.verbs.QpState.ERR, s.qp.state, "the packet sent again is refused");
            assertEquals(100, s.qp.ePsn, "nothing accepted");
            final io.gdrkit.verbs.AsyncEvent e = s.side.ctx.pollAsyncEvent();
            assertTrue(e != null && e.detail().contains("refused for WRITE"), () -> "the QP's own error, not the "
                + "device's: " + e);
        }
    }

    /**
     * A SEND's headers ahead of its payload: read straight into the receive WQE's SGE when all of it falls there (the
     * receive completes with every byte), never when it does not (an SGE of 8 KiB for 64 KiB: the whole packet is
     * judged as always, the receive fails with LOC_LEN_ERR, nothing past the SGE is written).
     */
    @Test
    void aSendIsReadStraightIntoItsReceiveOnlyWhereItFits() throws Exception {
        try (Server s = new Server();
             java.net.Socket raw = TcpInlineSpanTest.join(s.fabric, 9, 46, Server.CAP)) {
            final int len = 16 * MTU;
            final int send = io.gdrkit.softnic.wire.BthOpcode.SEND_ONLY;
            final int head = 8 + io.gdrkit.softnic.wire.Packet.lengthFor(send, 0) + 500;
            s.qp.postRecv(new RecvWorkRequest().wrId(1).sge(s.mr, 2L * len, len));
            final byte[] f = TcpInlineSpanTest.frame(send, s.qp.qpNum(), 100, 0, 0, 0, len, 0);
            raw.getOutputStream().write(f, 0, head);
            raw.getOutputStream().flush();
            s.until(() -> s.placed(2L * len, 500));
            assertTrue(s.placed(2L * len, 500), "the bytes that came with the headers placed in the receive's SGE");
            raw.getOutputStream().write(f, head, f.length - head);
            raw.getOutputStream().flush();
            final WorkCompletion[] wc = {new WorkCompletion()};
            s.until(() -> s.side.cq.poll(wc) > 0);
            assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
            assertEquals(len, wc[0].byteLen);
            assertTrue(placedAt(s, 2L * len, len));
            assertEquals(1, s.side.dev.port.directReceived(), "read straight into the receive");
            // the next one does not fit its receive
            s.qp.postRecv(new RecvWorkRequest().wrId(2).sge(s.mr, 4L * len, 8192));
            final byte[] g = TcpInlineSpanTest.frame(send, s.qp.qpNum(), 116, 0, 0, 0, len, 0);
            raw.getOutputStream().write(g, 0, head);
            raw.getOutputStream().flush();
            s.until(() -> false);
            raw.getOutputStream().write(g, head, g.length - head);
            raw.getOutputStream().flush();
            s.until(() -> s.side.cq.poll(wc) > 0);
            assertEquals(WcStatus.LOC_LEN_ERR, wc[0].status, wc[0]::toString);
            assertEquals(1, s.side.dev.port.directReceived(), "not read straight in");
            s.assertUntouched(4L * len + 8192, 8L << 20, "past the small receive");
        }
    }

    /** A peer that closes its connection in the middle of a payload being read straight in: dropped, nothing more. */
    @Test
    void aPeerGoneInTheMiddleOfAPayloadLeavesTheRestUntouched() throws Exception {
        try (Server s = new Server()) {
            final int len = 16 * MTU;
            try (java.net.Socket raw = TcpInlineSpanTest.join(s.fabric, 9, 43, Server.CAP)) {
                final byte[] f = TcpInlineSpanTest.frame(io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_ONLY,
                    s.qp.qpNum(), 100, s.mr.address(), s.mr.rkey(), len, len, 0);
                raw.getOutputStream().write(f, 0, 5000);
                raw.getOutputStream().flush();
                // the bytes that came with the headers are placed: the rest was to be read straight in
                s.until(() -> s.placed(0, 4000));
                assertTrue(s.placed(0, 4000), "the payload's first bytes placed once the headers were judged");
            }
            s.until(() -> s.fabric.lastError().contains("closed"));
            assertTrue(s.fabric.lastError().contains("closed"), s.fabric::lastError);
            assertEquals(100, s.qp.ePsn, "nothing accepted");
            s.assertUntouched(5000, len, "past what the peer sent");
        }
    }

    /**
     * A raw peer sends 300 seeded WRITE and SEND frames, each in two writes (its headers and a few bytes, then the rest
     * after the NIC has seen the headers alone), with opcodes, PSNs, addresses, rkeys, DMA lengths and payloads around
     * and across what is valid: whatever is read straight into memory lands only inside the MR (the 4 MiB behind it
     * stay 0x5a), no frame makes the NIC fail (a QP that errs is replaced), and afterwards a valid WRITE arrives
     * byte-exact. Seed 0x5EED_D1EC.
     */
    @Test
    void mutatedHeadersAheadOfTheirPayloadsNeverWriteOutsideTheMr() throws Exception {
        final java.util.Random rnd = new java.util.Random(0x5EED_D1ECL);
        final int[] opcodes = {io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_FIRST,
            io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_MIDDLE, io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_LAST,
            io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_ONLY, io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_ONLY_WITH_IMM,
            io.gdrkit.softnic.wire.BthOpcode.SEND_ONLY};
        try (Server s = new Server();
             java.net.Socket raw = TcpInlineSpanTest.join(s.fabric, 9, 45, Server.CAP)) {
            final java.io.OutputStream out = raw.getOutputStream();
            SoftQp qp = s.qp;
            int replaced = 0;
            for (int i = 0; i < 300; i++) {
                if (qp.state == io.gdrkit.verbs.QpState.ERR) {
                    qp = (SoftQp) s.side.pd.createQp(new QpInitAttr().cqs(s.side.cq, s.side.cq));
                    QpBringUp.toRts(qp, 0x77, 9, 900, 100, QpBringUp.rcDefaults());
                    replaced++;
                }
                final int opcode = opcodes[rnd.nextInt(opcodes.length)];
                final int payload = (4 + rnd.nextInt(13)) * MTU - (rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(MTU - 1) : 0);
                // mostly one field off at a time, so the checks' edges are what is hit
                final int psn = switch (rnd.nextInt(8)) {
                    case 0 -> qp.ePsn + 1 - 2 * rnd.nextInt(2);
                    case 1 -> rnd.nextInt(1 << 24);
                    default -> qp.ePsn;
                };
                final long va = switch (rnd.nextInt(8)) {
                    case 0, 1, 4, 5, 6 -> s.mr.address() + rnd.nextInt((4 << 20) - payload);
                    case 2 -> s.mr.address() + (4L << 20) - payload + 1 + rnd.nextInt(payload); // across the end
                    case 3 -> s.mr.address() - 1 - rnd.nextInt(1 << 20);
                    default -> rnd.nextLong();
                };
                final int rkey = switch (rnd.nextInt(10)) {
                    case 0 -> rnd.nextInt();
                    case 1 -> s.mr.rkey() ^ 1;
                    default -> s.mr.rkey();
                };
                final int dma = switch (rnd.nextInt(6)) {
                    case 0 -> payload + MTU * (1 + rnd.nextInt(8));
                    case 1 -> rnd.nextInt();
                    default -> payload;
                };
                final byte[] f = TcpInlineSpanTest.frame(opcode, qp.qpNum(), psn, va, rkey, dma, payload, 0);
                final int first = 8 + io.gdrkit.softnic.wire.Packet.lengthFor(opcode, 0) + rnd.nextInt(2000);
                out.write(f, 0, first);
                out.flush();
                for (int k = 0; k < 3; k++) {
                    s.side.dev.doWork();
                }
                out.write(f, first, f.length - first);
                out.flush();
                for (int k = 0; k < 10; k++) {
                    s.side.dev.doWork();
                }
                Thread.sleep(0, 200_000);
            }
            s.until(() -> false);
            s.assertUntouched(4L << 20, 8L << 20, "behind the MR");
            io.gdrkit.verbs.AsyncEvent e;
            while ((e = s.side.ctx.pollAsyncEvent()) != null) {
                final io.gdrkit.verbs.AsyncEvent seen = e;
                assertTrue(!seen.detail().contains("failed: java"), () -> "the NIC failed: " + seen);
            }
            assertTrue(replaced > 0, "some frames were refused (and their QP replaced): " + replaced);
            assertTrue(s.side.dev.port.directReceived() > 0, "some were read straight into the MR: "
                + s.side.dev.port.directReceived());
            // the NIC and the connection still carry a valid WRITE byte-exact
            if (qp.state == io.gdrkit.verbs.QpState.ERR) {
                qp = (SoftQp) s.side.pd.createQp(new QpInitAttr().cqs(s.side.cq, s.side.cq));
                QpBringUp.toRts(qp, 0x77, 9, 900, 100, QpBringUp.rcDefaults());
            }
            final SoftQp last = qp;
            final int len = 16 * MTU;
            final int psn = last.ePsn;
            out.write(TcpInlineSpanTest.frame(io.gdrkit.softnic.wire.BthOpcode.RDMA_WRITE_ONLY, last.qpNum(), psn,
                s.mr.address() + MTU, s.mr.rkey(), len, len, 0));
            out.flush();
            s.until(() -> last.ePsn == ((psn + 16) & 0xFFFFFF));
            assertEquals((psn + 16) & 0xFFFFFF, last.ePsn, "the valid WRITE accepted");
            assertTrue(placedAt(s, MTU, len), "the valid WRITE's bytes");
        }
    }

    private static boolean placedAt(final Server s, final long at, final int n) {
        for (int i = 0; i < n; i++) {
            if (s.buf.get(ValueLayout.JAVA_BYTE, at + i) != TcpInlineSpanTest.messageByte(i)) {
                throw new AssertionError("byte " + i + " of the valid WRITE at " + at);
            }
        }
        return true;
    }
}
