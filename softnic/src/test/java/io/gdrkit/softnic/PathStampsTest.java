/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.DirectQueue;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WrOpcode;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The NIC's per-WQE path stamps (DirectQueue.pathNanos): with stamping on at both ends, a signaled WRITE's way reads
 * placed at the target, ACK sent, ACK taken, CQE written, in that order on one clock, byte-exact data beside them;
 * none where the target does not stamp, none for a WQE whose slot a later one took, none for an unknown step.
 */
class PathStampsTest {

    @Test
    void aWritesStepsAreStampedInOrderAtBothEnds() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 16)) {
            final DirectQueue a = f.a.qp.direct();
            a.stampPickups(true);
            f.b.qp.direct().stampPickups(true);
            final int depth = f.a.qp.direct().sqDepth();
            for (int i = 0; i < depth + 3; i++) {
                Fixture.fill(f.a.buf.asSlice(0, 64), i);
                final long before = System.nanoTime();
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(i)
                    .sge(f.a.mr, 0, 64).remote(f.b.mr.address() + 128, f.b.mr.rkey()));
                f.awaitSuccess(f.a.scq, "WRITE " + i);
                final long after = System.nanoTime();
                Fixture.assertBytes(f.a.buf.asSlice(0, 64), f.b.buf.asSlice(128, 64), "WRITE " + i);
                final long pick = a.pickupNanos(i);
                final long placed = a.pathNanos(i, DirectQueue.PATH_PLACED);
                final long sent = a.pathNanos(i, DirectQueue.PATH_ACK_SENT);
                final long taken = a.pathNanos(i, DirectQueue.PATH_ACK_TAKEN);
                final long cqe = a.completionNanos(i);
                final String at = "WRITE " + i + ": pick-up " + pick + ", placed " + placed + ", ACK sent " + sent
                    + ", taken " + taken + ", CQE " + cqe;
                assertTrue(before <= pick && pick <= placed && placed <= sent && sent <= taken && taken <= cqe
                    && cqe <= after, at);
                assertEquals(0, a.pathNanos(i, 7), "no such step");
            }
            // the first WQEs' slots were taken by later ones: their stamps are gone, not read from the later WQE
            assertEquals(0, a.pathNanos(0, DirectQueue.PATH_PLACED));
            assertEquals(0, a.pathNanos(1, DirectQueue.PATH_ACK_TAKEN));
        }
    }

    @Test
    void aTargetThatDoesNotStampGivesNone() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 16)) {
            final DirectQueue a = f.a.qp.direct();
            a.stampPickups(true); // only the initiator stamps
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(1)
                .sge(f.a.mr, 0, 8).remote(f.b.mr.address(), f.b.mr.rkey()));
            f.awaitSuccess(f.a.scq, "WRITE");
            assertTrue(a.pickupNanos(0) > 0 && a.completionNanos(0) >= a.pickupNanos(0), "the initiator's own stamps");
            assertTrue(a.pathNanos(0, DirectQueue.PATH_ACK_TAKEN) > 0, "taken is the initiator's");
            assertEquals(0, a.pathNanos(0, DirectQueue.PATH_PLACED));
            assertEquals(0, a.pathNanos(0, DirectQueue.PATH_ACK_SENT));
        }
    }
}
