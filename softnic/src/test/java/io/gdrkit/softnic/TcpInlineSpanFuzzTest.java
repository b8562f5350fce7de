/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.gdrkit.core.auth.Token;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.fabric.Mutator;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seeded fuzzing of the accepting side of inline spans (segment offload with the bytes in the record, TCP fabric):
 * real records of RC WRITE and SEND messages (FIRST, MIDDLE, LAST and ONLY spans of up to 16 packets of MTU 1 KiB,
 * RETH on a WRITE's FIRST/ONLY, ImmDt on a LAST, captured on the link between two NICs over loopback TCP) are
 * mutated and handed to the receiving NIC, whose port is a TCP port, so the responder counts a record's packets
 * from its payload length. Mutated: payload length (whole and partial MTUs, up to 255 packets), opcode, PSN (at the
 * expected one, a few packets before it so spans partly received before are accepted from ePSN on, or ahead),
 * RETH VA, R_Key and DMA length, truncation (with the header's length fixed up or not), SLID, DestQP, AckReq/SE,
 * and now and then the generic byte mutator. {@value #INPUTS} inputs go straight to the receive path under the
 * NIC's duty (as {@link PacketFuzzTest}); {@value #WIRE_MESSAGES} hand-made messages travel from a raw peer
 * through the socket, the fabric's framing and checks included, with frames that spoof the SLID or DLID or give an
 * impossible length (each closes that connection only; the peer joins again).
 *
 * <p>No input may throw out of an engine (the device would go fatal) or hang a duty cycle (every wait is bounded),
 * no byte outside the receiver's MRs (guard bands around both, checked byte by byte) nor of the sender's memory may
 * change, and every error the receiver reports is named (an async event with a reason, a completion with a known
 * status). Afterwards a fresh QP pair on the same NICs carries a WRITE and a SEND in spans byte-exact, and a fresh
 * raw connection a hand-made span. The seed is {@value #SEED}; every failure message names it. The seed fixes the
 * choices and mutations; the captured records' cut into spans follows the sender's window, so ACK timing on the
 * loopback may vary it from run to run (the hand-made messages of the wire part do not vary).
 */
@Timeout(120)
class TcpInlineSpanFuzzTest {
    private static final long SEED = 0x5EED_1A5EL;
    private static final int INPUTS = 20_000;
    private static final int WIRE_MESSAGES = 1_500;
    private static final int MTU = 1024;
    private static final int LINK = 4 << 20;
    /** {@link TcpInlineSpanTest#frame} addresses LID 1 from LID 9: b, the receiver, is LID 1. */
    private static final int LID_B = 1;
    private static final int LID_A = 2;
    private static final int LID_RAW = 9;
    private static final int RAW_QPN = 0x77;
    private static final long GUARD = 256 << 10;
    private static final long WINDOW = 1 << 20;
    private static final long OTHER = 64 << 10;
    private static final String S = " (seed " + SEED + ")";
    private static final int[] OPCODES = {BthOpcode.SEND_FIRST, BthOpcode.SEND_MIDDLE, BthOpcode.SEND_LAST,
        BthOpcode.SEND_LAST_WITH_IMM, BthOpcode.SEND_ONLY, BthOpcode.SEND_ONLY_WITH_IMM, BthOpcode.RDMA_WRITE_FIRST,
        BthOpcode.RDMA_WRITE_MIDDLE, BthOpcode.RDMA_WRITE_LAST, BthOpcode.RDMA_WRITE_LAST_WITH_IMM,
        BthOpcode.RDMA_WRITE_ONLY, BthOpcode.RDMA_WRITE_ONLY_WITH_IMM, BthOpcode.SEND_LAST_WITH_INVALIDATE,
        BthOpcode.SEND_ONLY_WITH_INVALIDATE, BthOpcode.RDMA_READ_REQUEST, BthOpcode.COMPARE_SWAP,
        BthOpcode.ACKNOWLEDGE, BthOpcode.UD_SEND_ONLY, 0x1F, 0xFF};

    /** Captures the requests a sends to b while {@link #on}; passes spans (so a sends them). */
    private static final class Tap implements LinkHook {
        final List<byte[]> records = new ArrayList<>();
        final Packet view = new Packet();
        volatile boolean on;
        long spans;

        @Override
        public synchronized int onPacket(final int src, final int dst, final MemorySegment buf, final long off,
                                         final int len) {
            if (on && dst == LID_B && view.wrap(buf, off, len).is(BthOpcode.REQUEST)) {
                records.add(buf.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE));
                spans += view.payloadLength() > MTU ? 1 : 0;
            }
            return DELIVER;
        }

        @Override
        public boolean passesBatches() {
            return true;
        }
    }

    private static final class Side {
        final SoftDevice dev;
        final VerbsContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;

        Side(final SoftDevice dev) {
            this.dev = dev;
            ctx = dev.open();
            pd = ctx.allocPd();
            cq = ctx.createCq(4096);
        }

        QueuePair qp() {
            final QpInitAttr init = new QpInitAttr().cqs(cq, cq);
            init.cap.maxSendSge(2).maxRecvSge(2);
            return pd.createQp(init);
        }
    }

    private final SplittableRandom rnd = new SplittableRandom(SEED);
    private final QpAttr attr = QpBringUp.rcDefaults().pathMtu(Mtu.MTU_1024);
    private final List<String> events = new ArrayList<>();
    private final WorkCompletion[] wc = WorkCompletion.array(16);
    private SoftNicDriver da;
    private SoftNicDriver db;
    private Side a;
    private Side b;
    private MemorySegment guarded;
    private MemoryRegion window;
    private MemoryRegion other;
    private long posted;
    private int rearms;

    @Test
    void mutatedInlineSpansNeverBreakTheReceivingNic() throws Exception {
        final Tap tap = new Tap();
        final InetSocketAddress lo = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        try (TcpFabric fb = new TcpFabric(lo, LINK, null, false, 1, Token.NONE);
             TcpFabric fa = new TcpFabric(lo, LINK, tap, false, 1, Token.NONE);
             Arena arena = Arena.ofShared()) {
            // the test thread moves both NICs (invoker progress): no selector waits between its inputs
            fa.idleParking(false);
            fb.idleParking(false);
            da = SoftNicDriver.launch(new SoftNicContext().batch(16), fa);
            db = SoftNicDriver.launch(new SoftNicContext().batch(16), fb);
            try {
                a = new Side(da.addDevice("fuzz-a", LID_A));
                b = new Side(db.addDevice("fuzz-b", LID_B));
                fa.connect(LID_B, fb.localAddress());
                // b's traffic lands in two MRs over one segment; the guard bands around them belong to no MR
                guarded = arena.allocate(GUARD + WINDOW + GUARD + OTHER + GUARD, 4096);
                Fixture.fill(guarded, SEED);
                final int remote = AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE;
                window = b.pd.registerMr(guarded.asSlice(GUARD, WINDOW), remote);
                other = b.pd.registerMr(guarded.asSlice(2 * GUARD + WINDOW, OTHER), remote);
                final MemorySegment guardBefore = copy(guarded);
                final MemorySegment src = arena.allocate(1 << 20, 4096);
                final MemoryRegion srcMr = a.pd.registerMr(src, remote);
                Fixture.fill(src, SEED + 1);
                final MemorySegment srcBefore = copy(src);
                final QueuePair qa = a.qp();
                final QueuePair qb = b.qp();
                QpBringUp.connect(qa, LID_A, 100, qb, LID_B, 900, attr);

                final List<byte[]> records = capture(tap, qa, qb, srcMr);
                fuzzRecords(records, qa, qb);
                assertUndamaged(guardBefore, srcBefore, src, "after the records");
                fuzzWire(fb, qb);
                assertUndamaged(guardBefore, srcBefore, src, "after the wire");
                assertNull(a.dev.fatal(), () -> "device a failed" + S + ": " + a.dev.fatal());
                assertNull(b.dev.fatal(), () -> "device b failed" + S + ": " + b.dev.fatal());
                for (final String r : new String[] {"does not fit", "payload does not match the DMA length",
                    "refused for WRITE", "out of sequence", "receive buffer"}) {
                    assertTrue(events.stream().anyMatch(d -> d.contains(r)), () -> "no event names '" + r + "'" + S);
                }
                assertStillByteExact(tap, src, srcMr, fb);
            } finally {
                da.close();
                db.close();
            }
        }
    }

    private static MemorySegment copy(final MemorySegment s) {
        final MemorySegment c = Arena.ofAuto().allocate(s.byteSize());
        MemorySegment.copy(s, 0, c, 0, s.byteSize());
        return c;
    }

    private void assertUndamaged(final MemorySegment guardBefore, final MemorySegment srcBefore,
                                 final MemorySegment src, final String when) {
        Fixture.assertBytes(guardBefore.asSlice(0, GUARD), guarded.asSlice(0, GUARD), "the guard below the window "
            + when + S);
        Fixture.assertBytes(guardBefore.asSlice(GUARD + WINDOW, GUARD), guarded.asSlice(GUARD + WINDOW, GUARD),
            "the guard between the MRs " + when + S);
        Fixture.assertBytes(guardBefore.asSlice(2 * GUARD + WINDOW + OTHER), guarded.asSlice(2 * GUARD + WINDOW
            + OTHER), "the guard above the other MR " + when + S);
        Fixture.assertBytes(srcBefore, src, "the sender's memory " + when + S);
    }

    // ---------------- capture ----------------

    /** WRITEs and SENDs of whole and partial MTUs from a to b over TCP: their records, as the link carried them. */
    private List<byte[]> capture(final Tap tap, final QueuePair qa, final QueuePair qb, final MemoryRegion srcMr) {
        postRecvs(qb, 4);
        tap.on = true;
        transfer(qa, qb, new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
            .sge(srcMr, 0, 20 * MTU + 123).remote(window.address(), window.rkey()).imm(7), true, "WRITE_WITH_IMM");
        transfer(qa, qb, new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
            .sge(srcMr, 100, 3 * MTU + 5), true, "SEND of a span");
        transfer(qa, qb, new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
            .sge(srcMr, 5000, 40 * MTU + 7), true, "SEND of spans");
        transfer(qa, qb, new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
            .sge(srcMr, 0, 17 * MTU).imm(9), true, "SEND_WITH_IMM");
        for (final int size : new int[] {MTU + 1, 3 * MTU, 40 * MTU + 9, 5 * MTU - 1}) {
            transfer(qa, qb, new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(srcMr, 4096, size).remote(window.address() + 8192, window.rkey()), false, "WRITE " + size);
        }
        tap.on = false;
        final List<byte[]> records;
        synchronized (tap) {
            records = new ArrayList<>(tap.records);
            tap.records.clear();
        }
        final Packet v = new Packet();
        final TreeSet<String> spanOpcodes = new TreeSet<>();
        for (final byte[] r : records) {
            if (v.wrap(MemorySegment.ofArray(r), 0, r.length).payloadLength() > MTU) {
                spanOpcodes.add(BthOpcode.name(v.opcode()));
            }
        }
        // spans of both kinds at each position: a WRITE's with a RETH (FIRST, ONLY) and without, a SEND's alike
        for (final int op : new int[] {BthOpcode.RDMA_WRITE_FIRST, BthOpcode.RDMA_WRITE_MIDDLE,
            BthOpcode.RDMA_WRITE_LAST, BthOpcode.RDMA_WRITE_ONLY, BthOpcode.SEND_FIRST, BthOpcode.SEND_MIDDLE,
            BthOpcode.SEND_ONLY}) {
            assertTrue(spanOpcodes.contains(BthOpcode.name(op)), () -> "no " + BthOpcode.name(op) + " span among "
                + spanOpcodes + S);
        }
        return records;
    }

    private void transfer(final QueuePair qa, final QueuePair qb, final SendWorkRequest w, final boolean consumesRecv,
                          final String what) {
        qa.postSend(w);
        final WorkCompletion c = TcpFabricTest.await(a.cq, da, db, what);
        assertEquals(WcStatus.SUCCESS, c.status, () -> what + ": " + c + S);
        if (consumesRecv) {
            final WorkCompletion r = TcpFabricTest.await(b.cq, da, db, what + "'s receive");
            assertEquals(WcStatus.SUCCESS, r.status, () -> what + "'s receive: " + r + S);
            assertEquals(qb.qpNum(), r.qpNum, "the receive's QP");
        }
    }

    /** Receive WQEs of two SGEs into the window, so SEND records find one. */
    private void postRecvs(final QueuePair qp, final int n) {
        for (int i = 0; i < n; i++) {
            final RecvWorkRequest rw = new RecvWorkRequest().wrId(++posted).numSge(2);
            rw.sge(0).set(window, 64 * 1024, 5 * MTU + 3);
            rw.sge(1).set(window, 256 * 1024, 64 * MTU);
            qp.postRecv(rw);
        }
    }

    private void settle(final int rounds) {
        for (int i = 0; i < rounds; i++) {
            da.progress();
            db.progress();
        }
    }

    /** A QP in ERR (a refused record's NAK) back to RTS towards its peer, at random PSNs (so they wrap too). */
    private void rearm(final QueuePair qp, final int destQpn, final int dlid) {
        final QpAttr reset = new QpAttr();
        reset.qpState = QpState.RESET;
        qp.modify(reset, QpAttrMask.STATE);
        QpBringUp.toRts(qp, destQpn, dlid, rnd.nextInt(1 << 24), rnd.nextInt(1 << 24), attr);
        rearms++;
    }

    /** Empties the CQs and the async event queues: each completion's status and each event must be named. */
    private void drain() {
        for (final CompletionQueue cq : new CompletionQueue[] {a.cq, b.cq}) {
            int n;
            while ((n = cq.poll(wc)) > 0) {
                for (int i = 0; i < n; i++) {
                    final WorkCompletion c = wc[i];
                    assertTrue(!WcStatus.name(c.status).startsWith("UNKNOWN"), () -> "an unnamed status: " + c + S);
                }
            }
        }
        for (final Side s : new Side[] {a, b}) {
            AsyncEvent e;
            while ((e = s.ctx.pollAsyncEvent()) != null) {
                final String d = e.detail();
                final AsyncEvent ev = e;
                assertTrue(d != null && !d.isBlank() && !d.contains("Exception"), () -> "an unnamed error: " + ev + S);
                events.add(d);
            }
        }
    }

    // ---------------- records straight to the receive path ----------------

    /**
     * Feeds {@link #INPUTS} records to b: whole captured messages in order (so MIDDLE and LAST records meet a QP
     * inside their message), each record mutated with probability 1/3, its PSN at the expected one or, for one in
     * four, up to a span's packets before it. A QP in ERR is re-armed before the next message.
     */
    private void fuzzRecords(final List<byte[]> records, final QueuePair qa, final QueuePair qb) {
        final List<int[]> messages = new ArrayList<>();
        final Packet v = new Packet();
        int start = 0;
        for (int i = 0; i < records.size(); i++) {
            if (v.wrap(MemorySegment.ofArray(records.get(i)), 0, records.get(i).length).is(BthOpcode.LAST)) {
                messages.add(new int[] {start, i + 1});
                start = i + 1;
            }
        }
        assertTrue(messages.size() >= 8, () -> messages.size() + " messages captured" + S);
        final SoftQp rq = (SoftQp) qb;
        final long malformed = b.dev.receiver.malformed();
        final long foreign = b.dev.receiver.foreign();
        int spans = 0;
        int partial = 0;
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment wire = arena.allocate(1 << 20, 8);
            int i = 0;
            while (i < INPUTS) {
                if (qa.state() != QpState.RTS) {
                    rearm(qa, qb.qpNum(), LID_B);
                }
                if (rq.state != QpState.RTS) {
                    rearm(qb, qa.qpNum(), LID_A);
                    postRecvs(qb, 4);
                } else if (rq.rq.doorbell().producer() - rq.rqHead < 2) {
                    postRecvs(qb, 4);
                }
                final int[] m = messages.get(rnd.nextInt(messages.size()));
                for (int r = m[0]; r < m[1] && i < INPUTS && rq.state == QpState.RTS; r++, i++) {
                    final byte[] in = next(records.get(r), rq.ePsn, rnd.nextInt(3) == 0, true);
                    final int len = Math.min(in.length, (int) wire.byteSize());
                    MemorySegment.copy(MemorySegment.ofArray(in), 0, wire, 0, len);
                    final int before = rq.ePsn;
                    final boolean behind = in.length >= Packet.BASE_LENGTH
                        && io.gdrkit.softnic.wire.Psn.diff(v.wrap(wire, 0, len).psn(), before) < 0;
                    if (!b.dev.duty.tryAcquire()) {
                        fail("input " + i + S + ": b's duty is held by someone else");
                    }
                    try {
                        b.dev.receiver.onRecord(wire, 0, len);
                    } catch (final RuntimeException e) {
                        throw new AssertionError("input " + i + S + " threw out of the receive path", e);
                    } finally {
                        b.dev.duty.release();
                    }
                    final int advanced = io.gdrkit.softnic.wire.Psn.diff(rq.ePsn, before);
                    spans += advanced > 1 ? 1 : 0;
                    partial += advanced > 0 && behind ? 1 : 0;
                    if (i % 16 == 0) {
                        settle(2); // responses over TCP to a, NAKs, flushes: the engines run on the fuzzed state
                        drain();
                    }
                }
            }
        }
        settle(200);
        drain();
        assertNull(a.dev.fatal(), () -> "device a failed" + S + ": " + a.dev.fatal());
        assertNull(b.dev.fatal(), () -> "device b failed" + S + ": " + b.dev.fatal());
        final int accepted = spans;
        final int again = partial;
        assertTrue(b.dev.receiver.malformed() > malformed, "some inputs were malformed" + S);
        assertTrue(b.dev.receiver.foreign() > foreign, "some inputs came from another LID" + S);
        assertTrue(rearms > 10 && events.size() > 10, () -> rearms + " re-arms, " + events.size() + " events" + S);
        assertTrue(accepted > 1000, () -> accepted + " spans accepted (ePSN moved by more than one)" + S);
        assertTrue(again > 50, () -> again + " spans partly received before were accepted from ePSN on" + S);
    }

    /**
     * The next input from a captured record: with {@code mutate}, one to three fields set to edge or nearby values
     * (big-endian, as on the wire), now and then the generic byte mutator instead. The PSN is then put at the
     * expected one, or for one in four up to the span's packets before it, unless a mutation put it ahead.
     * {@code addresses} allows SLID and DestQP mutations (records straight to the receive path only: on the socket
     * a spoofed SLID closes the connection, see {@link #fuzzWire}).
     */
    private byte[] next(final byte[] valid, final int ePsn, final boolean mutate, final boolean addresses) {
        if (mutate && rnd.nextInt(16) == 0) {
            final byte[] m = Mutator.mutate(valid, rnd, rnd.nextBoolean());
            return addresses ? m : addressed(m, valid);
        }
        final Packet v = new Packet().wrap(MemorySegment.ofArray(valid), 0, valid.length);
        final int header = (int) v.payloadOffset();
        final int payload = v.payloadLength();
        final int k = Math.max(1, (payload + MTU - 1) / MTU);
        byte[] out = valid.clone();
        boolean psnSet = false;
        final int ops = mutate ? 1 + rnd.nextInt(3) : 0;
        for (int op = 0; op < ops; op++) {
            final ByteBuffer bb = ByteBuffer.wrap(out);
            switch (rnd.nextInt(addresses ? 10 : 8)) {
                case 0, 1 -> { // whole and partial MTUs: the span's packet count comes from this
                    final int len = Math.max(0, pick(0, 1, MTU - 1, MTU, MTU + 1, payload - 1, payload + 1,
                        (k - 1) * MTU + 1, k * MTU, k * MTU + 1, (k + 1) * MTU, 16 * MTU, 16 * MTU + 1, 17 * MTU,
                        64 * MTU, 255 * MTU + 3, rnd.nextInt(20 * MTU)));
                    out = resize(out, Math.min(out.length, header) + len, rnd.nextInt(8) != 0);
                }
                case 2 -> {
                    if (out.length > Packet.LRH_LENGTH) {
                        out[Packet.LRH_LENGTH] = (byte) OPCODES[rnd.nextInt(OPCODES.length)];
                    }
                }
                case 3 -> {
                    if (v.is(BthOpcode.RETH) && out.length >= Packet.BASE_LENGTH + Packet.RETH_LENGTH) {
                        final int at = Packet.BASE_LENGTH; // a WRITE's FIRST or ONLY: where it lands, how much
                        switch (rnd.nextInt(3)) {
                            case 0 -> bb.putLong(at, pickLong(v.rethVa() + 1, v.rethVa() - 1, v.rethVa() + MTU,
                                window.address() + WINDOW - MTU, window.address() + WINDOW - payload + 1,
                                window.address() - MTU, window.address() - 1, guarded.address(), other.address()
                                    + OTHER - MTU, other.address() - payload, 0, -1, Long.MAX_VALUE, rnd.nextLong()));
                            case 1 -> bb.putInt(at + 8, pick(v.rethRkey() + 1, other.rkey(), window.lkey(), 0,
                                rnd.nextInt()));
                            default -> bb.putInt(at + 12, pick(0, 1, payload - 1, payload + 1, payload - MTU,
                                v.rethDmaLength() + 1, v.rethDmaLength() - 1, 2 * v.rethDmaLength(),
                                Integer.MAX_VALUE, Integer.MIN_VALUE, -1, rnd.nextInt()));
                        }
                    } else if (out.length > 16) {
                        out[16] ^= (byte) 0x80; // AckReq
                    }
                }
                case 4 -> { // cut: the header's length fixed up (a shorter packet) or not (malformed)
                    out = resize(out, out.length == 0 ? 0 : rnd.nextInt(out.length), rnd.nextBoolean());
                }
                case 5 -> {
                    if (out.length >= Packet.BASE_LENGTH) { // ahead of ePSN: a sequence NAK, nothing placed
                        psnSet = true;
                        bb.putInt(16, bb.getInt(16) & 0x80000000 | (ePsn + pick(1, 2, k, 1 << 23, rnd.nextInt(1
                            << 24))) & 0xFFFFFF);
                    }
                }
                case 6 -> {
                    if (out.length > 9) {
                        out[9] ^= (byte) 0x80; // SE
                    }
                }
                case 7 -> {
                    if (out.length > 16) {
                        out[16] ^= (byte) 0x80; // AckReq: one ACK for a whole span
                    }
                }
                case 8 -> {
                    if (out.length >= 4) {
                        bb.putShort(2, (short) pick(0, LID_B, 3, LID_RAW, 0xFFFF, rnd.nextInt(1 << 16))); // SLID
                    }
                }
                default -> {
                    if (out.length >= 16) {
                        bb.putInt(12, bb.getInt(12) & 0xFF000000 | pick(0, 1, 0xFFFFFF, rnd.nextInt(1 << 24))); // QP
                    }
                }
            }
        }
        if (!psnSet && out.length >= Packet.BASE_LENGTH) {
            final ByteBuffer bb = ByteBuffer.wrap(out);
            final int packets = Math.max(1, (out.length - Math.min(out.length, header) + MTU - 1) / MTU);
            final int back = rnd.nextInt(4) != 0 ? 0 : rnd.nextInt(Math.min(packets, 64) + 1);
            bb.putInt(16, bb.getInt(16) & 0x80000000 | (ePsn - back) & 0xFFFFFF);
        }
        return addresses ? out : addressed(out, valid);
    }

    /**
     * On the socket: the DLID, SLID and DestQP of {@code valid} kept, and at least the LRH's addresses, so the
     * fabric passes the record on (it closes a connection whose packet names other LIDs or is shorter than that)
     * and the probes' count holds.
     */
    private static byte[] addressed(final byte[] mutated, final byte[] valid) {
        final byte[] kept = Arrays.copyOf(mutated, Math.max(4, mutated.length));
        System.arraycopy(valid, 0, kept, 0, 4);
        if (kept.length >= 16) {
            System.arraycopy(valid, 12, kept, 12, 4);
        }
        return kept;
    }

    /** The packet cut or extended (new bytes random) to {@code length}; its LRH length made to match or not. */
    private byte[] resize(final byte[] packet, final int length, final boolean fixHeader) {
        final byte[] out = Arrays.copyOf(packet, length);
        for (int i = packet.length; i < length; i++) {
            out[i] = (byte) rnd.nextInt(256);
        }
        if (fixHeader && length >= 8) {
            ByteBuffer.wrap(out).putInt(4, length);
        }
        return out;
    }

    private int pick(final int... values) {
        return values[rnd.nextInt(values.length)];
    }

    private long pickLong(final long... values) {
        return values[rnd.nextInt(values.length)];
    }

    // ---------------- hand-made messages through the socket ----------------

    /** One hand-made message: its records' opcodes and payload lengths, and for a WRITE its length and offset. */
    private record Message(int[] opcodes, int[] payloads, long windowOffset) {
        int total() {
            return Arrays.stream(payloads).sum();
        }
    }

    private static final Message[] MESSAGES = {
        new Message(new int[] {BthOpcode.RDMA_WRITE_ONLY}, new int[] {3 * MTU + 5}, 0),
        new Message(new int[] {BthOpcode.RDMA_WRITE_FIRST, BthOpcode.RDMA_WRITE_MIDDLE, BthOpcode.RDMA_WRITE_LAST},
            new int[] {4 * MTU, 16 * MTU, 2 * MTU + 1}, 4096),
        new Message(new int[] {BthOpcode.RDMA_WRITE_FIRST, BthOpcode.RDMA_WRITE_LAST_WITH_IMM},
            new int[] {2 * MTU, MTU}, 100_000),
        new Message(new int[] {BthOpcode.SEND_ONLY}, new int[] {2 * MTU}, 0),
        new Message(new int[] {BthOpcode.SEND_FIRST, BthOpcode.SEND_MIDDLE, BthOpcode.SEND_LAST_WITH_IMM},
            new int[] {16 * MTU, 8 * MTU, 3 * MTU + 7}, 0),
        new Message(new int[] {BthOpcode.SEND_ONLY_WITH_IMM}, new int[] {MTU + 1}, 0),
    };

    /**
     * {@link #WIRE_MESSAGES} messages from a raw peer (LID 9) to a second QP of b, through the socket: each record
     * mutated with probability 1/3 as {@link #next} does (no SLID or DestQP), PSNs from the expected one or a few
     * packets before it; one record in 24 is instead a frame the fabric must refuse by closing the connection (SLID or
     * DLID spoofed, a length below 4 or above the largest packet), after which the peer joins again. After each
     * message a probe (a record from LID 9 for the QP connected to a: dropped as foreign, counted) says the NIC
     * took everything before it; the wait for it is bounded.
     */
    private void fuzzWire(final TcpFabric fb, final QueuePair qb) throws Exception {
        final QueuePair qw = b.qp();
        QpBringUp.toRts(qw, RAW_QPN, LID_RAW, 900, rnd.nextInt(1 << 24), attr);
        postRecvs(qw, 4);
        final SoftQp wq = (SoftQp) qw;
        final long errorsBefore = fb.protocolErrors();
        final byte[] probe = TcpInlineSpanTest.frame(BthOpcode.SEND_ONLY, qb.qpNum(), 0, 0, 0, 0, 0, 0);
        int session = 100;
        int closes = 0;
        int placed = 0;
        long probes = b.dev.receiver.foreign();
        Socket raw = TcpInlineSpanTest.join(fb, LID_RAW, session++, LINK);
        try {
            for (int n = 0; n < WIRE_MESSAGES; n++) {
                if (wq.state != QpState.RTS) {
                    rearm(qw, RAW_QPN, LID_RAW);
                    postRecvs(qw, 4);
                } else if (wq.rq.doorbell().producer() - wq.rqHead < 2) {
                    postRecvs(qw, 4);
                }
                final Message m = MESSAGES[rnd.nextInt(MESSAGES.length)];
                final int before = wq.ePsn;
                final int back = rnd.nextInt(4) != 0 ? 0 : rnd.nextInt(5);
                int psn = before - back;
                long from = 0;
                boolean closed = false;
                final OutputStream out = raw.getOutputStream();
                for (int r = 0; r < m.opcodes().length; r++) {
                    final int payload = m.payloads()[r];
                    final byte[] f = TcpInlineSpanTest.frame(m.opcodes()[r], qw.qpNum(), psn & 0xFFFFFF,
                        window.address() + m.windowOffset(), window.rkey(), m.total(), payload, from);
                    psn += (payload + MTU - 1) / MTU;
                    from += payload;
                    if (rnd.nextInt(24) == 0) {
                        out.write(refused(f, fb));
                        out.flush();
                        closed = true;
                        break;
                    }
                    final byte[] packet = Arrays.copyOfRange(f, 8, 8 + ByteBuffer.wrap(f).order(
                        ByteOrder.LITTLE_ENDIAN).getInt(0));
                    final int ePsnNow = packet.length >= Packet.BASE_LENGTH
                        ? ByteBuffer.wrap(packet).getInt(16) & 0xFFFFFF : 0;
                    out.write(frameOf(next(packet, ePsnNow, rnd.nextInt(3) == 0, false)));
                }
                if (closed) {
                    // the fabric closes this connection only, by name; the peer joins again
                    final int expect = ++closes;
                    pump(fb, () -> fb.protocolErrors() - errorsBefore >= expect, "the refused frame of message "
                        + n);
                    raw.close();
                    raw = TcpInlineSpanTest.join(fb, LID_RAW, session++, LINK);
                    continue;
                }
                out.write(probe);
                out.flush();
                final long expect = ++probes;
                pump(fb, () -> b.dev.receiver.foreign() >= expect, "message " + n);
                skipResponses(raw.getInputStream());
                placed += io.gdrkit.softnic.wire.Psn.diff(wq.ePsn, before) > 0 ? 1 : 0;
                if (n % 4 == 0) {
                    drain();
                }
            }
            final int closesDone = closes;
            assertTrue(closes > 10, () -> closesDone + " connections closed for refused frames" + S);
            final int accepted = placed;
            assertTrue(accepted > WIRE_MESSAGES / 4, () -> accepted + " messages moved ePSN" + S);
            settle(50);
            drain();
            // afterwards a fresh raw connection on a fresh QP carries a span, byte-exact
            rearm(qw, RAW_QPN, LID_RAW);
            raw.close();
            pump(fb, () -> !fb.lidInUse(LID_RAW), "the end of the raw peer's connection");
            raw = TcpInlineSpanTest.join(fb, LID_RAW, session++, LINK);
            final int len = 3 * MTU + 5;
            window.segment().asSlice(0, len + 1).fill((byte) 0x5a);
            final int e = wq.ePsn;
            raw.getOutputStream().write(TcpInlineSpanTest.frame(BthOpcode.RDMA_WRITE_ONLY, qw.qpNum(), e,
                window.address(), window.rkey(), len, len, 0));
            raw.getOutputStream().flush();
            pump(fb, () -> wq.ePsn == ((e + 4) & 0xFFFFFF), "the span after the wire fuzz");
            for (int i = 0; i < len; i++) {
                assertEquals(TcpInlineSpanTest.messageByte(i), window.segment().get(ValueLayout.JAVA_BYTE, i),
                    "byte " + i + " of the span after the wire fuzz" + S);
            }
            assertEquals((byte) 0x5a, window.segment().get(ValueLayout.JAVA_BYTE, len), "not one byte more" + S);
        } finally {
            raw.close();
        }
    }

    /** A frame the fabric refuses by closing the connection: spoofed SLID or DLID, or an impossible length. */
    private byte[] refused(final byte[] frame, final TcpFabric fb) {
        final byte[] f = frame.clone();
        final ByteBuffer le = ByteBuffer.wrap(f).order(ByteOrder.LITTLE_ENDIAN);
        final ByteBuffer be = ByteBuffer.wrap(f);
        switch (rnd.nextInt(4)) {
            case 0 -> be.putShort(8 + 2, (short) pick(0, LID_A, LID_B, LID_RAW + 1, 0xFFFF)); // SLID
            case 1 -> be.putShort(8, (short) pick(0, LID_A, LID_RAW, 0xFFFF)); // DLID
            case 2 -> le.putInt(0, pick(-1, Integer.MIN_VALUE, LINK / 2, LINK, Integer.MAX_VALUE)); // length
            default -> { // shorter than an LRH's addresses
                final int len = rnd.nextInt(4);
                final byte[] s = new byte[8 + 8];
                ByteBuffer.wrap(s).order(ByteOrder.LITTLE_ENDIAN).putInt(0, len);
                System.arraycopy(f, 8, s, 8, len);
                return s;
            }
        }
        return f;
    }

    /** A packet framed as on the socket: its length, no CRC, the packet, padding to 8. */
    private static byte[] frameOf(final byte[] packet) {
        final byte[] f = new byte[(8 + packet.length + 7) & ~7];
        ByteBuffer.wrap(f).order(ByteOrder.LITTLE_ENDIAN).putInt(0, packet.length);
        System.arraycopy(packet, 0, f, 8, packet.length);
        return f;
    }

    /** Moves both NICs until {@code done}, within 10 s: a duty cycle that stops taking frames fails here. */
    private void pump(final TcpFabric fabric, final java.util.function.BooleanSupplier done, final String what) {
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("the NIC did not take " + what + " within 10 s" + S + " (frames refused: "
                    + fabric.protocolErrors() + ", spoofed: " + fabric.spoofedPackets() + ", last: " + fabric.lastError() + ")");
            }
            settle(1);
        }
    }

    /** The responses b sent the raw peer (ACKs, NAKs): read and dropped, so its socket never backs up. */
    private static void skipResponses(final InputStream in) throws java.io.IOException {
        int n;
        while ((n = in.available()) > 0) {
            in.skipNBytes(n);
        }
    }

    // ---------------- afterwards ----------------

    /** A fresh QP pair on the same NICs: a WRITE in spans and a SEND of two SGEs, byte-exact. */
    private void assertStillByteExact(final Tap tap, final MemorySegment src, final MemoryRegion srcMr,
                                      final TcpFabric fb) {
        final QueuePair qa = a.qp();
        final QueuePair qb = b.qp();
        QpBringUp.connect(qa, LID_A, rnd.nextInt(1 << 24), qb, LID_B, rnd.nextInt(1 << 24), attr);
        drain();
        final long spans = tap.spans;
        tap.on = true;
        final int size = 37 * MTU + 11;
        Fixture.fill(src.asSlice(0, size), SEED + 2);
        window.segment().fill((byte) 0);
        transfer(qa, qb, new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .sge(srcMr, 0, size).remote(window.address() + 4096, window.rkey()), false, "WRITE after the fuzz");
        Fixture.assertBytes(src.asSlice(0, size), window.segment().asSlice(4096, size), "WRITE after the fuzz" + S);
        window.segment().fill((byte) 0);
        postRecvs(qb, 1);
        final SendWorkRequest send = new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).numSge(2);
        send.sge(0).set(srcMr, 0, 2 * MTU + 1);
        send.sge(1).set(srcMr, 2 * MTU + 1, size - 2 * MTU - 1);
        transfer(qa, qb, send, true, "SEND after the fuzz");
        tap.on = false;
        Fixture.assertBytes(src.asSlice(0, 5 * MTU + 3), window.segment().asSlice(64 * 1024, 5 * MTU + 3),
            "SEND after the fuzz, first SGE" + S);
        Fixture.assertBytes(src.asSlice(5 * MTU + 3, size - 5 * MTU - 3),
            window.segment().asSlice(256 * 1024, size - 5 * MTU - 3), "SEND after the fuzz, second SGE" + S);
        assertTrue(tap.spans > spans, "the last transfers went in spans" + S);
        assertNull(a.dev.fatal(), () -> "device a failed" + S + ": " + a.dev.fatal());
        assertNull(b.dev.fatal(), () -> "device b failed" + S + ": " + b.dev.fatal());
        assertTrue(fb.protocolErrors() > 0, "the refused frames were counted" + S);
    }
}
