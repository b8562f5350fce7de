/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.cm.Striper;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WorkCompletion;
import org.junit.jupiter.api.Test;

/** One message striped over several QPs arrives whole; completion is reported once all stripes are done. */
class StriperTest {
    @Test
    void stripesOverFourQpsByteExact() {
        try (Fixture f = new Fixture(new SoftNicContext(), 16 << 20)) {
            final CompletionQueue acq = f.a.ctx.createCq(256);
            final CompletionQueue bcq = f.b.ctx.createCq(256);
            final QueuePair[] qa = new QueuePair[4];
            final QueuePair[] qb = new QueuePair[4];
            for (int i = 0; i < 4; i++) {
                qa[i] = f.a.pd.createQp(new QpInitAttr().cqs(acq, acq));
                qb[i] = f.b.pd.createQp(new QpInitAttr().cqs(bcq, bcq));
                QpBringUp.connect(qa[i], f.a.dev.lid(), 10 * i, qb[i], f.b.dev.lid(), 20 * i, QpBringUp.rcDefaults());
                qb[i].postRecv(new RecvWorkRequest().wrId(i).sge(f.b.mr, 0, 0));
            }
            final Striper striper = new Striper(qa, 4096, 8);
            final long[] sizes = {0, 1, 4095, 4096, 4097, 3 * 4096 + 5, 10_000_000};
            long pos = 0;
            for (int m = 0; m < sizes.length; m++) {
                final long len = sizes[m];
                Fixture.fill(f.a.buf.asSlice(pos, len), m);
                final int stripes = striper.postWrite(m, f.a.mr, pos, len, f.b.mr.address() + pos, f.b.mr.rkey(),
                    m == sizes.length - 1 ? 0x55 : null);
                assertEquals(Math.max(1, Math.min(4, (int) ((len + 4095) / 4096))), stripes, "stripes for " + len);
                long done = -1;
                int completions = 0;
                while (done < 0) {
                    final WorkCompletion wc = f.awaitOne(acq, "stripe of message " + m);
                    completions++;
                    done = striper.onCompletion(wc);
                }
                assertEquals(m, done);
                assertEquals(stripes, completions);
                Fixture.assertBytes(f.a.buf.asSlice(pos, len), f.b.buf.asSlice(pos, len), "message " + m);
                pos += len;
            }
            final WorkCompletion imm = f.awaitSuccess(bcq, "the WRITE_WITH_IMM of the last stripe");
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, imm.opcode);
            assertEquals(0x55, imm.immData);
            assertEquals(0, striper.inFlight());
        }
    }

    @Test
    void badInputIsRefused() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 16)) {
            final QueuePair[] one = {f.a.qp};
            assertThrows(IllegalArgumentException.class, () -> new Striper(new QueuePair[0], 4096, 1));
            assertThrows(IllegalArgumentException.class, () -> new Striper(one, 3000, 1));
            assertThrows(IllegalArgumentException.class, () -> new Striper(one, 4096, 3));
            final Striper s = new Striper(one, 4096, 1);
            assertTrue(assertThrows(VerbsException.class, () -> s.postWrite(1, f.a.mr, 60000, 10000,
                f.b.mr.address(), f.b.mr.rkey(), null)).getMessage().contains("outside the local MR"));
            s.postWrite(1, f.a.mr, 0, 100, f.b.mr.address(), f.b.mr.rkey(), null);
            assertTrue(assertThrows(VerbsException.class, () -> s.postWrite(2, f.a.mr, 0, 100, f.b.mr.address(),
                f.b.mr.rkey(), null)).getMessage().contains("still has 1 stripe"));
            assertEquals(1, s.onCompletion(f.awaitSuccess(f.a.scq, "stripe")));
        }
    }
}
