/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.fabric.RemoteMemoryReader;
import io.gdrkit.softnic.fabric.ShmFabric;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.softnic.wire.Psn;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The shared-memory fabric's single copy (cma): two NICs on two {@link ShmFabric}s of one directory (in this JVM, so
 * one pid: process_vm_readv reads this process, which the kernel allows like any same-user process), WRITE and SEND
 * byte-exact on the cma path and on each fallback, the probe's failure named, and hostile references (rewritten in
 * flight by a link hook standing in for a hostile sender) refused by name. {@link ShmFabricTest} runs it across two
 * real processes.
 */
class ShmCmaTest {
    private static final int MIB = 1 << 20;

    /** Two drivers, each with its own fabric on one private directory: LID 1 (a) sends to LID 2 (b). */
    static final class Pair implements AutoCloseable {
        final Path dir = ShmFabric.createPrivateDirectory(ShmFabric.defaultBase(), "gdrkit-test-cma-");
        final ShmFabric fa;
        final ShmFabric fb;
        final SoftNicDriver da;
        final SoftNicDriver db;
        final Fixture.Side a;
        final Fixture.Side b;
        final Arena arena = Arena.ofShared();

        Pair(final SoftNicContext ca, final SoftNicContext cb, final LinkHook hookA, final RemoteMemoryReader readerB,
             final long bytes) {
            fa = new ShmFabric(dir, 4 << 20, 2, hookA, false);
            fb = new ShmFabric(dir, 4 << 20, 2, null, false);
            if (readerB != null) {
                fb.remoteReader(readerB);
            }
            da = SoftNicDriver.launch(ca, fa);
            db = SoftNicDriver.launch(cb, fb);
            a = new Fixture.Side(da.addDevice("cma-a", 1), 256);
            b = new Fixture.Side(db.addDevice("cma-b", 2), 256);
            for (final Fixture.Side s : new Fixture.Side[] {a, b}) {
                s.buf = arena.allocate(bytes, 4096);
                s.mr = s.pd.registerMr(s.buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                s.qp = s.pd.createQp(new QpInitAttr().cqs(s.scq, s.rcq));
            }
            QpBringUp.connect(a.qp, 1, 100, b.qp, 2, 200, QpBringUp.rcDefaults());
        }

        void step() {
            da.progress();
            db.progress();
        }

        void await(final BooleanSupplier cond, final String what) {
            final long deadline = System.nanoTime() + 30_000_000_000L;
            while (!cond.getAsBoolean()) {
                if (System.nanoTime() > deadline) {
                    fail("timed out after 30 s waiting for " + what);
                }
                step();
            }
        }

        WorkCompletion awaitOne(final CompletionQueue cq, final String what) {
            final WorkCompletion[] wc = {new WorkCompletion()};
            await(() -> cq.poll(wc) == 1, what);
            return wc[0];
        }

        /** WRITEs {@code size} bytes of a seeded pattern from a's buffer to b's, signaled; returns the completion. */
        WorkCompletion write(final int size, final long seed) {
            Fixture.fill(a.buf.asSlice(0, size), seed);
            a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(seed)
                .sge(a.mr, 0, size).remote(b.mr.address(), b.mr.rkey()));
            return awaitOne(a.scq, "the WRITE's completion");
        }

        ShmFabric.CopyMode modeAtoB() {
            return fa.copyMode(1, 2);
        }

        /** Runs the NICs until b probed a (a small WRITE through the ring goes first: the hello travels with it). */
        void awaitProbe() {
            assertEquals(WcStatus.SUCCESS, write(4096, 1).status);
            await(() -> !modeAtoB().reason().contains("not probed"), "LID 2's probe of LID 1");
        }

        @Override
        public void close() {
            db.close();
            da.close();
            arena.close();
        }
    }

