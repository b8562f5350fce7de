/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Randomized mixes of WRITE, WRITE_WITH_IMM, SEND, READ and FETCH_ADD, with random sizes, SGE splits and
 * signaling, checked byte by byte against a model of what each side's memory must hold.
 */
class StressTest {
    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5})
    void randomMixIsByteExact(final long seed) {
        final int region = 1 << 20;
        final SplittableRandom rnd = new SplittableRandom(seed);
        final QpInitAttr init = new QpInitAttr();
        init.cap.maxSendWr(64).maxRecvWr(64).maxSendSge(4).maxRecvSge(2);
        try (Fixture f = new Fixture(new SoftNicContext(), 4L * region, init,
            QpBringUp.rcDefaults().pathMtu(1 + rnd.nextInt(5)))) {
            // a: [0,region) source, [region, 2 region) read landing, [3 region) atomic results
            // b: [0,region) write target, [region,2 region) recv target, [2 region, 3 region) read source
            final MemorySegment aSrc = f.a.buf.asSlice(0, region);
            final MemorySegment bRead = f.b.buf.asSlice(2L * region, region);
            Fixture.fill(bRead, seed * 31);
            long counter = 0;
            f.b.buf.set(ValueLayout.JAVA_LONG, 3L * region, 0);
            final SendWorkRequest wr = new SendWorkRequest(4);
            final RecvWorkRequest rwr = new RecvWorkRequest(2);
            final WorkCompletion[] wcs = new WorkCompletion[16];
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new WorkCompletion();
            }
            for (int op = 0; op < 300; op++) {
                final int kind = rnd.nextInt(5);
                final int len = rnd.nextInt(4) == 0 ? rnd.nextInt(200_000) : rnd.nextInt(5000);
                final int srcOff = rnd.nextInt(region - len);
                final int dstOff = rnd.nextInt(region - len);
                Fixture.fill(aSrc.asSlice(srcOff, len), seed * 1000 + op);
                wr.clear().wrId(op).flags(SendFlags.SIGNALED);
                splitSges(wr, f, srcOff, len, rnd);
                switch (kind) {
                    case 0 -> wr.opcode(WrOpcode.RDMA_WRITE).remote(f.b.mr.address() + dstOff, f.b.mr.rkey());
                    case 1 -> {
                        f.b.qp.postRecv(rwr.wrId(op).sge(f.b.mr, region, region));
                        wr.opcode(WrOpcode.RDMA_WRITE_WITH_IMM).imm(op).remote(f.b.mr.address() + dstOff,
                            f.b.mr.rkey());
                    }
                    case 2 -> {
                        f.b.qp.postRecv(rwr.wrId(op).sge(f.b.mr, region, region));
                        wr.opcode(WrOpcode.SEND);
                    }
                    case 3 -> wr.clear().wrId(op).flags(SendFlags.SIGNALED).opcode(WrOpcode.RDMA_READ)
                        .sge(f.a.mr, region + dstOff, len).remote(f.b.mr.address() + 2L * region + dstOff,
                            f.b.mr.rkey());
                    default -> {
                        final long add = rnd.nextLong(1000);
                        wr.clear().wrId(op).flags(SendFlags.SIGNALED).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                            .sge(f.a.mr, 3L * region, 8).remote(f.b.mr.address() + 3L * region, f.b.mr.rkey())
                            .atomic(add, 0);
                        f.a.qp.postSend(wr);
                        f.awaitSuccess(f.a.scq, "FETCH_ADD " + op);
                        assertEquals(counter, f.a.buf.get(ValueLayout.JAVA_LONG, 3L * region), "fetched value");
                        counter += add;
                        assertEquals(counter, f.b.buf.get(ValueLayout.JAVA_LONG, 3L * region), "counter");
                        continue;
                    }
                }
                f.a.qp.postSend(wr);
                final WorkCompletion wc = f.awaitSuccess(f.a.scq, "op " + op + " kind " + kind);
                assertEquals(op, wc.wrId);
                switch (kind) {
                    case 0 -> Fixture.assertBytes(aSrc.asSlice(srcOff, len), f.b.buf.asSlice(dstOff, len),
                        "WRITE " + op);
                    case 1 -> {
                        final WorkCompletion r = f.awaitSuccess(f.b.rcq, "RECV_RDMA_WITH_IMM " + op);
                        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode);
                        assertEquals(op, r.immData);
                        assertEquals(len, r.byteLen);
                        Fixture.assertBytes(aSrc.asSlice(srcOff, len), f.b.buf.asSlice(dstOff, len),
                            "WRITE_WITH_IMM " + op);
                    }
                    case 2 -> {
                        final WorkCompletion r = f.awaitSuccess(f.b.rcq, "RECV " + op);
                        assertEquals(len, r.byteLen);
                        Fixture.assertBytes(aSrc.asSlice(srcOff, len), f.b.buf.asSlice(region, len), "SEND " + op);
                    }
                    default -> Fixture.assertBytes(f.b.buf.asSlice(2L * region + dstOff, len),
                        f.a.buf.asSlice(region + dstOff, len), "READ " + op);
                }
            }
        }
    }

    /** Splits [off, off+len) of a's MR into 1..4 SGEs. */
    private static void splitSges(final SendWorkRequest wr, final Fixture f, final int off, final int len,
                                  final SplittableRandom rnd) {
        final int n = len < 4 ? 1 : 1 + rnd.nextInt(4);
        int pos = off;
        int left = len;
        for (int i = 0; i < n; i++) {
            final int part = i == n - 1 ? left : rnd.nextInt(left / (n - i) + 1);
            wr.sge(i).set(f.a.mr, pos, part);
            pos += part;
            left -= part;
        }
        wr.numSge(n);
    }
}
