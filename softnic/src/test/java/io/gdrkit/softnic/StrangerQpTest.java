/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import io.gdrkit.softnic.fabric.ShmFabric;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * An RC QP answers only its connected peer: a third NIC whose QP is brought up towards the victim's QP number, with
 * the PSN the victim expects and its memory's rkey, gets nothing executed: its WRITE leaves the victim's memory as it
 * was, its READ brings nothing back, and the victim's own peer still works afterwards. Payloads travel in the packets
 * (no one-copy references, which the responder would resolve against the connected peer's memory only).
 */
class StrangerQpTest {
    private static final int LEN = 4096;

    /** On the in-JVM fabric and on the shm fabric (the stranger a third port of the same fabric directory). */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"jvm", "shm"})
    void aStrangersWriteAndReadToAConnectedQpAreDroppedAndCounted(final String fabric,
                                                                 @org.junit.jupiter.api.io.TempDir final Path tmp)
        throws java.io.IOException {
        final SoftNicContext ctx = new SoftNicContext().oneCopy(false);
        try (Fixture f = fabric.equals("jvm") ? new Fixture(ctx, 1 << 16) : new Fixture(ctx,
            new ShmFabric(ShmFabric.createPrivateDirectory(tmp, "gdrkit-stranger-"), 1 << 20, 4, null, false),
            1 << 16)) {
            final SoftDevice strangerDev = fabric.equals("jvm") ? f.driver.addDevice("stranger")
                : f.driver.addDevice("stranger", 3);
            try (VerbsContext sctx = strangerDev.open()) {
                final ProtectionDomain pd = sctx.allocPd();
                final CompletionQueue cq = sctx.createCq(16);
                final MemorySegment mine = f.arena.allocate(LEN, 4096);
                mine.fill((byte) 0x5A);
                final MemoryRegion mr = pd.registerMr(mine, AccessFlags.LOCAL_WRITE);
                final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
                // towards a's connected QP, from the PSN a expects from b (b sends from 200 in the fixture); one
                // retry so that the stranger's own WRs end soon
                QpBringUp.toRts(qp, f.a.qp.qpNum(), f.a.dev.lid(), 200, 0, QpBringUp.rcDefaults().timeout(8)
                    .retryCnt(1));
                f.a.buf.fill((byte) 0x11);
                qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(mr, 0, LEN).remote(f.a.mr.address(), f.a.mr.rkey()));
                final WorkCompletion w = f.awaitOne(cq, "the stranger's WRITE to give up");
                assertEquals(WcStatus.RETRY_EXC_ERR, w.status, "the victim never acknowledged: " + w);
                for (int i = 0; i < LEN; i++) {
                    assertEquals((byte) 0x11, f.a.buf.get(ValueLayout.JAVA_BYTE, i), "victim byte " + i + " changed");
                }
                assertTrue(f.a.dev.packetsFromStrangers() > 0, "the dropped packets are counted");
            }
            // the victim's own connection is untouched: b writes to a, every byte lands
            for (int i = 0; i < LEN; i++) {
                f.b.buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + 7));
            }
            f.b.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(f.b.mr, 0, LEN).remote(f.a.mr.address(), f.a.mr.rkey()));
            final WorkCompletion ok = f.awaitOne(f.b.scq, "the peer's WRITE");
            assertEquals(WcStatus.SUCCESS, ok.status, ok.toString());
            assertEquals(-1, f.a.buf.asSlice(0, LEN).mismatch(f.b.buf.asSlice(0, LEN)));
        }
    }

    @Test
    void aStrangersReadGetsNoResponseAndForgedAcksCompleteNothing() {
        try (Fixture f = new Fixture(new SoftNicContext().oneCopy(false), 1 << 16)) {
            final SoftDevice strangerDev = f.driver.addDevice("stranger");
            try (VerbsContext sctx = strangerDev.open()) {
                final ProtectionDomain pd = sctx.allocPd();
                final CompletionQueue cq = sctx.createCq(16);
                final MemorySegment into = f.arena.allocate(LEN, 4096);
                into.fill((byte) 0);
                f.a.buf.fill((byte) 0x77);
                final MemoryRegion mr = pd.registerMr(into, AccessFlags.LOCAL_WRITE);
                final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
                QpBringUp.toRts(qp, f.a.qp.qpNum(), f.a.dev.lid(), 200, 0, QpBringUp.rcDefaults().timeout(8)
                    .retryCnt(1));
                qp.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(mr, 0, LEN).remote(f.a.mr.address(), f.a.mr.rkey()));
                final WorkCompletion w = f.awaitOne(cq, "the stranger's READ to give up");
                assertEquals(WcStatus.RETRY_EXC_ERR, w.status, w.toString());
                assertEquals(-1, into.mismatch(MemorySegment.ofArray(new byte[LEN])), "nothing was read back");
                final long dropped = f.a.dev.packetsFromStrangers();
                assertTrue(dropped > 0, "the READ requests are counted");
                // the victim's requester sees no stranger either: b's traffic to a still completes
                f.a.qp.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(f.a.mr, 0, 64).remote(f.b.mr.address(), f.b.mr.rkey()));
                assertEquals(WcStatus.SUCCESS, f.awaitOne(f.a.scq, "a's WRITE to b").status);
            }
        }
    }
}
