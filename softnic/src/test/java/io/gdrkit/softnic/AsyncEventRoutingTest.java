/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

/**
 * Two contexts open on one device, as two libibverbs users of one HCA: a QP's event goes only to the context that
 * created the QP; a port event goes to every open context. (One queue per device used to hand each event to
 * whichever context polled first.)
 */
class AsyncEventRoutingTest {
    @Test
    void qpEventsGoToTheirOwnerAndPortEventsToEveryContext() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 12)) {
            final VerbsContext other = f.b.dev.open();
            try {
                // a WRITE with a wrong rkey: b's QP goes to ERR with QP_ACCESS_ERR, an event of b's context only
                f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(1).flags(SendFlags.SIGNALED)
                    .sge(f.a.mr, 0, 16).remote(f.b.mr.address(), f.b.mr.rkey() ^ 0x100));
                final AsyncEvent e = f.awaitEvent(f.b.ctx, AsyncEventType.QP_ACCESS_ERR, f.b.qp.qpNum());
                f.b.ctx.ackAsyncEvent(e);
                f.settle(200);
                assertNull(other.pollAsyncEvent(), "another context of the device does not see b's QP event");

                // a port event reaches both contexts of the device, each once
                f.b.dev.portDown("test");
                final AsyncEvent mine = f.b.ctx.getAsyncEvent(1_000_000_000L);
                final AsyncEvent theirs = other.getAsyncEvent(1_000_000_000L);
                assertEquals(AsyncEventType.PORT_ERR, mine.type());
                assertEquals(AsyncEventType.PORT_ERR, theirs.type());
                assertEquals(1, theirs.element());
                f.b.ctx.ackAsyncEvent(mine);
                other.ackAsyncEvent(theirs);
                assertNull(f.b.ctx.pollAsyncEvent());
                assertNull(other.pollAsyncEvent());
            } finally {
                other.close();
            }
            // a closed context is no longer given events; the open one still is
            f.b.dev.portUp();
            final AsyncEvent up = f.b.ctx.getAsyncEvent(1_000_000_000L);
            assertEquals(AsyncEventType.PORT_ACTIVE, up.type());
            f.b.ctx.ackAsyncEvent(up);
        }
    }
}
