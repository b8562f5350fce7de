/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AddressHandle;
import io.gdrkit.verbs.AhAttr;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
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
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The UD single-copy path (UdEngine): a datagram of {@link SoftNicContext#DEFAULT_UD_ONE_COPY_MIN} or more on the in-JVM
 * fabric travels as a reference and a ticket; the receiver copies from the source once; the send completes only
 * once the receiver placed or dropped it (or gave up on it), so the source may be reused at completion, as UD
 * promises. Each test drives the two NICs one at a time (own-device progress: polling a CQ steps only its NIC), so
 * what each side did before the other ran is observable without any timing.
 */
class UdOneCopyTest {
    private static final int QKEY = 0x0D0D_0001;
    private static final int SIZE = 4096;
    private static final int STEPS = 200;

    private static final class Pair implements AutoCloseable {
        final ManualClock clock = new ManualClock(0);
        final SoftNicDriver driver;
        final Arena arena = Arena.ofShared();
        final SoftDevice da;
        final SoftDevice db;
        final CompletionQueue cqa;
        final CompletionQueue cqb;
        final QueuePair qa;
        final QueuePair qb;
        final MemoryRegion ma;
        final MemoryRegion mb;
        final AddressHandle ah;
        final WorkCompletion[] wc = WorkCompletion.array(1);

        Pair(final SoftNicContext ctx) {
            driver = SoftNicDriver.launch(ctx.clock(clock).progressMode(SoftNicContext.ProgressMode.OWN_DEVICE));
            da = driver.addDevice("udref0");
            db = driver.addDevice("udref1");
            final VerbsContext ca = da.open();
            final VerbsContext cb = db.open();
            final ProtectionDomain pa = ca.allocPd();
            final ProtectionDomain pb = cb.allocPd();
            cqa = ca.createCq(64);
            cqb = cb.createCq(64);
            ma = pa.registerMr(arena.allocate(1 << 16, 4096), AccessFlags.LOCAL_WRITE);
            mb = pb.registerMr(arena.allocate(1 << 16, 4096), AccessFlags.LOCAL_WRITE);
            qa = pa.createQp(new QpInitAttr().cqs(cqa, cqa).qpType(QpType.UD));
            qb = pb.createQp(new QpInitAttr().cqs(cqb, cqb).qpType(QpType.UD));
            UdTest.toRts(qa, QKEY);
            UdTest.toRts(qb, QKEY);
            ah = pa.createAh(new AhAttr().dlid(db.lid()));
        }

        /** Polls {@code cq} (stepping only its own NIC) up to {@link #STEPS} times; null when nothing came. */
        WorkCompletion poll(final CompletionQueue cq) {
            for (int i = 0; i < STEPS; i++) {
                if (cq.poll(wc) == 1) {
                    return wc[0];
                }
            }
            return null;
        }

        WorkCompletion await(final CompletionQueue cq, final String what) {
            final WorkCompletion c = poll(cq);
            assertTrue(c != null, () -> "no completion: " + what);
            return c;
        }

        /** Steps the sending NIC alone. */
        void stepSender() {
            for (int i = 0; i < 20; i++) {
                da.doWork();
            }
        }

        void send(final long wrId, final int len) {
            qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(wrId)
                .sge(ma, 0, len).ud(ah, qb.qpNum(), QKEY));
        }

        @Override
        public void close() {
            driver.close();
            arena.close();
        }
    }

    private static MemorySegment fill(final MemorySegment s, final long seed) {
        final SplittableRandom rnd = new SplittableRandom(seed);
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return s;
    }

    private static MemorySegment copyOf(final MemorySegment s) {
        final MemorySegment c = Arena.ofAuto().allocate(s.byteSize());
        MemorySegment.copy(s, 0, c, 0, s.byteSize());
        return c;
    }

    @Test
    void theSendCompletesOnlyAfterTheReceiverPlacedTheBytes() {
        try (Pair p = new Pair(new SoftNicContext())) {
            final MemorySegment src = fill(p.ma.segment().asSlice(0, SIZE), 15);
            final MemorySegment sent = copyOf(src);
            p.mb.segment().asSlice(0, 64).fill((byte) 0x7E);
            p.qb.postRecv(new RecvWorkRequest().wrId(9).sge(p.mb, 0, 40 + SIZE + 100));
            p.send(3, SIZE);
            assertEquals(null, p.poll(p.cqa), "the sender alone: the datagram is out, not yet placed");
            assertEquals(1, p.da.ud.referencedSent(), "sent as a reference");
            final WorkCompletion r = p.await(p.cqb, "the receive");
            assertEquals(WcStatus.SUCCESS, r.status, r::toString);
            assertEquals(9, r.wrId);
            assertEquals(40 + SIZE, r.byteLen);
            assertEquals(p.qa.qpNum(), r.srcQp);
            assertEquals(1, p.db.ud.referencedPlaced(), "copied once, from the source");
            final WorkCompletion s = p.await(p.cqa, "the send, once placed");
            assertEquals(WcStatus.SUCCESS, s.status);
            assertEquals(3, s.wrId);
            // completed: the application may reuse the source; what arrived must not change
            fill(src, 16);
            for (int i = 0; i < 40; i++) {
                assertEquals((byte) 0x7E, p.mb.segment().get(ValueLayout.JAVA_BYTE, i), "GRH area byte " + i);
            }
            assertEquals(-1, p.mb.segment().asSlice(40, SIZE).mismatch(sent), "payload byte for byte");
            assertEquals(0, p.da.ud.referencesTimedOut());
        }
    }

    @Test
    void manySgesAndManyDatagramsCompleteInOrderByteForByte() {
        try (Pair p = new Pair(new SoftNicContext())) {
            final int n = 12;
            final MemorySegment src = fill(p.ma.segment().asSlice(0, 3 * SIZE), 21);
            final MemorySegment sent = copyOf(src);
            for (int i = 0; i < n; i++) {
                p.qb.postRecv(new RecvWorkRequest().wrId(100 + i).sge(p.mb, 5000L * i, 40 + SIZE));
            }
            for (int i = 0; i < n; i++) {
                // three SGEs of odd sizes and offsets, sizes around the threshold
                final int len = i % 3 == 0 ? SoftNicContext.DEFAULT_UD_ONE_COPY_MIN - 1 : SIZE - 7 * i;
                final int a = len / 3;
                final int b = len / 2;
                final SendWorkRequest w = new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM)
                    .flags(SendFlags.SIGNALED).wrId(i).imm(i).numSge(3).ud(p.ah, p.qb.qpNum(), QKEY);
                w.sge(0).set(p.ma, 7L * i, a);
                w.sge(1).set(p.ma, SIZE + 3L * i, b);
                w.sge(2).set(p.ma, 2L * SIZE + i, len - a - b);
                p.qa.postSend(w);
            }
            p.stepSender();
            for (int i = 0; i < n; i++) {
                final WorkCompletion r = p.await(p.cqb, "receive " + i);
                assertEquals(WcStatus.SUCCESS, r.status, r::toString);
                assertEquals(100 + i, r.wrId);
                assertEquals(i, r.immData);
                final int len = i % 3 == 0 ? SoftNicContext.DEFAULT_UD_ONE_COPY_MIN - 1 : SIZE - 7 * i;
                assertEquals(40 + len, r.byteLen);
                final int a = len / 3;
                final int b = len / 2;
                final MemorySegment got = p.mb.segment().asSlice(5000L * i + 40, len);
                assertEquals(-1, got.asSlice(0, a).mismatch(sent.asSlice(7L * i, a)), "SGE 0 of " + i);
                assertEquals(-1, got.asSlice(a, b).mismatch(sent.asSlice(SIZE + 3L * i, b)), "SGE 1 of " + i);
                assertEquals(-1, got.asSlice(a + b, len - a - b).mismatch(sent.asSlice(2L * SIZE + i,
                    len - a - b)), "SGE 2 of " + i);
            }
            for (int i = 0; i < n; i++) {
                assertEquals(i, p.await(p.cqa, "send " + i).wrId, "sends complete in order");
            }
            assertEquals(8, p.da.ud.referencedSent(), "the 8 of 2 KiB or more by reference, the 4 below copied");
            assertEquals(8, p.db.ud.referencedPlaced());
        }
    }

    /** Dropped at the receiver (no receive WQE, another Q_Key, no such QP): the send still completes, at once. */
    @Test
    void aDatagramTheReceiverDropsStillCompletesTheSend() {
        try (Pair p = new Pair(new SoftNicContext())) {
            fill(p.ma.segment().asSlice(0, SIZE), 3);
            p.send(1, SIZE); // no receive WQE
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(2)
                .sge(p.ma, 0, SIZE).ud(p.ah, p.qb.qpNum(), QKEY + 1)); // another Q_Key
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(3)
                .sge(p.ma, 0, SIZE).ud(p.ah, p.qb.qpNum() + 77, QKEY)); // nobody's QP
            assertEquals(null, p.poll(p.cqa), "nothing completes before the receiver looked");
            assertEquals(null, p.poll(p.cqb), "nothing received");
            for (int i = 1; i <= 3; i++) {
                final WorkCompletion s = p.await(p.cqa, "send " + i);
                assertEquals(WcStatus.SUCCESS, s.status, "UD: a dropped datagram's send succeeds");
                assertEquals(i, s.wrId);
            }
            assertEquals(3, p.da.ud.referencedSent());
            assertEquals(1, p.db.ud.noReceiveWqe());
            assertEquals(1, p.db.ud.qkeyMismatches());
            assertEquals(0, p.db.ud.referencedPlaced());
            assertEquals(0, p.da.ud.referencesTimedOut(), "released by the receiver, not given up");
            // the port down at the receiver: lost there, and released
            assertTrue(p.db.portDown("test"));
            p.send(4, SIZE);
            p.stepSender();
            p.poll(p.cqb);
            assertEquals(4, p.await(p.cqa, "send into a port that is down").wrId);
            assertTrue(p.db.packetsLostPortDown() > 0);
            assertEquals(0, p.da.ud.referencesTimedOut());
        }
    }

    /**
     * The two UD settings are honoured: {@code gdrkit.nic.ud.onecopy.min} above the send's size copies it (no
     * reference), at its size references it; {@code gdrkit.nic.ud.reference.timeout.ms} sets when an unreleased
     * reference is given up.
     */
    @Test
    void theUdSettingsMoveTheThresholdAndTheTimeout() {
        try (Pair p = new Pair(new SoftNicContext().udOneCopyMin(SIZE))) {
            fill(p.ma.segment().asSlice(0, SIZE), 3);
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 40 + SIZE));
            p.send(1, SIZE - 1); // below the raised threshold: copied
            p.stepSender();
            assertEquals(WcStatus.SUCCESS, p.await(p.cqb, "the copied datagram").status);
            assertEquals(0, p.da.ud.referencedSent(), "nothing referenced below the setting");
        }
        try (Pair p = new Pair(new SoftNicContext().udOneCopyMin(SIZE).udReferenceTimeoutMs(5))) {
            fill(p.ma.segment().asSlice(0, SIZE), 4);
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 40 + SIZE));
            p.send(1, SIZE);
            assertEquals(null, p.poll(p.cqa));
            assertEquals(1, p.da.ud.referencedSent(), "referenced at the setting");
            p.clock.advance(5_000_000L - 1);
            assertEquals(null, p.poll(p.cqa), "not before the 5 ms timeout");
            p.clock.advance(1);
            assertEquals(WcStatus.SUCCESS, p.await(p.cqa, "the given-up send").status);
            assertEquals(1, p.da.ud.referencesTimedOut());
        }
    }

    /**
     * A referenced datagram nobody releases (here: the receiving NIC never runs in time) is given up after the
     * timeout: the send completes, and the late datagram is lost at the receiver (its claim fails), never read
     * from a source the application may be reusing.
     */
    @Test
    void aDatagramNobodyReleasesIsGivenUpAndThenLost() {
        try (Pair p = new Pair(new SoftNicContext())) {
            final MemorySegment src = fill(p.ma.segment().asSlice(0, SIZE), 7);
            p.mb.segment().asSlice(0, 40 + SIZE).fill((byte) 0x55);
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 40 + SIZE));
            p.send(1, SIZE);
            assertEquals(null, p.poll(p.cqa));
            p.clock.advance(SoftNicContext.DEFAULT_UD_REFERENCE_TIMEOUT_MS * 1_000_000L - 1);
            assertEquals(null, p.poll(p.cqa), "not before the timeout");
            p.clock.advance(1);
            assertEquals(WcStatus.SUCCESS, p.await(p.cqa, "the given-up send").status);
            assertEquals(1, p.da.ud.referencesTimedOut());
            fill(src, 8); // reused
            assertEquals(null, p.poll(p.cqb), "the late datagram is lost");
            assertEquals(1, p.db.ud.referencesLost());
            for (long i = 0; i < 40 + SIZE; i++) {
                assertEquals((byte) 0x55, p.mb.segment().get(ValueLayout.JAVA_BYTE, i), "untouched at " + i);
            }
            // the receive WQE is still there for the next datagram
            final MemorySegment sent = copyOf(src);
            p.send(2, SIZE);
            p.stepSender();
            final WorkCompletion r = p.await(p.cqb, "the next datagram");
            assertEquals(1, r.wrId);
            assertEquals(-1, p.mb.segment().asSlice(40, SIZE).mismatch(sent));
            assertEquals(2, p.await(p.cqa, "its send").wrId);
        }
    }

    /** A flush (ERR) and a RESET give in-flight tickets up: flushed sends are never read afterwards. */
    @Test
    void aFlushOrResetGivesTheTicketsUp() {
        try (Pair p = new Pair(new SoftNicContext())) {
            fill(p.ma.segment().asSlice(0, SIZE), 9);
            p.mb.segment().asSlice(0, 40 + SIZE).fill((byte) 0x33);
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 40 + SIZE));
            p.send(1, SIZE);
            assertEquals(null, p.poll(p.cqa));
            p.qa.modify(new QpAttr().state(QpState.ERR), QpAttrMask.STATE);
            final WorkCompletion s = p.await(p.cqa, "the flush");
            assertEquals(WcStatus.WR_FLUSH_ERR, s.status);
            assertEquals(1, s.wrId);
            // RESET with a datagram in flight, then the receiver runs: both are lost
            p.qa.modify(new QpAttr().state(QpState.RESET), QpAttrMask.STATE);
            UdTest.toRts(p.qa, QKEY);
            p.send(3, SIZE);
            assertEquals(null, p.poll(p.cqa));
            p.qa.modify(new QpAttr().state(QpState.RESET), QpAttrMask.STATE);
            assertEquals(null, p.poll(p.cqb), "both datagrams are lost");
            assertEquals(2, p.db.ud.referencesLost());
            for (long i = 0; i < 40 + SIZE; i++) {
                assertEquals((byte) 0x33, p.mb.segment().get(ValueLayout.JAVA_BYTE, i), "untouched at " + i);
            }
        }
    }

    /**
     * Destroying the sending QP gives its tickets up; a source MR deregistered under an outstanding send (the
     * application broke the rule) is never read: the datagram is lost, the receive WQE stays for the next one.
     */
    @Test
    void aDestroyedSenderOrAGoneSourceMrIsNeverRead() {
        try (Pair p = new Pair(new SoftNicContext())) {
            fill(p.ma.segment().asSlice(0, SIZE), 11);
            p.mb.segment().asSlice(0, 40 + SIZE).fill((byte) 0x44);
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 40 + SIZE));
            p.send(1, SIZE);
            p.stepSender();
            p.qa.close();
            assertEquals(null, p.poll(p.cqb), "the datagram of a destroyed QP is lost");
            assertEquals(1, p.db.ud.referencesLost());
            final QueuePair q2 = p.qb; // the receiver is unchanged
            assertEquals(QpState.RTS, q2.state());
            for (long i = 0; i < 40 + SIZE; i++) {
                assertEquals((byte) 0x44, p.mb.segment().get(ValueLayout.JAVA_BYTE, i), "untouched at " + i);
            }
        }
        try (Pair p = new Pair(new SoftNicContext())) {
            final MemoryRegion other = p.ma.pd().registerMr(p.arena.allocate(SIZE, 4096), AccessFlags.LOCAL_WRITE);
            fill(other.segment(), 12);
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 40 + SIZE));
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(5)
                .sge(other, 0, SIZE).ud(p.ah, p.qb.qpNum(), QKEY));
            p.stepSender();
            other.deregister();
            assertEquals(null, p.poll(p.cqb), "nothing read from a deregistered MR");
            assertEquals(1, p.db.ud.referencesLost());
            assertEquals(5, p.await(p.cqa, "the send").wrId);
            final MemorySegment sent = copyOf(fill(p.ma.segment().asSlice(0, SIZE), 13));
            p.send(6, SIZE);
            p.stepSender();
            assertEquals(1, p.await(p.cqb, "the next datagram takes the receive WQE").wrId);
            assertEquals(-1, p.mb.segment().asSlice(40, SIZE).mismatch(sent));
        }
    }

    /**
     * Both NICs on their own threads (dedicated progress), the application reusing each source buffer the moment
     * its send completes: every datagram that arrives must hold exactly the bytes of its message, never bytes
     * written for a later one. Only 4 source buffers rotate, so a completion that came before the receiver's copy
     * would show up as a later message's bytes. Seeded content; receives are posted before each send, so none is
     * dropped for want of a WQE.
     */
    @Test
    void dedicatedThreadsAndSourcesReusedAtCompletionDeliverExactBytes() {
        final int n = 600;
        final int slots = 4;
        final SoftNicContext ctx = new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DEDICATED);
        final SoftNicDriver driver = SoftNicDriver.launch(ctx);
        try (Arena arena = Arena.ofShared()) {
            final SoftDevice da = driver.addDevice("udthr0");
            final SoftDevice db = driver.addDevice("udthr1");
            final VerbsContext ca = da.open();
            final VerbsContext cb = db.open();
            final ProtectionDomain pa = ca.allocPd();
            final ProtectionDomain pb = cb.allocPd();
            final CompletionQueue cqa = ca.createCq(64);
            final CompletionQueue cqb = cb.createCq(64);
            final MemoryRegion ma = pa.registerMr(arena.allocate((long) slots * SIZE, 4096), AccessFlags.LOCAL_WRITE);
            final MemoryRegion mb = pb.registerMr(arena.allocate(32L * 8192, 4096), AccessFlags.LOCAL_WRITE);
            final QueuePair qa = pa.createQp(new QpInitAttr().cqs(cqa, cqa).qpType(QpType.UD));
            final QueuePair qb = pb.createQp(new QpInitAttr().cqs(cqb, cqb).qpType(QpType.UD));
            UdTest.toRts(qa, QKEY);
            UdTest.toRts(qb, QKEY);
            final AddressHandle ah = pa.createAh(new AhAttr().dlid(db.lid()));
            final WorkCompletion[] wc = WorkCompletion.array(1);
            final long deadline = System.nanoTime() + 60_000_000_000L;
            int completed = 0;
            int received = 0;
            int next = 0; // next message to send
            while (received + lost(db) < n) {
                assertTrue(System.nanoTime() < deadline, "timed out: " + received + " received, " + completed
                    + " sends completed of " + n);
                // at most 4 sends in flight (the source slots), at most 16 receive buffers of 32 not yet checked
                if (next < n && next - completed < slots && next - (received + lost(db)) < 16) {
                    final int slot = next % slots;
                    fill(ma.segment().asSlice((long) slot * SIZE, SIZE), 1000 + next);
                    qb.postRecv(new RecvWorkRequest().wrId(next).sge(mb, (long) (next % 32) * 8192, 40 + SIZE));
                    qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND_WITH_IMM).imm(next)
                        .flags(SendFlags.SIGNALED).wrId(next).sge(ma, (long) slot * SIZE, SIZE)
                        .ud(ah, qb.qpNum(), QKEY));
                    next++;
                }
                if (cqa.poll(wc) == 1) {
                    assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
                    assertEquals(completed, wc[0].wrId, "sends complete in order");
                    completed++;
                    // the slot is reused right away: the next fill of it happens at the next post
                }
                if (cqb.poll(wc) == 1) {
                    assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
                    final int id = wc[0].immData; // the message; the WQE (and so the buffer) may be an earlier one's
                    final MemorySegment expect = fill(Arena.ofAuto().allocate(SIZE), 1000 + id);
                    assertEquals(-1, mb.segment().asSlice(wc[0].wrId % 32 * 8192 + 40, SIZE).mismatch(expect),
                        "message " + id + " byte for byte");
                    received++;
                }
            }
            assertTrue(received > 0, "something arrived");
        } finally {
            driver.close();
        }
    }

    /** Datagrams the receiver lost because their tickets were given up (the sender timed out): UD may lose them. */
    private static long lost(final SoftDevice db) {
        return db.ud.referencesLost();
    }

    /** A duplicated reference is placed once: the second copy's claim fails. */
    @Test
    void aDuplicateIsPlacedOnce() {
        final LinkHook dup = new LinkHook() {
            @Override
            public int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer, final long offset,
                                final int length) {
                return DUPLICATE;
            }

            @Override
            public boolean passesReferences() {
                return true;
            }
        };
        try (Pair p = new Pair(new SoftNicContext().linkHook(dup))) {
            final MemorySegment sent = copyOf(fill(p.ma.segment().asSlice(0, SIZE), 4));
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 40 + SIZE));
            p.qb.postRecv(new RecvWorkRequest().wrId(2).sge(p.mb, 8192, 40 + SIZE));
            p.send(1, SIZE);
            p.stepSender();
            assertEquals(1, p.await(p.cqb, "the datagram").wrId);
            assertEquals(null, p.poll(p.cqb), "its duplicate is dropped");
            assertEquals(1, p.db.ud.referencesLost());
            assertEquals(-1, p.mb.segment().asSlice(40, SIZE).mismatch(sent));
            assertEquals(1, p.await(p.cqa, "the send").wrId);
        }
    }

    /**
     * Spans (segment offload) are for RC only: a referenced UD SEND whose RefETH claims a span of two packets
     * (rewritten in flight, as a hostile sender could) is malformed, dropped before any QP sees it: no receive
     * completes, the receive buffer is untouched, and the send completes when its ticket is given up. The next
     * datagram is placed byte for byte into the same receive WQE.
     */
    @Test
    void aUdSendClaimingASpanIsMalformedAndDropped() {
        final boolean[] rewrite = {true};
        final LinkHook spanOnUd = new LinkHook() {
            private final io.gdrkit.softnic.wire.Packet pkt = new io.gdrkit.softnic.wire.Packet();

            @Override
            public int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer, final long offset,
                                final int length) {
                if (rewrite[0] && pkt.wrap(buffer, offset, length).isReference()
                    && pkt.is(io.gdrkit.softnic.wire.BthOpcode.UD)) {
                    // RefETH ends the packet; its extra-packets field (16 bits, big-endian) is at +6
                    final long ref = offset + length - io.gdrkit.softnic.wire.Packet.referenceLength(pkt.refCount());
                    buffer.set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), ref + 6,
                        (short) 1);
                }
                return DELIVER;
            }

            @Override
            public boolean passesReferences() {
                return true;
            }
        };
        try (Pair p = new Pair(new SoftNicContext().linkHook(spanOnUd))) {
            final MemorySegment src = fill(p.ma.segment().asSlice(0, SIZE), 12);
            p.mb.segment().asSlice(0, 40 + SIZE).fill((byte) 0x5A);
            p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 40 + SIZE));
            final long malformed = p.db.receiver.malformed();
            p.send(1, SIZE);
            p.stepSender();
            assertEquals(null, p.poll(p.cqb), "a UD span is not received");
            assertEquals(malformed + 1, p.db.receiver.malformed(), "dropped as malformed");
            assertEquals(0, p.db.ud.referencedPlaced());
            for (long i = 0; i < 40 + SIZE; i++) {
                assertEquals((byte) 0x5A, p.mb.segment().get(ValueLayout.JAVA_BYTE, i), "untouched at " + i);
            }
            // the receiver could not release a malformed datagram's ticket: the send completes at the timeout
            p.clock.advance(SoftNicContext.DEFAULT_UD_REFERENCE_TIMEOUT_MS * 1_000_000L);
            assertEquals(WcStatus.SUCCESS, p.await(p.cqa, "the given-up send").status);
            rewrite[0] = false;
            final MemorySegment sent = copyOf(fill(src, 13));
            p.send(2, SIZE);
            p.stepSender();
            assertEquals(1, p.await(p.cqb, "the next datagram").wrId);
            assertEquals(-1, p.mb.segment().asSlice(40, SIZE).mismatch(sent));
            assertEquals(2, p.await(p.cqa, "its send").wrId);
        }
    }

    /**
     * A seeded fuzz of referenced UD datagrams (an attack on the one-copy path): 300 sends whose packets are
     * rewritten in flight, 1 to 3 bytes of the BTH, DETH, payload-length or RefETH fields (count, span, token, each
     * segment's address, key and length) flipped. Whatever a mutation makes of a datagram, no byte of the receiver's
     * memory outside the posted receive buffer changes, the sender's memory is never written, every send completes
     * (at the latest when its ticket is given up), nothing throws; afterwards a clean datagram is placed byte for
     * byte.
     */
    @Test
    void mutatedUdReferencesNeverReachOutsideTheReceiveBufferNorBreakTheNics() {
        final java.util.Random rnd = new java.util.Random(0x5eed_0d01L);
        final boolean[] mutate = {true};
        final LinkHook fuzz = new LinkHook() {
            private final io.gdrkit.softnic.wire.Packet pkt = new io.gdrkit.softnic.wire.Packet();

            @Override
            public int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer, final long offset,
                                final int length) {
                if (mutate[0] && pkt.wrap(buffer, offset, length).isReference()
                    && pkt.is(io.gdrkit.softnic.wire.BthOpcode.UD)) {
                    final long ref = offset + length - io.gdrkit.softnic.wire.Packet.referenceLength(pkt.refCount());
                    for (int k = 1 + rnd.nextInt(3); k > 0; k--) {
                        // mostly the reference (where the peer names memory), else the headers after the LRH
                        final long at = rnd.nextInt(4) != 0 ? ref + rnd.nextInt((int) (offset + length - ref))
                            : offset + 8 + rnd.nextInt((int) (ref - offset - 8));
                        buffer.set(ValueLayout.JAVA_BYTE, at, (byte) (buffer.get(ValueLayout.JAVA_BYTE, at)
                            ^ (1 << rnd.nextInt(8))));
                    }
                }
                return DELIVER;
            }

            @Override
            public boolean passesReferences() {
                return true;
            }
        };
        try (Pair p = new Pair(new SoftNicContext().linkHook(fuzz).linkCrc(false))) {
            final int bufLen = 40 + SIZE;
            final MemorySegment a = p.ma.segment();
            final MemorySegment b = p.mb.segment();
            fill(a, 21);
            final MemorySegment aBefore = copyOf(a);
            fill(b, 22);
            final MemorySegment bOutside = copyOf(b.asSlice(bufLen));
            boolean posted = false;
            int received = 0;
            for (int i = 0; i < 300; i++) {
                if (!posted) {
                    p.qb.postRecv(new RecvWorkRequest().wrId(1000 + i).sge(p.mb, 0, bufLen));
                    posted = true;
                }
                p.send(i, 1 + rnd.nextInt(SIZE));
                p.stepSender();
                if (p.poll(p.cqb) != null) {
                    posted = false;
                    received++;
                }
                p.clock.advance(SoftNicContext.DEFAULT_UD_REFERENCE_TIMEOUT_MS * 1_000_000L);
                final int wr = i;
                assertEquals(wr, p.await(p.cqa, "send " + wr).wrId);
                assertEquals(-1, b.asSlice(bufLen).mismatch(bOutside), "receiver memory outside the buffer changed");
                assertEquals(-1, a.mismatch(aBefore), "the sender's memory was written");
            }
            assertTrue(received > 0 && received < 300, "some mutations dropped datagrams, some left them whole: "
                + received + " of 300 received");
            mutate[0] = false;
            if (!posted) {
                p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, bufLen));
            }
            final MemorySegment sent = copyOf(a.asSlice(0, SIZE));
            p.send(9999, SIZE);
            p.stepSender();
            assertEquals(WcStatus.SUCCESS, p.await(p.cqb, "the clean datagram").status);
            assertEquals(-1, b.asSlice(40, SIZE).mismatch(sent), "the clean datagram byte for byte");
            assertEquals(9999, p.await(p.cqa, "its send").wrId);
        }
    }

    /** Where references may not travel, the bytes do: a hook that sees payloads, one-copy off, inline data. */
    @Test
    void theCopyPathWhereReferencesCannotTravel() {
        final LinkHook looks = (s, d, b, o, l) -> LinkHook.DELIVER; // may read payloads: passesReferences false
        for (final SoftNicContext ctx : new SoftNicContext[] {new SoftNicContext().linkHook(looks),
            new SoftNicContext().oneCopy(false)}) {
            try (Pair p = new Pair(ctx)) {
                final MemorySegment src = fill(p.ma.segment().asSlice(0, SIZE), 5);
                final MemorySegment sent = copyOf(src);
                p.qb.postRecv(new RecvWorkRequest().wrId(1).sge(p.mb, 0, 40 + SIZE));
                p.send(1, SIZE);
                assertEquals(1, p.await(p.cqa, "a copied send completes without the receiver").wrId);
                fill(src, 6); // reused at once: the packet holds the bytes
                assertEquals(1, p.await(p.cqb, "the datagram").wrId);
                assertEquals(-1, p.mb.segment().asSlice(40, SIZE).mismatch(sent));
                assertEquals(0, p.da.ud.referencedSent());
            }
        }
    }
}
