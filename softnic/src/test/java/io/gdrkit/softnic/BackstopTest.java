/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * OWN_DEVICE with a backstop ({@code gdrkit.nic.backstop.us}): a NIC whose host never polls still answers, because
 * its backstop thread steps it; without the backstop nobody does. Only a's CQ is polled here, which in OWN_DEVICE
 * moves a's NIC alone.
 */
class BackstopTest {
    private static void write(final Fixture f) {
        f.a.buf.asSlice(0, 100).fill((byte) 0x3C);
        f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(5)
            .sge(f.a.mr, 0, 100).remote(f.b.mr.address() + 64, f.b.mr.rkey()));
    }

    @Test
    void withoutABackstopAPeerThatNeverPollsNeverAnswers() {
        // a frozen clock: a's retransmission timer never runs out, so "no completion" cannot be an error completion
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.OWN_DEVICE)
            .clock(new io.gdrkit.core.agent.ManualClock(0)), 4096)) {
            write(f);
            final WorkCompletion[] wc = {new WorkCompletion()};
            for (int i = 0; i < 2000; i++) {
                assertEquals(0, f.a.scq.poll(wc), "a completion although b's NIC never moved");
            }
            assertEquals(0, f.b.buf.get(ValueLayout.JAVA_BYTE, 64), "bytes landed although b's NIC never moved");
        }
    }

    @Test
    void theBackstopAnswersForAPeerThatNeverPolls() {
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.OWN_DEVICE)
            .backstopMicros(200), 4096)) {
            write(f);
            final WorkCompletion[] wc = {new WorkCompletion()};
            final long deadline = System.nanoTime() + 20_000_000_000L;
            int got = 0;
            while (got == 0) {
                assertTrue(System.nanoTime() < deadline, "b's backstop never answered within 20 s");
                got = f.a.scq.poll(wc);
            }
            assertEquals(WcStatus.SUCCESS, wc[0].status, WcStatus.name(wc[0].status));
            assertEquals(5, wc[0].wrId);
            for (int i = 0; i < 100; i++) {
                assertEquals((byte) 0x3C, f.b.buf.get(ValueLayout.JAVA_BYTE, 64 + i), "byte " + i);
            }
        }
    }

    @Test
    void aBadPeriodIsNamed() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new SoftNicContext()
            .properties(Map.of(SoftNicContext.BACKSTOP_PROP, "-5")).conclude());
        assertTrue(e.getMessage().contains(SoftNicContext.BACKSTOP_PROP), e.getMessage());
        assertEquals(0, new SoftNicContext().properties(Map.of()).conclude().backstopMicros());
    }
}