    private static SoftNicContext ctx() {
        return new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER);
    }

    /** {@link #ctx()} with segment offload across processes on ({@code gdrkit.nic.shm.batch}, off by default). */
    private static SoftNicContext spans() {
        return ctx().shmBatch(true);
    }

    /**
     * {@code c} with the retransmit timer 100 times the IB timeout (about 6.7 s, not 67 ms): on a loaded machine a
     * test thread descheduled between a send and its ACK made the sender resend a packet, which tests that count
     * records or pulls of a lossless run saw as one too many.
     */
    private static SoftNicContext steady(final SoftNicContext c) {
        return c.retransmitFactor(100);
    }

    /** Packets of 4 KiB (the path MTU of {@link QpBringUp#rcDefaults()}) a message of {@code bytes} takes. */
    private static long packets(final long bytes) {
        return (bytes + 4095) / 4096;
    }

    @Test
    void writeAndSendAreByteExactOnTheCmaPathInSpansOfPackets() {
        try (Pair p = new Pair(steady(spans()), steady(spans()), null, null, 2 * MIB)) {
            p.awaitProbe();
            final ShmFabric.CopyMode before = p.modeAtoB();
            assertEquals("cma", before.mode(), before::reason);
            final long placedBefore = p.b.dev.responder.referencedPackets();
            final WorkCompletion wc = p.write(MIB, 42);
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE pulled across the fabric");
            final ShmFabric.CopyMode after = p.modeAtoB();
            // segment offload across processes: a record stands for up to 16 packets (gdrkit.nic.batch), and every
            // packet is placed exactly once
            final long records = after.referencePackets() - before.referencePackets();
            assertTrue(records >= MIB / 4096 / 16 && records <= MIB / 4096 / 4,
                () -> "spans of up to 16 packets: " + before + " -> " + after);
            assertEquals(MIB / 4096, p.b.dev.responder.referencedPackets() - placedBefore, "each packet placed once");
            // the receiver pulled the message ahead of its records: a few system calls, not one per record
            final long pulls = p.fb.copyMode(2, 1).pulls();
            assertTrue(pulls >= 1 && pulls <= 4, () -> "b's pulls: " + p.fb.copyMode(2, 1));

            // SEND into a receive WQE of two SGEs, at an offset: spans across the SGE boundary go through scratch
            final int size = 256 * 1024 + 4096 * 3;
            Fixture.fill(p.a.buf.asSlice(0, size), 7);
            p.b.buf.fill((byte) 0);
            final RecvWorkRequest rw = new RecvWorkRequest().wrId(9).numSge(2);
            rw.sge(0).set(p.b.mr, 100, 5000);
            rw.sge(1).set(p.b.mr, 8192, size);
            p.b.qp.postRecv(rw);
            p.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(8)
                .sge(p.a.mr, 0, size));
            final WorkCompletion sent = p.awaitOne(p.a.scq, "the SEND's completion");
            assertEquals(WcStatus.SUCCESS, sent.status, sent::toString);
            final WorkCompletion recv = p.awaitOne(p.b.rcq, "the receive");
            assertEquals(WcStatus.SUCCESS, recv.status, recv::toString);
            assertEquals(WcOpcode.RECV, recv.opcode);
            assertEquals(size, recv.byteLen);
            Fixture.assertBytes(p.a.buf.asSlice(0, 5000), p.b.buf.asSlice(100, 5000), "SEND, first SGE");
            Fixture.assertBytes(p.a.buf.asSlice(5000, size - 5000), p.b.buf.asSlice(8192, size - 5000),
                "SEND, second SGE");
            assertTrue(p.modeAtoB().referencePackets() > after.referencePackets(), "the SEND went as references");
            assertEquals(0, p.b.dev.responder.unresolvedReferences());
        }
    }

    /**
     * Sizes around the MTU and span boundaries, each a WRITE_WITH_IMM and a SEND gathered from two source SGEs (a
     * span's references then name two segments) into two receive SGEs: byte-exact, every packet placed once.
     */
    @Test
    void spansOfTwoSegmentsAreByteExactAroundMtuAndSpanBoundaries() {
        final int mtu = 4096;
        final int[] sizes = {mtu + 1, 16 * mtu - 1, 16 * mtu, 16 * mtu + 1, 13 * mtu + 333, 40 * mtu + 5};
        try (Pair p = new Pair(spans(), spans(), null, null, 2 * MIB)) {
            p.awaitProbe();
            for (final int size : sizes) {
                final int head = size / 3 + 1;
                final int tail = size - head;
                final MemorySegment expected = Arena.ofAuto().allocate(size);
                Fixture.fill(p.a.buf.asSlice(100, head), size);
                Fixture.fill(p.a.buf.asSlice(MIB + 50, tail), size + 1);
                MemorySegment.copy(p.a.buf, 100, expected, 0, head);
                MemorySegment.copy(p.a.buf, MIB + 50, expected, head, tail);
                for (final int op : new int[] {WrOpcode.RDMA_WRITE_WITH_IMM, WrOpcode.SEND}) {
                    final boolean send = op == WrOpcode.SEND;
                    final long placed = p.b.dev.responder.referencedPackets();
                    p.b.buf.fill((byte) 0);
                    final int split = size / 2 + 17;
                    final RecvWorkRequest rw = new RecvWorkRequest().wrId(op).numSge(2);
                    rw.sge(0).set(p.b.mr, 300_000, split);
                    rw.sge(1).set(p.b.mr, 700_000, size);
                    p.b.qp.postRecv(send ? rw : new RecvWorkRequest().wrId(op).sge(p.b.mr, 0, 0));
                    final SendWorkRequest w = new SendWorkRequest().opcode(op).flags(SendFlags.SIGNALED).wrId(op)
                        .imm(size).remote(p.b.mr.address() + 1_200_000, p.b.mr.rkey()).numSge(2);
                    w.sge(0).set(p.a.mr, 100, head);
                    w.sge(1).set(p.a.mr, MIB + 50, tail);
                    p.a.qp.postSend(w);
                    final WorkCompletion swc = p.awaitOne(p.a.scq, WrOpcode.name(op) + " " + size);
                    assertEquals(WcStatus.SUCCESS, swc.status, swc::toString);
                    final WorkCompletion rwc = p.awaitOne(p.b.rcq, "receive of " + size);
                    assertEquals(WcStatus.SUCCESS, rwc.status, rwc::toString);
                    if (send) {
                        assertEquals(size, rwc.byteLen);
                        Fixture.assertBytes(expected.asSlice(0, split), p.b.buf.asSlice(300_000, split),
                            "SEND " + size);
                        Fixture.assertBytes(expected.asSlice(split), p.b.buf.asSlice(700_000, size - split),
                            "SEND " + size + ", second receive SGE");
                    } else {
                        assertEquals(size, rwc.immData);
                        Fixture.assertBytes(expected, p.b.buf.asSlice(1_200_000, size), "WRITE_WITH_IMM " + size);
                    }
                    // a short last packet asked alone is below the cma threshold (4096) and copied; inside a span
                    // it is referenced with the rest
                    final long referenced = p.b.dev.responder.referencedPackets() - placed;
                    assertTrue(referenced == packets(size) || size % mtu != 0 && referenced == packets(size) - 1,
                        () -> "each packet placed once, " + WrOpcode.name(op) + " " + size + ": " + referenced);
                }
            }
            assertEquals(0, p.b.dev.responder.unresolvedReferences());
        }
    }

    /**
     * One reference record per packet, as before segment offload across processes: by default
     * ({@code gdrkit.nic.shm.batch} off), and with it on but {@code gdrkit.nic.batch=1}.
     */
    /**
     * Without single copy (process_vm_readv off here; refused in the field by Yama between sibling processes) the
     * bytes travel in the ring, and a record carries up to 16 packets inline (the receiver counts them from the
     * length); with batch 1, or a hook that sees single packets, one record per packet. Byte-exact either way.
     */
    @Test
    void withoutSingleCopyARecordCarriesASpanOfPacketsInline() {
        for (final int batch : new int[] {16, 1}) {
            for (final boolean hookSpans : new boolean[] {true, false}) {
                final long[] records = new long[2]; // all, longer than one packet
                final LinkHook counter = new LinkHook() {
                    private final Packet view = new Packet();

                    @Override
                    public synchronized int onPacket(final int src, final int dst, final MemorySegment buf,
                                                     final long off, final int len) {
                        view.wrap(buf, off, len);
                        records[0]++;
                        if (view.payloadLength() > 4096) {
                            records[1]++;
                        }
                        return DELIVER;
                    }

                    @Override
                    public boolean passesBatches() {
                        return hookSpans;
                    }
                };
                try (Pair p = new Pair(steady(ctx().shmCma(false).batch(batch)), steady(ctx().shmCma(false)), counter,
                    null, 2 * MIB)) {
                    final int size = MIB + 5;
                    assertEquals(WcStatus.SUCCESS, p.write(size, 44).status);
                    Fixture.assertBytes(p.a.buf.asSlice(0, size), p.b.buf.asSlice(0, size), "WRITE through the ring");
                    assertEquals("ring", p.modeAtoB().mode(), () -> p.modeAtoB().reason());
                    final String what = "batch " + batch + ", hook " + (hookSpans ? "takes spans" : "single packets")
                        + ": " + records[0] + " records, " + records[1] + " spans";
                    if (batch > 1 && hookSpans) {
                        assertTrue(records[1] > 0 && records[0] < packets(size), what);
                    } else {
                        assertEquals(0, records[1], what);
                    }
                }
            }
        }
    }

    @Test
    void byDefaultAndWithBatchOneEachPacketIsOneRecord() {
        for (final SoftNicContext c : new SoftNicContext[] {ctx(), spans().batch(1)}) {
            try (Pair p = new Pair(steady(c), steady(ctx()), null, null, 2 * MIB)) {
                p.awaitProbe();
                final ShmFabric.CopyMode before = p.modeAtoB();
                assertEquals(WcStatus.SUCCESS, p.write(MIB, 43).status);
                Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE, one record per packet");
                assertEquals(MIB / 4096, p.modeAtoB().referencePackets() - before.referencePackets(),
                    () -> "one record per packet: " + p.modeAtoB());
                final long pulls = p.fb.copyMode(2, 1).pulls();
                assertTrue(pulls >= 1 && pulls <= 4, () -> "still pulled ahead: " + p.fb.copyMode(2, 1));
            }
        }
    }

    /**
     * A span cut differently on a resend than at first, across processes: a record whose first packets were received
     * before is pulled from the expected PSN on (those bytes are not pulled again), one wholly received is a
     * duplicate; for a WRITE and for a SEND into two receive SGEs. Records are written into a's link by hand with
     * this process's token; only b runs.
     */
    @Test
    void aSpanPartlyReceivedBeforeIsPulledFromTheExpectedPsn() {
        final int mtu = 4096;
        final int size = 5 * mtu + 10; // six packets: a FIRST span of 3, a MIDDLE span of 4 from PSN + 1, a LAST
        for (final boolean send : new boolean[] {false, true}) {
            try (Pair p = new Pair(spans(), spans(), null, null, 2 * MIB)) {
                p.awaitProbe();
                final SoftQp src = (SoftQp) p.a.qp;
                final SoftQp rq = (SoftQp) p.b.qp;
                final int psn0 = rq.ePsn;
                Fixture.fill(p.a.buf.asSlice(0, size), 77);
                p.b.buf.fill((byte) 0);
                final long dst = p.b.mr.address() + 32;
                if (send) {
                    final RecvWorkRequest rw = new RecvWorkRequest().wrId(5).numSge(2);
                    rw.sge(0).set(p.b.mr, 32, 2 * mtu + 100);
                    rw.sge(1).set(p.b.mr, 32 + 2 * mtu + 100, size);
                    p.b.qp.postRecv(rw);
                }
                final long placed = p.b.dev.responder.referencedPackets();
                final long pulled = p.b.dev.responder.pulledPackets();
                final int first = send ? BthOpcode.SEND_FIRST : BthOpcode.RDMA_WRITE_FIRST;
                final int middle = send ? BthOpcode.SEND_MIDDLE : BthOpcode.RDMA_WRITE_MIDDLE;
                final int last = send ? BthOpcode.SEND_LAST : BthOpcode.RDMA_WRITE_LAST;
                inject(p, src, first, psn0, 3, 0, 3 * mtu, false, dst, size);
                p.db.progress();
                assertEquals(Psn.add(psn0, 3), rq.ePsn);
                inject(p, src, middle, Psn.add(psn0, 1), 4, mtu, 4 * mtu, false, 0, 0);
                p.db.progress();
                assertEquals(Psn.add(psn0, 5), rq.ePsn);
                assertEquals(5, p.b.dev.responder.referencedPackets() - placed, "the two received before not again");
                inject(p, src, first, psn0, 3, 0, 3 * mtu, false, dst, size); // wholly received: a duplicate
                p.db.progress();
                assertEquals(Psn.add(psn0, 5), rq.ePsn);
                inject(p, src, last, Psn.add(psn0, 5), 1, 5 * mtu, 10, true, 0, 0);
                p.db.progress();
                assertEquals(Psn.add(psn0, 6), rq.ePsn);
                assertEquals(6, p.b.dev.responder.referencedPackets() - placed);
                assertEquals(6, p.b.dev.responder.pulledPackets() - pulled);
                assertEquals(QpState.RTS, rq.state);
                Fixture.assertBytes(p.a.buf.asSlice(0, size), p.b.buf.asSlice(32, size),
                    (send ? "SEND" : "WRITE") + " placed from its spans");
                assertEquals(0, p.b.buf.get(ValueLayout.JAVA_BYTE, 32 + size), "nothing past the message");
                if (send) {
                    final WorkCompletion rwc = p.awaitOne(p.b.rcq, "the SEND's receive");
                    assertEquals(WcStatus.SUCCESS, rwc.status, rwc::toString);
                    assertEquals(size, rwc.byteLen);
                }
            }
        }
    }

    /**
     * A hostile SEND span far larger than the receive buffer (64 packets, 256 KiB, into 4 KiB): the receiver pulls
     * at most one scratch piece (64 KiB) before the scatter refuses it, never the whole claimed span, and the
     * receive completes in error by name; the QP goes to ERR, the NIC keeps running.
     */
    @Test
    void aSendSpanLargerThanTheReceiveBufferIsRefusedAfterOnePiece() {
        final long[] largest = {0};
        final long[] total = {0};
        final RemoteMemoryReader sys = RemoteMemoryReader.processVmReadv();
        final RemoteMemoryReader counting = (pid, dst, dstOffset, remote, length) -> {
            largest[0] = Math.max(largest[0], length);
            total[0] += length;
            return sys.read(pid, dst, dstOffset, remote, length);
        };
        try (Pair p = new Pair(spans(), spans(), null, counting, 2 * MIB)) {
            p.awaitProbe();
            final SoftQp src = (SoftQp) p.a.qp;
            final SoftQp rq = (SoftQp) p.b.qp;
            final RecvWorkRequest rw = new RecvWorkRequest().wrId(9).numSge(2);
            rw.sge(0).set(p.b.mr, 0, 2048);
            rw.sge(1).set(p.b.mr, 8192, 2048);
            p.b.qp.postRecv(rw);
            largest[0] = 0;
            total[0] = 0;
            inject(p, src, BthOpcode.SEND_FIRST, rq.ePsn, 64, 0, 64 * 4096, false, 0, 0);
            p.db.progress();
            final WorkCompletion rwc = p.awaitOne(p.b.rcq, "the refused SEND's receive");
            assertEquals(9, rwc.wrId);
            assertEquals(WcStatus.LOC_LEN_ERR, rwc.status, rwc::toString);
            assertTrue(largest[0] <= 65536 && total[0] <= 65536, "pulled " + total[0] + " bytes, largest read "
                + largest[0] + ": more than one scratch piece");
            assertEquals(QpState.ERR, rq.state);
        }
    }

    /** Writes one reference record into a's link to b, naming a's MR at {@code srcOffset}, with this pid's token. */
    private static void inject(final Pair p, final SoftQp src, final int opcode, final int psn, final int packets,
                               final long srcOffset, final int payload, final boolean ackReq, final long va,
                               final int dmaLength) {
        injectFrom(p, src, opcode, psn, packets, p.a.mr.address() + srcOffset, p.a.mr.lkey(),
            ProcessHandle.current().pid(), payload, ackReq, va, dmaLength);
    }

    /** {@link #inject} naming any address, key and token: what a hostile writer of a's link could put there. */
    private static void injectFrom(final Pair p, final SoftQp src, final int opcode, final int psn, final int packets,
                                   final long srcAddress, final int lkey, final long token, final int payload,
                                   final boolean ackReq, final long va, final int dmaLength) {
        final var port = p.a.dev.port;
        final int len = Packet.lengthFor(opcode, Packet.referenceLength(1));
        final long off = port.tryClaim(p.b.dev.lid(), src.destQpn, len);
        assertTrue(off >= 0);
        final Packet pkt = new Packet().init(port.claimBuffer(), off, len, p.b.dev.lid(), p.a.dev.lid(), opcode,
            src.destQpn, psn, ackReq, false);
        if ((pkt.mask() & BthOpcode.RETH) != 0) {
            pkt.reth(va, p.b.mr.rkey(), dmaLength);
        }
        pkt.reference(payload, 1, packets).refEntry(0, srcAddress, lkey, payload).refToken(token);
        port.commit();
    }

    /** Trailer offsets of a link file (see ShmFabric's javadoc): the producer's hello, the consumer's verdict. */
    private static final long HELLO = 128;
    private static final long VERDICT = 160;
    /** ShmFabric's verdict "the hello's pid is not the owner of the sender's LID claim". */
    private static final long NOT_LID_OWNER = 3;

    /**
     * A peer process claiming a LID it does not own (ShmFabric's NOT_LID_OWNER verdict). Another process of this
     * user (a child {@code sleep}, which holds no LID) is named in a hello rewritten into link-1-2 after LID 1's real
     * hello was granted, with a word its memory really holds, so only the LID-owner check can refuse it: without
     * it the probe would read that word and grant the stranger's references as LID 1's. The receiver refuses (its
     * verdict names the stranger's pid), the real sender stops sending references and its WRITE travels through the
     * ring byte-exact, and a reference naming the stranger's memory is refused by name with nothing placed.
     */
    @Test
    @org.junit.jupiter.api.Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS)
    void aHelloFromAProcessThatDoesNotOwnTheLidIsRefusedByName() throws Exception {
        final Process stranger = new ProcessBuilder("sleep", "120").redirectErrorStream(true).start();
        try (Pair p = new Pair(ctx(), ctx(), null, null, 2 * MIB); Arena mapping = Arena.ofConfined()) {
            p.awaitProbe();
            assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
            final long pid = stranger.pid();
            final long address = firstReadableAddress(pid);
            final MemorySegment word = mapping.allocate(8, 8);
            assertEquals(8, RemoteMemoryReader.processVmReadv().read(pid, word, 0, address, 8),
                "this process can read the stranger's memory (else the test would prove nothing)");
            final Path link = p.dir.resolve("link-1-2");
            final MemorySegment ring;
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(link,
                java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
                ring = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, ch.size(), mapping);
            }
            final long cap = ring.byteSize() - io.gdrkit.softnic.fabric.SpscRingBuffer.TRAILER;
            final java.lang.invoke.VarHandle longs = ValueLayout.JAVA_LONG.varHandle();
            ring.set(ValueLayout.JAVA_LONG, cap + HELLO + 8, address);
            ring.set(ValueLayout.JAVA_LONG, cap + HELLO + 16, word.get(ValueLayout.JAVA_LONG, 0));
            longs.setRelease(ring, cap + HELLO, pid);
            p.await(() -> (long) longs.getAcquire(ring, cap + VERDICT) == pid, "LID 2's verdict on process " + pid);
            assertEquals(NOT_LID_OWNER, ring.get(ValueLayout.JAVA_LONG, cap + VERDICT + 8),
                "the verdict: process " + pid + " does not own LID 1");
            final ShmFabric.CopyMode m = p.modeAtoB();
            assertEquals("ring", m.mode(), m::toString);
            assertTrue(m.reason().contains("probed process " + pid), m::reason);

            // the real LID 1 loses the single copy, not its data
            final long refs = m.referencePackets();
            final WorkCompletion wc = p.write(MIB, 88);
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE through the ring");
            assertEquals(refs, p.modeAtoB().referencePackets(), "no reference sent after the refusal");

            // a reference naming the stranger's memory, on LID 1's link: refused by name, nothing placed
            final SoftQp rq = (SoftQp) p.b.qp;
            p.b.buf.asSlice(0, 4096).fill((byte) 0x3C);
            final long errors = p.fb.copyMode(2, 1).pullErrors();
            injectFrom(p, (SoftQp) p.a.qp, BthOpcode.RDMA_WRITE_ONLY, rq.ePsn, 1, address, 0, pid, 8, true,
                p.b.mr.address(), 8);
            final AsyncEvent[] e = {null};
            p.await(() -> (e[0] = p.b.ctx.pollAsyncEvent()) != null, "the responder's async event");
            assertTrue(e[0].detail().contains("LID 1 was not granted cross-process reads")
                && e[0].detail().contains("not the owner of the sender's LID claim"), e[0]::detail);
            assertEquals(QpState.ERR, rq.state);
            assertEquals(errors + 1, p.fb.copyMode(2, 1).pullErrors());
            for (long i = 0; i < 4096; i++) {
                assertEquals((byte) 0x3C, p.b.buf.get(ValueLayout.JAVA_BYTE, i), "untouched at " + i);
            }
            assertEquals(null, p.a.dev.fatal());
            assertEquals(null, p.b.dev.fatal());
        } finally {
            stranger.destroyForcibly();
            assertTrue(stranger.waitFor(10, java.util.concurrent.TimeUnit.SECONDS), "the stranger ends");
        }
    }

    /**
     * The start of the first readable mapping of {@code pid} once it runs {@code sleep} (it may still be between
     * fork and exec when started): the first page of its executable, which holds still.
     */
    private static long firstReadableAddress(final long pid) throws Exception {
        final Path proc = Path.of("/proc", Long.toString(pid));
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (!new String(java.nio.file.Files.readAllBytes(proc.resolve("cmdline")),
            java.nio.charset.StandardCharsets.US_ASCII).startsWith("sleep")) {
            if (System.nanoTime() > deadline) {
                fail("process " + pid + " did not exec sleep within 10 s");
            }
            Thread.sleep(10);
        }
        for (final String line : java.nio.file.Files.readAllLines(proc.resolve("maps"))) {
            final String[] f = line.split("\\s+");
            if (f.length > 1 && f[1].startsWith("r")) {
                return Long.parseUnsignedLong(f[0].substring(0, f[0].indexOf('-')), 16);
            }
        }
        fail("no readable mapping in /proc/" + pid + "/maps");
        return 0;
    }

    @Test
    void offAtTheReceiverFallsBackToTheRingByteExactAndSaysWhy() {
        try (Pair p = new Pair(ctx(), ctx().shmCma(false), null, null, 2 * MIB)) {
            p.awaitProbe();
            assertRing(p, "gdrkit.nic.shm.cma is off in the peer");
        }
    }

    @Test
    void offAtTheSenderFallsBackToTheRing() {
        try (Pair p = new Pair(ctx().shmCma(false), ctx(), null, null, 2 * MIB)) {
            assertEquals(WcStatus.SUCCESS, p.write(4096, 1).status);
            assertRing(p, "off in this process");
        }
    }

    @Test
    void aProbeThatCannotReadTheSenderFallsBackAndNamesTheErrno() {
        final RemoteMemoryReader denied = (pid, dst, off, remote, len) -> -RemoteMemoryReader.EPERM;
        try (Pair p = new Pair(ctx(), ctx(), null, denied, 2 * MIB)) {
            p.awaitProbe();
            assertRing(p, "EPERM");
        }
    }

    @Test
    void aProbeThatReadsAnotherWordFallsBack() {
        final RemoteMemoryReader liar = (pid, dst, off, remote, len) -> {
            dst.set(ValueLayout.JAVA_LONG, off, 0L);
            return len;
        };
        try (Pair p = new Pair(ctx(), ctx(), null, liar, 2 * MIB)) {
            p.awaitProbe();
            assertRing(p, "read another value");
        }
    }

    private static void assertRing(final Pair p, final String why) {
        final ShmFabric.CopyMode m = p.modeAtoB();
        assertEquals("ring", m.mode(), m::toString);
        assertTrue(m.reason().contains(why), () -> "reason names '" + why + "': " + m.reason());
        final WorkCompletion wc = p.write(MIB, 77);
        assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
        Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE through the ring");
        assertEquals(0, p.modeAtoB().referencePackets(), "no reference packet on the ring path");
    }

    /** Rewrites reference packets in flight after the probe: what a hostile sender could put on its link. */
    private static final class Hostile implements LinkHook {
        private final Packet pkt = new Packet();
        volatile java.util.function.Consumer<Packet> rewrite;

        @Override
        public int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer, final long offset,
                            final int length) {
            final java.util.function.Consumer<Packet> r = rewrite;
            if (r != null && pkt.wrap(buffer, offset, length).isReference()) {
                r.accept(pkt);
            }
            return DELIVER;
        }

        @Override
        public boolean passesReferences() {
            return true;
        }
    }

    /**
     * The pull error tests run twice: with the NIC thread alone, and with 4 copy engines and a threshold that splits
     * their 64 KiB pulls ({@code gdrkit.nic.copy.*}, ShmCopyEnginesTest): the same error either way.
     */
    private static final int[] ENGINES = {1, 4};

    private static SoftNicContext engines(final SoftNicContext c, final int engines) {
        return c.copyEngines(engines).copyThreshold(4096);
    }

    private static AsyncEvent hostileWrite(final java.util.function.Consumer<Packet> rewrite, final int status,
                                           final int engines) {
        final Hostile h = new Hostile();
        try (Pair p = new Pair(engines(ctx(), engines), engines(ctx(), engines), h, null, 2 * MIB)) {
            p.awaitProbe();
            assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
            h.rewrite = rewrite;
            final WorkCompletion wc = p.write(64 * 1024, 5);
            assertEquals(status, wc.status, wc::toString);
            final AsyncEvent[] e = {null};
            p.await(() -> (e[0] = p.b.ctx.pollAsyncEvent()) != null, "the responder's async event");
            return e[0];
        }
    }

    @Test
    void aReferenceOutsideTheSendersMemoryIsANamedEfaultNotACrash() {
        for (final int k : ENGINES) {
            final AsyncEvent e = hostileWrite(pkt -> pkt.refEntry(0, 0x10, 0, pkt.refLength(0)), WcStatus.REM_OP_ERR,
                k);
            assertEquals(AsyncEventType.QP_REQ_ERR, e.type());
            assertTrue(e.detail().contains("cross-process reference from LID 1: process_vm_readv of 4096 bytes at "
                + "0x10 in process " + ProcessHandle.current().pid() + " (LID 1): EFAULT"), () -> k + ": " + e.detail());
        }
    }

    @Test
    void aReferenceNamingAnotherProcessIsRefusedByName() {
        for (final int k : ENGINES) {
            final AsyncEvent e = hostileWrite(pkt -> pkt.refToken(1), WcStatus.REM_OP_ERR, k);
            assertTrue(e.detail().contains("names process 1, but LID 1 is process "
                + ProcessHandle.current().pid()), e::detail);
        }
    }

    @Test
    void aReferencedWritePastTheDestinationMrIsARemoteAccessError() {
        for (final int k : ENGINES) {
            final AsyncEvent e = hostileWrite(pkt -> {
                if (pkt.is(io.gdrkit.softnic.wire.BthOpcode.FIRST)) {
                    pkt.reth(pkt.rethVa() + 2 * MIB - 4096, pkt.rethRkey(), pkt.rethDmaLength());
                }
            }, WcStatus.REM_ACCESS_ERR, k);
            assertEquals(AsyncEventType.QP_ACCESS_ERR, e.type());
            assertTrue(e.detail().contains("refused for WRITE"), e::detail);
        }
    }

    @Test
    void aShortReadIsANamedErrorAfterTheProbe() {
        final boolean[] probed = {false};
        final RemoteMemoryReader real = RemoteMemoryReader.processVmReadv();
        final RemoteMemoryReader shortAfterProbe = (pid, dst, off, remote, len) -> {
            if (!probed[0]) {
                probed[0] = true;
                return real.read(pid, dst, off, remote, len);
            }
            return Math.min(len, 2048); // the kernel read only part of the range
        };
        for (final int k : ENGINES) {
            probed[0] = false;
            try (Pair p = new Pair(engines(ctx(), k), engines(ctx(), k), null, shortAfterProbe, 2 * MIB)) {
                p.awaitProbe();
                assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
                final WorkCompletion wc = p.write(64 * 1024, 3);
                assertEquals(WcStatus.REM_OP_ERR, wc.status, wc::toString);
                final AsyncEvent[] e = {null};
                p.await(() -> (e[0] = p.b.ctx.pollAsyncEvent()) != null, "the responder's async event");
                assertTrue(e[0].detail().contains("short process_vm_readv: 2048 of 4096 bytes"), e[0]::detail);
                if (k > 1) {
                    assertTrue(p.b.dev.copyEngines.splitReads() > 0, "the short pull was split");
                }
            }
        }
    }

    /** Drops every 37th reference packet: go-back-N resends re-read the source, which the open WR still owns. */
    @Test
    void retransmittedReferencesReReadTheSourceByteExact() {
        final LinkHook lossy = new LinkHook() {
            private int n;

            @Override
            public int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer, final long offset,
                                final int length) {
                return (buffer.get(ValueLayout.JAVA_BYTE, offset + 12) & 0x80) != 0 && ++n % 37 == 0 ? DROP : DELIVER;
            }

            @Override
            public boolean passesReferences() {
                return true;
            }
        };
        try (Pair p = new Pair(ctx(), ctx(), lossy, null, 2 * MIB)) {
            p.awaitProbe();
            final WorkCompletion wc = p.write(MIB, 11);
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE with lost references");
            assertTrue(p.fa.copyMode(1, 2).packetsSent() > 0 && p.da.fabric() == p.fa);
            assertTrue(p.modeAtoB().referencePackets() > MIB / 4096, () -> "resent references: " + p.modeAtoB());
        }
    }

    @Test
    void processVmReadvReadsThisProcessAndNamesItsErrors() {
        final RemoteMemoryReader r = RemoteMemoryReader.processVmReadv();
        final long me = ProcessHandle.current().pid();
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment src = arena.allocate(8192);
            Fixture.fill(src, 99);
            final MemorySegment dst = arena.allocate(8192);
            assertEquals(8192, r.read(me, dst, 0, src.address(), 8192));
            Fixture.assertBytes(src, dst, "process_vm_readv of this process");
            assertEquals(-RemoteMemoryReader.EFAULT, r.read(me, dst, 0, 0x10, 64));
            assertEquals(-RemoteMemoryReader.EINVAL, r.read(me, dst, 8000, src.address(), 400), "past dst");
            assertEquals(-RemoteMemoryReader.EINVAL, r.read(me, MemorySegment.ofArray(new byte[16]), 0,
                src.address(), 16), "a heap destination has no address");
            assertTrue(RemoteMemoryReader.describe(-RemoteMemoryReader.EFAULT).startsWith("EFAULT"));
            assertTrue(RemoteMemoryReader.describe(-RemoteMemoryReader.ESRCH).startsWith("ESRCH"));
        }
    }
}
