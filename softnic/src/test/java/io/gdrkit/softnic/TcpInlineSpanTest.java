/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
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
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import io.gdrkit.core.auth.Token;
import io.gdrkit.verbs.QpState;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Segment offload with the bytes inline on the TCP fabric: a record of an RC WRITE or SEND stands for up to
 * {@code gdrkit.nic.batch} MTU packets, and the receiving NIC counts them from the payload's length. Every byte of a
 * WRITE and a SEND with odd lengths arrives, with spans (counted on the link) and without them (a hook that sees
 * single packets, or batch 1); a record of a READ response or an atomic is never a span.
 */
class TcpInlineSpanTest {
    private static final int MTU = 4096;
    private static final int WRITE = (1 << 20) + 5;
    private static final int SEND = 300 * 1024 + 3;

    /** Counts the records both sides put on the link, and those longer than one packet. */
    private static final class Counter implements LinkHook {
        final boolean batches;
        final AtomicLong records = new AtomicLong();
        final AtomicLong spans = new AtomicLong();
        final AtomicLong spanOfOtherOps = new AtomicLong();
        final Packet view = new Packet();

        Counter(final boolean batches) {
            this.batches = batches;
        }

        @Override
        public synchronized int onPacket(final int src, final int dst, final MemorySegment buf, final long off,
                                         final int len) {
            view.wrap(buf, off, len);
            records.incrementAndGet();
            if (view.payloadLength() > MTU) {
                spans.incrementAndGet();
                if ((view.mask() & (BthOpcode.SEND | BthOpcode.WRITE)) == 0) {
                    spanOfOtherOps.incrementAndGet();
                }
            }
            return DELIVER;
        }

        @Override
        public boolean passesBatches() {
            return batches;
        }
    }

    private static final class Side {
        final SoftDevice dev;
        final CompletionQueue cq;
        final MemorySegment buf;
        final MemoryRegion mr;
        final ProtectionDomain pd;
        final VerbsContext ctx;

        Side(final SoftDevice dev, final Arena arena) {
            this.dev = dev;
            ctx = dev.open();
            pd = ctx.allocPd();
            cq = ctx.createCq(256);
            buf = arena.allocate(4L << 20, 4096);
            mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
        }
    }

    /** A WRITE, a SEND and a READ from a to b at the path MTU; returns the hook's counts {records, spans}. */
    private static long[] run(final SoftNicContext ctx, final Counter hook) {
        return run(ctx, hook, 4 << 20);
    }

