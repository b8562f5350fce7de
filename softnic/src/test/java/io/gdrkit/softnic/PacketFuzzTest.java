/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.fabric.Mutator;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seeded fuzzing of the packet path: real packets of WRITE, SEND, READ and atomic exchanges (requests and
 * responses, captured on the link) are mutated 25,000 times and handed to the receiving NIC as if they came off
 * the wire. No input may throw out of an engine (which would make the device fatal) or hang a duty cycle.
 *
 * <p>Reference records (single copy: the payload named in the sender's memory) and segment-offload spans (one
 * record for several packets) are fuzzed field by field, on the in-JVM fabric and on the shared-memory fabric's
 * cross-process path (process_vm_readv): payload length, span count, segment count, token, each segment's address,
 * key and length, PSN (around the expected one, so spans partly received before are hit), opcode, SLID. Besides
 * the above, no byte outside the receiver's MRs and no byte of the sender's memory may change, every error the
 * receiver reports is named, and afterwards the same NICs carry a WRITE and a SEND byte-exact.
 */
@Timeout(120)
class PacketFuzzTest {
    private static final int INPUTS = 25_000;

    private record Captured(int dst, byte[] bytes) {
    }

    @Test
    void mutatedPacketsNeverBreakTheNic() {
        final List<Captured> captured = new ArrayList<>();
        final boolean[] capturing = {true};
        final LinkHook tap = (src, dst, buf, off, len) -> {
            if (capturing[0] && captured.size() < 400) {
                captured.add(new Captured(dst, buf.asSlice(off, len).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
            }
            return LinkHook.DELIVER;
        };
        try (Fixture f = new Fixture(new SoftNicContext().linkHook(tap), 1 << 20)) {
            f.b.qp.postRecv(new RecvWorkRequest().wrId(1).sge(f.b.mr, 0, 1 << 16));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 20_000).remote(f.b.mr.address(), f.b.mr.rkey()).imm(5));
            f.awaitSuccess(f.a.scq, "WRITE_WITH_IMM");
            f.b.qp.postRecv(new RecvWorkRequest().wrId(2).sge(f.b.mr, 0, 1 << 16));
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 9000));
            f.awaitSuccess(f.a.scq, "SEND");
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 10_000).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "READ");
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 8).remote(f.b.mr.address() + 64, f.b.mr.rkey()).atomic(3, 0));
            f.awaitSuccess(f.a.scq, "FETCH_AND_ADD");
            capturing[0] = false;
            assertTrue(captured.size() > 10, "captured " + captured.size() + " packets");
            final SplittableRandom rnd = new SplittableRandom(1820);
            try (Arena arena = Arena.ofConfined()) {
                final MemorySegment wire = arena.allocate(1 << 16, 8);
                int delivered = 0;
                for (int i = 0; i < INPUTS; i++) {
                    final Captured c = captured.get(rnd.nextInt(captured.size()));
                    final byte[] in = Mutator.mutate(c.bytes(), rnd, rnd.nextInt(3) != 0);
                    final int len = Math.min(in.length, (int) wire.byteSize());
                    MemorySegment.copy(MemorySegment.ofArray(in), 0, wire, 0, len);
                    final SoftDevice dev = c.dst() == f.a.dev.lid() ? f.a.dev : f.b.dev;
                    if (dev.duty.tryAcquire()) {
                        delivered++;
                        try {
                            dev.receiver.onRecord(wire, 0, len);
                        } catch (final RuntimeException e) {
                            throw new AssertionError("input " + i + " threw out of the receive path", e);
                        } finally {
                            dev.duty.release();
                        }
                    }
                    if (i % 64 == 0) {
                        f.settle(4); // responses, retransmissions, NAKs: the engines run on the fuzzed state
                    }
                }
                // invoker progress on one thread: nobody else holds a duty, so every input reached a receive path
                assertEquals(INPUTS, delivered, "inputs that reached the receive path");
            }
            f.settle(200);
            assertNull(f.a.dev.fatal(), () -> "device a failed: " + f.a.dev.fatal());
            assertNull(f.b.dev.fatal(), () -> "device b failed: " + f.b.dev.fatal());
            assertTrue(f.a.dev.receiver.malformed() + f.b.dev.receiver.malformed() > 0, "some inputs were malformed");
        }
    }

    private static final int REF_INPUTS = 20_000;
    private static final int SMALL_MTU = 1024;

    /** The in-JVM fabric, MTU 1 KiB, spans of up to 4 packets: the responder resolves references by L_Key. */
    @Test
    void mutatedReferenceRecordsAndSpansNeverBreakTheNic() {
        final Tap tap = new Tap();
        final QpInitAttr init = new QpInitAttr();
        init.cap.maxSendSge(4).maxRecvSge(4);
        final QpAttr attr = QpBringUp.rcDefaults().pathMtu(Mtu.MTU_1024);
        try (Fixture f = new Fixture(new SoftNicContext().oneCopyMin(1).batch(4).linkHook(tap), 1 << 20, init,
            attr)) {
            final RefFuzz z = new RefFuzz(f.a, f.b, f.arena, attr, SMALL_MTU, f::settle, 2021);
            z.capture(tap);
            z.fuzz(REF_INPUTS);
            z.assertUndamaged();
            z.assertRefused("does not fit", "refused for WRITE", "payload does not match the DMA length",
                "out of sequence");
            assertTrue(f.b.dev.responder.unresolvedReferences() > 0, "some references named nothing of the sender's");
            z.assertStillByteExact();
        }
    }

    /**
     * The shared-memory fabric's cross-process single copy (two fabrics in this JVM, so one pid: process_vm_readv
     * reads this process), spans on ({@code gdrkit.nic.shm.batch}): the responder pulls what the reference names
     * from the process granted for the record's SLID.
     */
    @Test
    void mutatedCrossProcessReferencesAndSpansNeverBreakTheNic() {
        final Tap tap = new Tap();
        final SoftNicContext ctx = new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER)
            .shmBatch(true);
        try (ShmCmaTest.Pair p = new ShmCmaTest.Pair(ctx, new SoftNicContext().progressMode(
            SoftNicContext.ProgressMode.INVOKER).shmBatch(true), tap, null, 2 << 20)) {
            p.awaitProbe();
            assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
            final RefFuzz z = new RefFuzz(p.a, p.b, p.arena, QpBringUp.rcDefaults(), 4096, rounds -> {
                for (int i = 0; i < rounds; i++) {
                    p.step();
                }
            }, 2022);
            z.capture(tap);
            final long pullErrors = p.fb.copyMode(2, 1).pullErrors();
            z.fuzz(REF_INPUTS);
            z.assertUndamaged();
            assertTrue(p.fb.copyMode(2, 1).pullErrors() > pullErrors, "some pulls failed, by name");
            // a record whose SLID was mutated is not the QP's connected peer: dropped before any pull; a pull refused
            // for its token or the memory it names; a span or payload refused for its size
            assertTrue(p.a.dev.packetsFromStrangers() + p.b.dev.packetsFromStrangers() > 0,
                "records with another SLID were dropped as strangers");
            z.assertRefused("a reference names process ", "process_vm_readv of", "does not fit", "refused for WRITE",
                "payload does not match the DMA length");
            final long refs = p.modeAtoB().referencePackets();
            z.assertStillByteExact();
            assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
            assertTrue(p.modeAtoB().referencePackets() > refs, "the last transfers went by reference again");
        }
    }

    /** Captures the reference records a sends to b while {@link #on}; passes references and spans. */
    private static final class Tap implements LinkHook {
        final List<byte[]> records = new ArrayList<>();
        final Packet view = new Packet();
        volatile boolean on;
        int dst;

        @Override
        public int onPacket(final int src, final int dst, final MemorySegment buf, final long off, final int len) {
            if (on && dst == this.dst && view.wrap(buf, off, len).isReference() && view.is(BthOpcode.REQUEST)) {
                records.add(buf.asSlice(off, len).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
            }
            return DELIVER;
        }

        @Override
        public boolean passesReferences() {
            return true;
        }

        @Override
        public boolean passesBatches() {
            return true;
        }
    }

    /**
     * One reference fuzz: a (sender) and b (receiver) of one connected RC pair. b's traffic lands in an MR over the
     * middle of a larger segment whose guard bands belong to no MR; a's buffer is only ever read.
     */
    private static final class RefFuzz {
        private static final long GUARD = 1 << 20;
        private static final long WINDOW = 1 << 20;
        private static final int[] OPCODES = {BthOpcode.SEND_FIRST, BthOpcode.SEND_MIDDLE, BthOpcode.SEND_LAST,
            BthOpcode.SEND_LAST_WITH_IMM, BthOpcode.SEND_ONLY, BthOpcode.SEND_ONLY_WITH_IMM, BthOpcode.RDMA_WRITE_FIRST,
            BthOpcode.RDMA_WRITE_MIDDLE, BthOpcode.RDMA_WRITE_LAST, BthOpcode.RDMA_WRITE_LAST_WITH_IMM,
            BthOpcode.RDMA_WRITE_ONLY, BthOpcode.RDMA_WRITE_ONLY_WITH_IMM, BthOpcode.SEND_LAST_WITH_INVALIDATE,
            BthOpcode.SEND_ONLY_WITH_INVALIDATE};
        final Fixture.Side a;
        final Fixture.Side b;
        final QpAttr attr;
        final int mtu;
        final java.util.function.IntConsumer settle;
        final SplittableRandom rnd;
        final MemorySegment guarded;
        final MemoryRegion window;
        /** Memory of this process that no MR covers: a reference may name it, nothing may write it. */
        final MemorySegment secret;
        final MemorySegment aBefore;
        final MemorySegment guardBefore;
        final MemorySegment secretBefore;
        final List<byte[]> records = new ArrayList<>();
        final List<String> events = new ArrayList<>();
        private final WorkCompletion[] wc = WorkCompletion.array(16);
        private long posted;
        int rearms;
        int spans;

        RefFuzz(final Fixture.Side a, final Fixture.Side b, final Arena arena, final QpAttr attr, final int mtu,
                final java.util.function.IntConsumer settle, final long seed) {
            this.a = a;
            this.b = b;
            this.attr = attr;
            this.mtu = mtu;
            this.settle = settle;
            this.rnd = new SplittableRandom(seed);
            guarded = arena.allocate(2 * GUARD + WINDOW, 4096);
            Fixture.fill(guarded, seed);
            window = b.pd.registerMr(guarded.asSlice(GUARD, WINDOW), AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            secret = arena.allocate(1 << 16, 4096);
            Fixture.fill(secret, seed + 1);
            Fixture.fill(a.buf, seed + 2);
            guardBefore = copy(guarded);
            secretBefore = copy(secret);
            aBefore = copy(a.buf);
        }

        private static MemorySegment copy(final MemorySegment s) {
            final MemorySegment c = Arena.ofAuto().allocate(s.byteSize());
            MemorySegment.copy(s, 0, c, 0, s.byteSize());
            return c;
        }

        /** WRITE_WITH_IMM, SEND of two SGEs into two, WRITEs around span boundaries: their records, captured. */
        void capture(final Tap tap) {
            tap.dst = b.dev.lid();
            tap.on = true;
            final int big = 20 * mtu + 123;
            postRecvs(2);
            final SendWorkRequest wi = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                .flags(SendFlags.SIGNALED).sge(a.mr, 0, big).remote(window.address(), window.rkey()).imm(7);
            transfer(wi, true, "WRITE_WITH_IMM");
            final SendWorkRequest send = new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .numSge(2);
            send.sge(0).set(a.mr, 100, 3 * mtu + 5);
            send.sge(1).set(a.mr, 200_000, 6 * mtu);
            transfer(send, true, "SEND");
            for (final int size : new int[] {mtu + 1, 3 * mtu, 8 * mtu, 5 * mtu - 1}) {
                transfer(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(a.mr, 4096, size).remote(window.address() + 8192, window.rkey()), false, "WRITE " + size);
            }
            tap.on = false;
            synchronized (tap.records) {
                records.addAll(tap.records);
            }
            final Packet v = new Packet();
            for (final byte[] r : records) {
                spans += v.wrap(MemorySegment.ofArray(r), 0, r.length).packets() > 1 ? 1 : 0;
            }
            assertTrue(records.size() >= 6 && spans >= 3, () -> records.size() + " reference records captured, "
                + spans + " of them spans");
        }

        private void transfer(final SendWorkRequest w, final boolean consumesRecv, final String what) {
            a.qp.postSend(w);
            final WorkCompletion c = await(a.scq, what);
            assertEquals(WcStatus.SUCCESS, c.status, () -> what + ": " + c);
            if (consumesRecv) {
                final WorkCompletion r = await(b.rcq, what + "'s receive");
                assertEquals(WcStatus.SUCCESS, r.status, () -> what + "'s receive: " + r);
            }
        }

        private WorkCompletion await(final io.gdrkit.verbs.CompletionQueue cq, final String what) {
            final WorkCompletion[] one = {new WorkCompletion()};
            final long deadline = System.nanoTime() + 30_000_000_000L;
            while (cq.poll(one) == 0) {
                assertTrue(System.nanoTime() < deadline, () -> "timed out after 30 s waiting for " + what);
                settle.accept(1);
            }
            return one[0];
        }

        /** Receive WQEs of two SGEs into the window, so SEND records find one. */
        private void postRecvs(final int n) {
            for (int i = 0; i < n; i++) {
                final RecvWorkRequest rw = new RecvWorkRequest().wrId(++posted).numSge(2);
                rw.sge(0).set(window, 64 * 1024, 5 * mtu + 3);
                rw.sge(1).set(window, 256 * 1024, 64 * mtu);
                b.qp.postRecv(rw);
            }
        }

        /** A QP in ERR (a refused record's NAK) is brought back to RTS, so the fuzz goes on reaching the checks. */
        private void rearm(final Fixture.Side s, final Fixture.Side peer) {
            final QpAttr reset = new QpAttr();
            reset.qpState = QpState.RESET;
            s.qp.modify(reset, QpAttrMask.STATE);
            QpBringUp.toRts(s.qp, peer.qp.qpNum(), peer.dev.lid(), rnd.nextInt(1 << 24), rnd.nextInt(1 << 24), attr);
            rearms++;
        }

        /**
         * Feeds {@code inputs} records to b: whole captured messages in order (so MIDDLE and LAST records meet a QP
         * inside their message), each record mutated with probability 1/3, its PSN at the expected one or, now and
         * then, a few packets before it (a span partly received before). A QP in ERR is re-armed before the next
         * message.
         */
        void fuzz(final int inputs) {
            final List<int[]> messages = new ArrayList<>();
            final Packet v = new Packet();
            int start = 0;
            for (int i = 0; i < records.size(); i++) {
                if (v.wrap(MemorySegment.ofArray(records.get(i)), 0, records.get(i).length).is(BthOpcode.LAST)) {
                    messages.add(new int[] {start, i + 1});
                    start = i + 1;
                }
            }
            assertTrue(messages.size() >= 6, () -> messages.size() + " messages captured");
            try (Arena arena = Arena.ofConfined()) {
                final MemorySegment wire = arena.allocate(1 << 16, 8);
                final SoftQp rq = (SoftQp) b.qp;
                int delivered = 0;
                int i = 0;
                while (i < inputs) {
                    if (a.qp.state() != QpState.RTS) {
                        rearm(a, b);
                    }
                    if (rq.state != QpState.RTS) {
                        rearm(b, a);
                        postRecvs(4);
                    } else if (rq.rq.doorbell().producer() - rq.rqHead < 2) {
                        postRecvs(4);
                    }
                    final int[] m = messages.get(rnd.nextInt(messages.size()));
                    for (int r = m[0]; r < m[1] && i < inputs && rq.state == QpState.RTS; r++, i++) {
                        final byte[] in = next(records.get(r), rq.ePsn, rnd.nextInt(3) == 0);
                        final int len = Math.min(in.length, (int) wire.byteSize());
                        MemorySegment.copy(MemorySegment.ofArray(in), 0, wire, 0, len);
                        if (b.dev.duty.tryAcquire()) {
                            delivered++;
                            try {
                                b.dev.receiver.onRecord(wire, 0, len);
                            } catch (final RuntimeException e) {
                                throw new AssertionError("input " + i + " threw out of the receive path", e);
                            } finally {
                                b.dev.duty.release();
                            }
                        }
                        if (i % 16 == 0) {
                            settle.accept(2); // responses, NAKs, flushes: the engines run on the fuzzed state
                            drain();
                        }
                    }
                }
                assertEquals(inputs, delivered, "inputs that reached the receive path");
            }
            settle.accept(200);
            drain();
            assertNull(a.dev.fatal(), () -> "device a failed: " + a.dev.fatal());
            assertNull(b.dev.fatal(), () -> "device b failed: " + b.dev.fatal());
            assertTrue(b.dev.receiver.malformed() > 0, "some inputs were malformed");
            assertTrue(rearms > 10 && events.size() > 10, () -> rearms + " re-arms, " + events.size() + " events");
            assertTrue(b.dev.responder.referencedPackets() > 1000, "records that passed every check were placed");
        }

        /** Each of {@code refusals} names at least one event: those checks were reached and said why. */
        void assertRefused(final String... refusals) {
            for (final String r : refusals) {
                assertTrue(events.stream().anyMatch(d -> d.contains(r)), () -> "no event names '" + r + "'");
            }
        }

        /** Empties the CQs and the async event queues; each event must name what happened. */
        private void drain() {
            for (final io.gdrkit.verbs.CompletionQueue cq : new io.gdrkit.verbs.CompletionQueue[] {a.scq, a.rcq,
                b.scq, b.rcq}) {
                while (cq.poll(wc) > 0) {
                    // completions of fuzzed messages (flushes, errors): their count is the fuzz's business
                }
            }
            for (final Fixture.Side s : new Fixture.Side[] {a, b}) {
                AsyncEvent e;
                while ((e = s.ctx.pollAsyncEvent()) != null) {
                    final String d = e.detail();
                    assertTrue(d != null && !d.isBlank() && !d.contains("Exception"), "an unnamed error: " + e);
                    events.add(d);
                }
            }
        }

        /**
         * The next input from a captured reference record: with {@code mutate}, one to three RefETH, RETH, BTH or LRH
         * fields set to edge or nearby values (big-endian, as on the wire), the segment lengths mostly made to add
         * up again (so the record stays well formed and reaches the responder), now and then the generic byte
         * mutator instead. The PSN is put at the expected one, or for one in eight a few packets before it.
         */
        byte[] next(final byte[] valid, final int ePsn, final boolean mutate) {
            if (mutate && rnd.nextInt(16) == 0) {
                return Mutator.mutate(valid, rnd, rnd.nextBoolean());
            }
            final byte[] out = valid.clone();
            final ByteBuffer bb = ByteBuffer.wrap(out);
            final Packet v = new Packet().wrap(MemorySegment.ofArray(valid), 0, valid.length);
            final int n = v.refCount();
            final int ref = valid.length - Packet.referenceLength(n);
            final int k = v.packets();
            boolean countChanged = false;
            final int ops = mutate ? 1 + rnd.nextInt(3) : 0;
            for (int op = 0; op < ops; op++) {
                final int i = rnd.nextInt(n);
                final int entry = ref + Packet.REF_HEADER_LENGTH + i * Packet.REF_ENTRY_LENGTH;
                switch (rnd.nextInt(11)) {
                    case 0 -> bb.putInt(ref, length(v.payloadLength()));
                    case 1 -> bb.putShort(ref + 6, (short) pick(0, 1, k - 2, k, k + 1, 15, 16, 255, 0xFFFF,
                        rnd.nextInt(1 << 16)));
                    case 2 -> {
                        bb.putShort(ref + 4, (short) pick(0, n - 1, n + 1, 0xFFFF, rnd.nextInt(1 << 16)));
                        countChanged = true;
                    }
                    case 3 -> bb.putLong(ref + 8, pickLong(0, 1, ProcessHandle.current().pid() + 1, -1,
                        Long.MIN_VALUE, v.refToken() ^ (1L << rnd.nextInt(64)), rnd.nextLong()));
                    case 4 -> {
                        final long va = v.refVa(i);
                        bb.putLong(entry, pickLong(va + 1, va - 1, va + mtu, va - mtu, va + (1 << 20), va - 4096, 0,
                            0x10, -1, Long.MIN_VALUE, window.address(), secret.address(), a.mr.address()
                                + a.buf.byteSize() - rnd.nextInt(1, 2 * mtu), guarded.address(), rnd.nextLong()));
                    }
                    case 5 -> bb.putInt(entry + 8, pick(0, v.refLkey(i) + 1, v.refLkey(i) ^ 0x100, window.lkey(),
                        b.mr.lkey(), rnd.nextInt()));
                    case 6 -> {
                        if (n > 1 && rnd.nextBoolean()) { // move bytes between two segments: the sum still holds
                            final int j = (i + 1 + rnd.nextInt(n - 1)) % n;
                            final int jl = ref + Packet.REF_HEADER_LENGTH + j * Packet.REF_ENTRY_LENGTH + 12;
                            final int shift = pick(v.refLength(i), v.refLength(i) + 1, 1, -1, mtu, rnd.nextInt());
                            bb.putInt(entry + 12, bb.getInt(entry + 12) - shift);
                            bb.putInt(jl, bb.getInt(jl) + shift);
                        } else {
                            bb.putInt(entry + 12, length(v.refLength(i)));
                        }
                    }
                    case 7 -> {
                        if (v.is(BthOpcode.RETH)) { // a WRITE's FIRST or ONLY: where it lands, and how much
                            final int at = Packet.BASE_LENGTH;
                            switch (rnd.nextInt(3)) {
                                case 0 -> bb.putLong(at, pickLong(v.rethVa() + 1, v.rethVa() - 1, v.rethVa()
                                    + WINDOW - mtu, window.address() - mtu, guarded.address(), b.buf.address()
                                        + b.buf.byteSize() - mtu, secret.address(), rnd.nextLong()));
                                case 1 -> bb.putInt(at + 8, pick(v.rethRkey() + 1, b.mr.rkey(), 0, rnd.nextInt()));
                                default -> bb.putInt(at + 12, length(v.rethDmaLength()));
                            }
                        } else {
                            out[16] ^= (byte) 0x80; // AckReq
                        }
                    }
                    case 8 -> out[Packet.LRH_LENGTH] = (byte) OPCODES[rnd.nextInt(OPCODES.length)];
                    case 9 -> bb.putShort(2, (short) pick(0, 1, 2, 3, 0xFFFF, rnd.nextInt(1 << 16)));
                    default -> bb.putInt(12, bb.getInt(12) & 0xFF000000 | pick(0, 1, 0xFFFFFF, rnd.nextInt(1 << 24),
                        b.qp.qpNum() + 1)); // DestQP
                }
            }
            if (mutate && !countChanged && rnd.nextInt(4) != 0) {
                long sum = 0;
                for (int i = 0; i < n; i++) {
                    sum += bb.getInt(ref + Packet.REF_HEADER_LENGTH + i * Packet.REF_ENTRY_LENGTH + 12);
                }
                bb.putInt(ref, (int) sum); // the lengths add up: well formed, on to the responder's checks
            }
            final int packets = 1 + (bb.getShort(ref + 6) & 0xFFFF);
            final int back = rnd.nextInt(8) != 0 ? 0 : rnd.nextInt(Math.min(packets, 64) + 1);
            final int psn = (ePsn - back) & 0xFFFFFF; // at ePSN, or a span partly (or wholly) received before
            bb.putInt(16, bb.getInt(16) & 0x80000000 | psn);
            return out;
        }

        private int length(final int orig) {
            return pick(0, 1, orig - 1, orig + 1, orig - mtu, orig + mtu, 2 * orig, mtu, 16 * mtu, Integer.MAX_VALUE,
                Integer.MIN_VALUE, -1, rnd.nextInt());
        }

        private int pick(final int... values) {
            return values[rnd.nextInt(values.length)];
        }

        private long pickLong(final long... values) {
            return values[rnd.nextInt(values.length)];
        }

        /** No byte outside b's MRs changed, none of a's (only ever read) nor of the unregistered secret. */
        void assertUndamaged() {
            Fixture.assertBytes(guardBefore.asSlice(0, GUARD), guarded.asSlice(0, GUARD), "the guard below b's MR");
            Fixture.assertBytes(guardBefore.asSlice(GUARD + WINDOW), guarded.asSlice(GUARD + WINDOW),
                "the guard above b's MR");
            Fixture.assertBytes(aBefore, a.buf, "the sender's memory");
            Fixture.assertBytes(secretBefore, secret, "memory no MR covers");
        }

        /** Both QPs fresh: a WRITE in spans and a SEND of two SGEs, byte-exact, by reference. */
        void assertStillByteExact() {
            final int psnA = rnd.nextInt(1 << 24);
            final int psnB = rnd.nextInt(1 << 24);
            for (final Fixture.Side s : new Fixture.Side[] {a, b}) {
                final QpAttr reset = new QpAttr();
                reset.qpState = QpState.RESET;
                s.qp.modify(reset, QpAttrMask.STATE);
            }
            QpBringUp.connect(a.qp, a.dev.lid(), psnA, b.qp, b.dev.lid(), psnB, attr);
            drain();
            final long placed = b.dev.responder.referencedPackets();
            final int size = 37 * mtu + 11;
            Fixture.fill(a.buf.asSlice(0, size), 99);
            transfer(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).sge(a.mr, 0, size)
                .remote(window.address() + 4096, window.rkey()), false, "WRITE after the fuzz");
            Fixture.assertBytes(a.buf.asSlice(0, size), window.segment().asSlice(4096, size), "WRITE after the fuzz");
            window.segment().fill((byte) 0);
            postRecvs(1);
            final SendWorkRequest send = new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .numSge(2);
            send.sge(0).set(a.mr, 0, 2 * mtu + 1);
            send.sge(1).set(a.mr, 2 * mtu + 1, size - 2 * mtu - 1);
            transfer(send, true, "SEND after the fuzz");
            Fixture.assertBytes(a.buf.asSlice(0, 5 * mtu + 3), window.segment().asSlice(64 * 1024, 5 * mtu + 3),
                "SEND after the fuzz, first SGE");
            Fixture.assertBytes(a.buf.asSlice(5 * mtu + 3, size - 5 * mtu - 3),
                window.segment().asSlice(256 * 1024, size - 5 * mtu - 3), "SEND after the fuzz, second SGE");
            assertTrue(b.dev.responder.referencedPackets() > placed, "placed by reference");
            assertNull(b.dev.fatal());
        }
    }
}
