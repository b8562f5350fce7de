/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** Large messages and many QPs. */
class ScaleTest {
    @Test
    void writeAndRead96MiB() {
        final int size = 96 << 20;
        try (Fixture f = new Fixture(new SoftNicContext(), size)) {
            Fixture.fill(f.a.buf, 11);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, size).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "96 MiB WRITE");
            Fixture.assertBytes(f.a.buf, f.b.buf, "96 MiB written");
            Fixture.fill(f.b.buf, 12);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, size).remote(f.b.mr.address(), f.b.mr.rkey()));
            assertEquals(size, f.awaitSuccess(f.a.scq, "96 MiB READ").byteLen);
            Fixture.assertBytes(f.b.buf, f.a.buf, "96 MiB read");
        }
    }

    @Test
    void softwareMtuOf64KiB() {
        final int size = 10 << 20;
        try (Fixture f = new Fixture(new SoftNicContext(), size, new QpInitAttr(),
            QpBringUp.rcDefaults().softwareMtu(65536))) {
            assertEquals(65536, f.a.qp.queryQp().softwareMtu);
            Fixture.fill(f.a.buf, 3);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, size).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE at 64 KiB MTU");
            Fixture.assertBytes(f.a.buf, f.b.buf, "data");
        }
    }

    @Test
    void threeHundredQpsEachWriteTheirOwnSlice() {
        final int qps = 300;
        final int slice = 8192 + 13;
        try (Fixture f = new Fixture(new SoftNicContext(), (long) qps * slice)) {
            final CompletionQueue cq = f.a.ctx.createCq(qps * 2);
            final CompletionQueue rcq = f.b.ctx.createCq(qps * 2);
            final QueuePair[] as = new QueuePair[qps];
            for (int i = 0; i < qps; i++) {
                as[i] = f.a.pd.createQp(new QpInitAttr().cqs(cq, cq));
                final QueuePair b = f.b.pd.createQp(new QpInitAttr().cqs(rcq, rcq));
                QpBringUp.connect(as[i], f.a.dev.lid(), i * 1000, b, f.b.dev.lid(), i * 7777,
                    QpBringUp.rcDefaults().pathMtu(io.gdrkit.verbs.Mtu.MTU_1024));
            }
            Fixture.fill(f.a.buf, 99);
            final SendWorkRequest wr = new SendWorkRequest();
            for (int i = 0; i < qps; i++) {
                as[i].postSend(wr.clear().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(i)
                    .sge(f.a.mr, (long) i * slice, slice).remote(f.b.mr.address() + (long) i * slice,
                        f.b.mr.rkey()));
            }
            final boolean[] done = new boolean[qps];
            for (int n = 0; n < qps; n++) {
                final WorkCompletion wc = f.awaitSuccess(cq, "completion " + n + " of " + qps);
                assertEquals(as[(int) wc.wrId].qpNum(), wc.qpNum);
                done[(int) wc.wrId] = true;
            }
            for (int i = 0; i < qps; i++) {
                assertEquals(true, done[i], "QP " + i + " completed");
            }
            Fixture.assertBytes(f.a.buf, f.b.buf, "all slices");
        }
    }

    @Test
    void dedicatedThreadsMoveTheSameBytes() {
        final SoftNicContext ctx = new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DEDICATED)
            .idleStrategy("backoff");
        final int size = 3 << 20;
        try (Fixture f = new Fixture(ctx, size)) {
            Fixture.fill(f.a.buf, 5);
            final SendWorkRequest wr = new SendWorkRequest();
            for (int i = 0; i < 3; i++) {
                f.a.qp.postSend(wr.clear().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(i)
                    .sge(f.a.mr, (long) i << 20, 1 << 20).remote(f.b.mr.address() + ((long) i << 20),
                        f.b.mr.rkey()));
            }
            for (int i = 0; i < 3; i++) {
                assertEquals(i, f.awaitSuccess(f.a.scq, "WRITE " + i).wrId, "completions in order");
            }
            Fixture.assertBytes(f.a.buf, f.b.buf, "data");
        }
    }

    @Test
    void registerRejectsHeapAndBadAccess() {
        try (Fixture f = new Fixture(new SoftNicContext(), 4096)) {
            final var ex = org.junit.jupiter.api.Assertions.assertThrows(io.gdrkit.verbs.VerbsException.class,
                () -> f.a.pd.registerMr(MemorySegment.ofArray(new byte[64]), AccessFlags.LOCAL_WRITE));
            org.junit.jupiter.api.Assertions.assertTrue(ex.getMessage().contains("native"), ex.getMessage());
            final var ex2 = org.junit.jupiter.api.Assertions.assertThrows(io.gdrkit.verbs.VerbsException.class,
                () -> f.a.pd.registerMr(f.arena.allocate(64), AccessFlags.REMOTE_WRITE));
            org.junit.jupiter.api.Assertions.assertTrue(ex2.getMessage().contains("LOCAL_WRITE"), ex2.getMessage());
            final MemoryRegion mr = f.a.pd.registerMr(f.arena.allocate(64), AccessFlags.LOCAL_WRITE);
            assertEquals(mr.lkey(), mr.rkey());
        }
    }
}
