/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.DeterministicRunner;
import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The agents stepped by one seeded runner on virtual time: losses recover, and a seed replays exactly. */
class DeterministicTest {
    /** What one run observed, to compare runs of the same seed. */
    record Trace(long steps, long virtualNanos, List<String> packets) {
    }

    private Trace run(final long seed, final int dropIndex) {
        final ManualClock clock = new ManualClock(0);
        final List<String> seen = new ArrayList<>();
        final int[] count = {0};
        final Packet view = new Packet();
        final LinkHook hook = (src, dst, buf, off, len) -> {
            view.wrap(buf, off, len);
            final int n = count[0]++;
            seen.add(src + ">" + dst + " " + BthOpcode.name(view.opcode()) + " psn=" + view.psn()
                + (n == dropIndex ? " DROPPED" : ""));
            return n == dropIndex ? LinkHook.DROP : LinkHook.DELIVER;
        };
        final SoftNicContext ctx = new SoftNicContext().progressMode(SoftNicContext.ProgressMode.DETERMINISTIC)
            .clock(clock).linkHook(hook);
        try (Fixture f = new Fixture(ctx, 1 << 16, new QpInitAttr(), QpBringUp.rcDefaults().timeout(8))) {
            final DeterministicRunner runner = new DeterministicRunner(seed, clock, 50, 10_000);
            f.driver.agents().forEach(runner::add);
            final int size = 5 * 1024 + 17; // two packets at MTU 4096
            Fixture.fill(f.a.buf.asSlice(0, size), seed);
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, size).remote(f.b.mr.address(), f.b.mr.rkey()));
            final WorkCompletion[] wc = {new WorkCompletion()};
            runner.runUntil(() -> f.a.scq.poll(wc) == 1, 100_000, "the WRITE completion");
            assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0]::toString);
            Fixture.assertBytes(f.a.buf.asSlice(0, size), f.b.buf.asSlice(0, size), "data after loss recovery");
            return new Trace(runner.steps(), clock.nanoTime(), seen);
        }
    }

    @Test
    void singleLostPacketIsRetransmitted() {
        for (int drop = 0; drop < 3; drop++) {
            final Trace t = run(42, drop);
            final int d = drop;
            assertTrue(t.packets().get(drop).endsWith("DROPPED"), () -> "packet " + d + " was dropped: " + t);
            // the dropped packet (or the one whose ACK was lost) goes out again
            final String resent = t.packets().get(drop).replace(" DROPPED", "");
            assertTrue(t.packets().subList(drop + 1, t.packets().size()).contains(resent),
                () -> "retransmission of " + resent + " in " + t.packets());
        }
    }

    @Test
    void sameSeedReplaysTheSameInterleaving() {
        final Trace first = run(7, 1);
        final Trace second = run(7, 1);
        assertEquals(first, second);
    }

    @Test
    void differentSeedsStillDeliver() {
        for (long seed = 1; seed <= 20; seed++) {
            run(seed, (int) (seed % 4));
        }
    }
}