    private static long[] run(final SoftNicContext ctx, final Counter hook, final int link) {
        final InetSocketAddress lo = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        final TcpFabric fa = new TcpFabric(lo, link, hook, true, 1);
        final TcpFabric fb = new TcpFabric(lo, link, hook, true, 1); // b's READ responses and ACKs counted too
        final SoftNicDriver da = SoftNicDriver.launch(ctx.linkCrc(true), fa);
        final SoftNicDriver db = SoftNicDriver.launch(new SoftNicContext().linkCrc(true), fb);
        try (Arena arena = Arena.ofShared()) {
            final Side a = new Side(da.addDevice("span-a", 1), arena);
            final Side b = new Side(db.addDevice("span-b", 2), arena);
            fa.connect(2, fb.localAddress());
            final QueuePair qa = a.pd.createQp(new QpInitAttr().cqs(a.cq, a.cq));
            final QueuePair qb = b.pd.createQp(new QpInitAttr().cqs(b.cq, b.cq));
            QpBringUp.toRts(qa, qb.qpNum(), 2, 100, 900, QpBringUp.rcDefaults());
            QpBringUp.toRts(qb, qa.qpNum(), 1, 900, 100, QpBringUp.rcDefaults());
            Fixture.fill(a.buf.asSlice(0, WRITE), 11);
            Fixture.fill(a.buf.asSlice(2L << 20, SEND), 12);
            Fixture.fill(b.buf.asSlice(3L << 20, 64 * 1024), 13);
            b.buf.asSlice(0, WRITE + 1).fill((byte) 0x5a);
            qb.postRecv(new RecvWorkRequest().wrId(7).sge(b.mr, 2L << 20, SEND));
            qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(a.mr, 0, WRITE).remote(b.mr.address(), b.mr.rkey())
                .next(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(a.mr, 2L << 20, SEND)
                    .next(new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                        .sge(a.mr, 3L << 20, 64 * 1024).remote(b.mr.address() + (3L << 20), b.mr.rkey()))));
            for (int i = 1; i <= 3; i++) {
                final WorkCompletion wc = TcpFabricTest.await(a.cq, da, db, "completion " + i);
                assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
                assertEquals(i, wc.wrId, "in order");
            }
            final WorkCompletion recv = TcpFabricTest.await(b.cq, da, db, "the SEND's receive");
            assertEquals(WcStatus.SUCCESS, recv.status, recv::toString);
            assertEquals(WcOpcode.RECV, recv.opcode);
            assertEquals(SEND, recv.byteLen);
            Fixture.assertBytes(a.buf.asSlice(0, WRITE), b.buf.asSlice(0, WRITE), "the WRITE");
            assertEquals((byte) 0x5a, b.buf.get(java.lang.foreign.ValueLayout.JAVA_BYTE, WRITE), "not one byte more");
            Fixture.assertBytes(a.buf.asSlice(2L << 20, SEND), b.buf.asSlice(2L << 20, SEND), "the SEND");
            Fixture.assertBytes(b.buf.asSlice(3L << 20, 64 * 1024), a.buf.asSlice(3L << 20, 64 * 1024), "the READ");
            assertEquals(0, hook.spanOfOtherOps.get(), "only WRITE and SEND requests are spans");
            return new long[] {hook.records.get(), hook.spans.get()};
        } finally {
            da.close();
            db.close();
        }
    }

    @Test
    void aRecordCarriesUpToBatchPacketsAndEveryByteArrives() {
        final long[] n = run(new SoftNicContext().batch(16), new Counter(true));
        // the WRITE is 257 packets and the SEND 76: far fewer records, and most of them spans
        final long packets = (WRITE + MTU - 1) / MTU + (SEND + MTU - 1) / MTU;
        assertTrue(n[1] > 0, "spans on the link: " + n[1] + " of " + n[0] + " records");
        assertTrue(n[0] < packets, n[0] + " records for the " + packets + " packets of the WRITE and the SEND");
    }

    /**
     * gdrkit.nic.batch at its largest (1024 packets, 4 MiB) on a link whose largest packet is about 256 KiB: a span
     * never outgrows the link (it used to, and the WRITE failed with its QP in error); every byte arrives.
     */
    @Test
    void aSpanNeverOutgrowsTheLinksLargestPacket() {
        final long[] n = run(new SoftNicContext().batch(SoftNicContext.MAX_BATCH), new Counter(true), 512 << 10);
        assertTrue(n[1] > 0, "spans on the link: " + n[1] + " of " + n[0] + " records");
        final long packets = (WRITE + MTU - 1) / MTU;
        assertTrue(n[0] > packets / 64, n[0] + " records: the 1 MiB WRITE in spans of at most 64 packets");
    }

    @Test
    void aHookThatSeesSinglePacketsOrBatchOneGetsOnePacketPerRecord() {
        assertEquals(0, run(new SoftNicContext().batch(16), new Counter(false))[1], "a hook without spans");
        assertEquals(0, run(new SoftNicContext().batch(1), new Counter(true))[1], "gdrkit.nic.batch=1");
    }

    /**
     * The receiving side's rule, driven by a raw peer on the socket: an inline WRITE_ONLY of two MTUs and 5 bytes is
     * a span of 3 packets, placed byte for byte, ePSN advanced by 3; a WRITE_FIRST of one and a half MTUs (a span
     * that is not whole packets) is refused by name, nothing of it placed, and the QP errs.
     */
    @Test
    void aSpanIsCountedFromItsLengthAndOneThatIsNotWholePacketsIsRefused() throws Exception {
        final int cap = 1 << 20;
        try (TcpFabric server = new TcpFabric(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), cap, null,
                 false, 1, Token.NONE);
             SoftNicDriver sd = SoftNicDriver.launch(new SoftNicContext(), server);
             Arena arena = Arena.ofShared()) {
            final Side b = new Side(sd.addDevice("span-server", 1), arena);
            final QueuePair qb = b.pd.createQp(new QpInitAttr().cqs(b.cq, b.cq));
            final int peerQpn = 0x77;
            QpBringUp.toRts(qb, peerQpn, 9, 900, 100, QpBringUp.rcDefaults());
            b.buf.asSlice(0, 6 * MTU).fill((byte) 0x5a);
            try (Socket raw = join(server, 9, 31, cap)) {
                final OutputStream out = raw.getOutputStream();
                // a span of 3: 2 MTUs and 5 bytes, one WRITE_ONLY record
                final int len = 2 * MTU + 5;
                out.write(frame(BthOpcode.RDMA_WRITE_ONLY, qb.qpNum(), 100, b.mr.address(), b.mr.rkey(), len, len));
                out.flush();
                final SoftQp q = (SoftQp) qb;
                for (int i = 0; i < 5000 && q.ePsn != 103; i++) {
                    b.dev.doWork();
                    Thread.sleep(1);
                }
                assertEquals(103, q.ePsn, "the record counted as 3 packets");
                for (int i = 0; i < len; i++) {
                    assertEquals(messageByte(i), b.buf.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
                }
                assertEquals((byte) 0x5a, b.buf.get(ValueLayout.JAVA_BYTE, len), "not one byte more");
                // a FIRST span of one and a half MTUs: not whole packets
                out.write(frame(BthOpcode.RDMA_WRITE_FIRST, qb.qpNum(), 103, b.mr.address() + 2L * MTU * 2,
                    b.mr.rkey(), MTU + MTU / 2, 4 * MTU));
                out.flush();
                for (int i = 0; i < 5000 && q.state != QpState.ERR; i++) {
                    b.dev.doWork();
                    Thread.sleep(1);
                }
                assertEquals(QpState.ERR, q.state, "NAK invalid request: the QP errs");
                assertEquals(103, q.ePsn, "the refused record is not accepted");
                for (int i = 0; i < 2 * MTU; i++) {
                    assertEquals((byte) 0x5a, b.buf.get(ValueLayout.JAVA_BYTE, 4L * MTU + i), "nothing placed");
                }
                final io.gdrkit.verbs.AsyncEvent e = b.ctx.pollAsyncEvent();
                assertTrue(e != null && e.detail().contains("does not fit 2 packet(s) of MTU " + MTU), () -> "" + e);
            }
        }
    }

    /**
     * A span whose first packets arrived before (sent again from an older PSN and cut differently, as a
     * retransmission after a timeout under load is, its spans capped by a smaller window) is accepted from ePSN on:
     * what is placed are the bytes of its new packets, at the message offset they belong to, not the record's first
     * bytes again. A WRITE of 8 MTUs (a FIRST span of 4, then a LAST span of 6 from the third packet on) and a SEND
     * of 7 MTUs and 3 bytes (the same cut) arrive byte-exact.
     */
    @Test
    void aSpanPartlyReceivedBeforePlacesOnlyItsNewPackets() throws Exception {
        final int cap = 1 << 20;
        try (TcpFabric server = new TcpFabric(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), cap, null,
                 false, 1, Token.NONE);
             SoftNicDriver sd = SoftNicDriver.launch(new SoftNicContext(), server);
             Arena arena = Arena.ofShared()) {
            final Side b = new Side(sd.addDevice("span-again", 1), arena);
            final QueuePair qb = b.pd.createQp(new QpInitAttr().cqs(b.cq, b.cq));
            QpBringUp.toRts(qb, 0x77, 9, 900, 100, QpBringUp.rcDefaults());
            b.buf.asSlice(0, 32 * MTU).fill((byte) 0x5a);
            final SoftQp q = (SoftQp) qb;
            try (Socket raw = join(server, 9, 32, cap)) {
                final OutputStream out = raw.getOutputStream();
                final long va = b.mr.address();
                out.write(frame(BthOpcode.RDMA_WRITE_FIRST, qb.qpNum(), 100, va, b.mr.rkey(), 8 * MTU, 4 * MTU, 0));
                out.flush();
                awaitEpsn(b, q, 104);
                // packets 102..107: 102 and 103 are duplicates, 104..107 the message's last 4 MTUs
                out.write(frame(BthOpcode.RDMA_WRITE_LAST, qb.qpNum(), 102, 0, 0, 0, 6 * MTU, 2L * MTU));
                out.flush();
                awaitEpsn(b, q, 108);
                for (int i = 0; i < 8 * MTU; i++) {
                    assertEquals(messageByte(i), b.buf.get(ValueLayout.JAVA_BYTE, i), "WRITE byte " + i);
                }
                assertEquals((byte) 0x5a, b.buf.get(ValueLayout.JAVA_BYTE, 8 * MTU), "not one byte more");
                final int send = 7 * MTU + 3;
                qb.postRecv(new RecvWorkRequest().wrId(5).sge(b.mr, 16L * MTU, 16 * MTU));
                out.write(frame(BthOpcode.SEND_FIRST, qb.qpNum(), 108, 0, 0, 0, 4 * MTU, 0));
                out.flush();
                awaitEpsn(b, q, 112);
                out.write(frame(BthOpcode.SEND_LAST, qb.qpNum(), 110, 0, 0, 0, 5 * MTU + 3, 2L * MTU));
                out.flush();
                awaitEpsn(b, q, 116);
                final WorkCompletion[] wc = {new WorkCompletion()};
                assertEquals(1, b.cq.poll(wc), "the SEND's receive completed");
                assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
                assertEquals(send, wc[0].byteLen);
                for (int i = 0; i < send; i++) {
                    assertEquals(messageByte(i), b.buf.get(ValueLayout.JAVA_BYTE, 16L * MTU + i), "SEND byte " + i);
                }
                assertEquals((byte) 0x5a, b.buf.get(ValueLayout.JAVA_BYTE, 16L * MTU + send), "not one byte more");
            }
        }
    }

    static void awaitEpsn(final Side b, final SoftQp q, final int psn) throws InterruptedException {
        for (int i = 0; i < 5000 && q.ePsn != psn && q.state == QpState.RTS; i++) {
            b.dev.doWork();
            Thread.sleep(1);
        }
        assertEquals(psn, q.ePsn, () -> "ePSN (QP " + QpState.name(q.state) + ", " + b.ctx.pollAsyncEvent() + ")");
    }

    /** Byte {@code i} of a hand-made message: no period, so bytes placed at the wrong offset show. */
    static byte messageByte(final long i) {
        return (byte) ((i * 0x9E3779B97F4A7C15L) >>> 56);
    }

    /**
     * A raw peer on {@code server}'s socket: the challenge read (no token: no proof checked), a hello for {@code lid}
     * (version 2, the given session, connection 0 of 1, the link capacity, no CRC) written, the verdict checked.
     */
    static Socket join(final TcpFabric server, final int lid, final int session, final int cap) throws Exception {
        final Socket raw = new Socket();
        try {
            raw.connect(server.localAddress(), 5000);
            raw.setSoTimeout(10_000);
            final DataInputStream in = new DataInputStream(raw.getInputStream());
            in.readFully(new byte[24]);
            final ByteBuffer h = ByteBuffer.allocate(56).order(ByteOrder.LITTLE_ENDIAN);
            h.putInt('G' | 'D' << 8 | 'R' << 16 | 'T' << 24).putShort((short) 2).putShort((short) 0).putInt(lid)
                .putInt(session).putShort((short) 0).putShort((short) 1).putInt(cap);
            raw.getOutputStream().write(h.array());
            final byte[] verdict = new byte[128];
            in.readFully(verdict);
            assertEquals(0, ByteBuffer.wrap(verdict).order(ByteOrder.LITTLE_ENDIAN).getInt(4), "LID " + lid
                + " joined");
            return raw;
        } catch (final Exception | Error e) {
            raw.close();
            throw e;
        }
    }

    /** One frame (length, no CRC, the packet, padding to 8) of a WRITE of {@code payload} message bytes. */
    private static byte[] frame(final int opcode, final int qpn, final int psn, final long va, final int rkey,
                                final int payload, final int dmaLength) {
        return frame(opcode, qpn, psn, va, rkey, dmaLength, payload, 0);
    }

    /**
     * One frame from LID 9 to LID 1 of a SEND or WRITE record carrying {@code payload} bytes of a message from byte
     * {@code from} of it on ({@link #messageByte}), a RETH where the opcode has one.
     */
    static byte[] frame(final int opcode, final int qpn, final int psn, final long va, final int rkey,
                        final int dmaLength, final int payload, final long from) {
        final int len = Packet.lengthFor(opcode, payload);
        final MemorySegment m = MemorySegment.ofArray(new byte[(8 + len + 7) & ~7]);
        m.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, len);
        final Packet p = new Packet().init(m, 8, len, 1, 9, opcode, qpn, psn, true, false);
        if (p.is(BthOpcode.RETH)) {
            p.reth(va, rkey, dmaLength);
        }
        for (int i = 0; i < payload; i++) {
            m.set(ValueLayout.JAVA_BYTE, p.payloadOffset() + i, messageByte(from + i));
        }
        return m.toArray(ValueLayout.JAVA_BYTE);
    }
}
