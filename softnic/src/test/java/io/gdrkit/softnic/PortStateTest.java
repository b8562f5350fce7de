/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.core.agent.DeterministicRunner;
import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.PortAttr;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Port state and port async events, from the IB spec (the port state machine; QPs are not moved by a port change)
 * and libibverbs (ibv_query_port's state/phys_state, ibv_get_async_event's IBV_EVENT_PORT_ERR and
 * IBV_EVENT_PORT_ACTIVE with element.port_num, ibv_ack_async_event). RC runs in virtual time, so "within the retry
 * budget" and "past it" are exact, whatever the load of the machine.
 */
class PortStateTest {
    private static final long SEC = TimeUnit.SECONDS.toNanos(1);

    /** In every progress mode: with a dedicated NIC thread the transition waits for the NIC's duty, bounded. */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(value = SoftNicContext.ProgressMode.class,
        names = {"INVOKER", "OWN_DEVICE", "DEDICATED"})
    void eachTransitionRaisesOneEventWithThePortNumberAndQueryPortFollows(final SoftNicContext.ProgressMode mode) {
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(mode), 1 << 12)) {
            PortAttr p = f.a.ctx.queryPort(1);
            assertEquals(PortAttr.PORT_ACTIVE, p.state());
            assertEquals(PortAttr.PHYS_LINK_UP, p.physState());
            assertTrue(f.a.dev.isPortActive());
            assertNull(f.a.ctx.pollAsyncEvent(), "no event before any change");

            assertTrue(f.a.dev.portDown("cable pulled"), "ACTIVE -> DOWN is a transition");
            p = f.a.ctx.queryPort(1);
            assertEquals(PortAttr.PORT_DOWN, p.state());
            assertEquals(PortAttr.PHYS_POLLING, p.physState(), "the link is gone; the port polls for a partner");
            assertEquals(f.a.dev.lid(), p.lid(), "the LID stays assigned");
            assertFalse(f.a.dev.isPortActive());
            final AsyncEvent down = f.a.ctx.getAsyncEvent(SEC);
            assertEquals(AsyncEventType.PORT_ERR, down.type());
            assertEquals(1, down.element(), "element: the port number");
            assertEquals("PORT_ERR(1): port 1 of soft0 is DOWN: cable pulled", down.toString());
            f.a.ctx.ackAsyncEvent(down);
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> f.a.ctx.ackAsyncEvent(down)).errno(),
                "an event is acknowledged once");

            assertFalse(f.a.dev.portDown("again"), "DOWN -> DOWN is no transition");
            assertNull(f.a.ctx.getAsyncEvent(SEC / 50), "no event on a no-op transition");
            assertEquals(PortAttr.PORT_DOWN, f.a.ctx.queryPort(1).state());

            assertTrue(f.a.dev.portUp(), "DOWN -> ACTIVE is a transition");
            p = f.a.ctx.queryPort(1);
            assertEquals(PortAttr.PORT_ACTIVE, p.state());
            assertEquals(PortAttr.PHYS_LINK_UP, p.physState());
            final AsyncEvent up = f.a.ctx.getAsyncEvent(SEC);
            assertEquals(AsyncEventType.PORT_ACTIVE, up.type());
            assertEquals(1, up.element());
            assertEquals("PORT_ACTIVE(1): port 1 of soft0 is ACTIVE", up.toString());
            f.a.ctx.ackAsyncEvent(up);

            assertFalse(f.a.dev.portUp(), "ACTIVE -> ACTIVE is no transition");
            assertNull(f.a.ctx.getAsyncEvent(SEC / 50), "no event on a no-op transition");
            assertNull(f.b.ctx.pollAsyncEvent(), "the other device's port never changed");
            assertEquals(QpState.RTS, f.a.qp.state(), "a port change moves no QP (IB spec)");
            assertEquals(QpState.RTS, f.b.qp.state());
        }
    }

    @Test
    void ackRefusesAnEventThisContextDidNotReturn() {
        try (Fixture f = new Fixture(new SoftNicContext(), 1 << 12)) {
            f.a.dev.portDown("test");
            final AsyncEvent e = f.a.ctx.pollAsyncEvent();
            final AsyncEvent twin = new AsyncEvent(e.type(), e.element(), e.detail());
            assertEquals(e, twin, "equal as records");
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> f.a.ctx.ackAsyncEvent(twin)).errno(),
                "a copy was never returned");
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> f.b.ctx.ackAsyncEvent(e)).errno(),
                "another context did not return it");
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> f.a.ctx.ackAsyncEvent(null)).errno());
            f.a.ctx.ackAsyncEvent(e);
        }
    }

    /** Two NICs in virtual time, one seeded runner; RC timeout 10 (4.2 ms), retry_cnt 3, default backoff. */
    private static final class Rig implements AutoCloseable {
        final ManualClock clock = new ManualClock(0);
        final Fixture f;
        final DeterministicRunner runner;
        final List<WorkCompletion> done = new ArrayList<>();

        Rig() {
            final SoftNicContext ctx = new SoftNicContext().clock(clock)
                .progressMode(SoftNicContext.ProgressMode.DETERMINISTIC);
            f = new Fixture(ctx, 1 << 16, new QpInitAttr(), QpBringUp.rcDefaults().timeout(10).retryCnt(3));
            runner = new DeterministicRunner(3, clock, 100, 10_000);
            f.driver.agents().forEach(runner::add);
        }

        long budget() {
            return ((SoftQp) f.a.qp).retryBudgetNanos();
        }

        /** Runs the NICs for {@code nanos} of virtual time, collecting a's send completions. */
        void runFor(final long nanos) {
            final long until = clock.nanoTime() + nanos;
            while (clock.nanoTime() < until) {
                runner.round();
                drain();
            }
        }

        void runUntil(final int completions, final String what) {
            runner.runUntil(() -> {
                drain();
                return done.size() >= completions;
            }, 10_000_000, what);
        }

        private void drain() {
            final WorkCompletion[] wc = WorkCompletion.array(4);
            final int n = f.a.scq.poll(wc);
            for (int i = 0; i < n; i++) {
                final WorkCompletion c = new WorkCompletion();
                c.copyFrom(wc[i]);
                done.add(c);
            }
        }

        void post() {
            Fixture.fill(f.a.buf.asSlice(0, 5000), 21);
            Fixture.fill(f.b.buf.asSlice(40_000, 3000), 22);
            f.b.qp.postRecv(new RecvWorkRequest().wrId(7).sge(f.b.mr, 20_000, 4096));
            // posting while the port is down is accepted, as on hardware: the outcome is in the completions
            f.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(1).flags(SendFlags.SIGNALED)
                .sge(f.a.mr, 0, 5000).remote(f.b.mr.address() + 8192, f.b.mr.rkey())
                .next(new SendWorkRequest().opcode(WrOpcode.SEND).wrId(2).flags(SendFlags.SIGNALED)
                    .sge(f.a.mr, 0, 3000)
                    .next(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).wrId(3).flags(SendFlags.SIGNALED)
                        .sge(f.a.mr, 10_000, 3000).remote(f.b.mr.address() + 40_000, f.b.mr.rkey()))));
        }

        @Override
        public void close() {
            f.close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"requester", "responder"})
    void rcRecoversWhenThePortComesBackWithinTheRetryBudget(final String side) {
        try (Rig r = new Rig()) {
            final SoftDevice down = side.equals("requester") ? r.f.a.dev : r.f.b.dev;
            down.portDown("test");
            r.post();
            r.runFor(r.budget() / 3);
            assertEquals(List.of(), r.done, "nothing completes while the port is down");
            assertTrue(down.packetsLostPortDown() > 0, "packets died at the down port");
            assertEquals(QpState.RTS, r.f.a.qp.state(), "retrying, not failed");
            down.portUp();
            r.runUntil(3, "the three WRs after the port came back");
            for (int i = 0; i < 3; i++) {
                assertEquals(WcStatus.SUCCESS, r.done.get(i).status, r.done.get(i)::toString);
                assertEquals(i + 1, r.done.get(i).wrId, "in order");
            }
            Fixture.assertBytes(r.f.a.buf.asSlice(0, 5000), r.f.b.buf.asSlice(8192, 5000), "WRITE");
            Fixture.assertBytes(r.f.b.buf.asSlice(40_000, 3000), r.f.a.buf.asSlice(10_000, 3000), "READ");
            final WorkCompletion recv = r.f.awaitOne(r.f.b.rcq, "the SEND's receive");
            assertEquals(WcStatus.SUCCESS, recv.status);
            assertEquals(WcOpcode.RECV, recv.opcode);
            assertEquals(3000, recv.byteLen);
            Fixture.assertBytes(r.f.a.buf.asSlice(0, 3000), r.f.b.buf.asSlice(20_000, 3000), "SEND");
            assertEquals(QpState.RTS, r.f.a.qp.state());
        }
    }

    @Test
    void rcEndsRetryExcErrWhenThePortStaysDownPastTheRetryBudget() {
        try (Rig r = new Rig()) {
            r.f.a.dev.portDown("test");
            r.f.b.buf.asSlice(8192, 5000).fill((byte) 0x5A);
            r.post();
            final long start = r.clock.nanoTime();
            r.runUntil(3, "the WRs to fail");
            assertTrue(r.clock.nanoTime() - start >= r.budget(), "not before the whole retry budget was spent");
            assertEquals(WcStatus.RETRY_EXC_ERR, r.done.get(0).status, r.done.get(0)::toString);
            assertEquals(1, r.done.get(0).wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, r.done.get(1).status);
            assertEquals(WcStatus.WR_FLUSH_ERR, r.done.get(2).status);
            assertEquals(QpState.ERR, r.f.a.qp.state());
            for (int i = 0; i < 5000; i++) {
                assertEquals((byte) 0x5A, r.f.b.buf.get(ValueLayout.JAVA_BYTE, 8192 + i), "no byte landed");
            }
            r.f.a.dev.portUp();
            assertEquals(QpState.ERR, r.f.a.qp.state(), "the port coming back does not revive the QP");
            assertEquals(AsyncEventType.PORT_ERR, r.f.a.ctx.pollAsyncEvent().type());
            assertEquals(AsyncEventType.PORT_ACTIVE, r.f.a.ctx.pollAsyncEvent().type());
            assertNull(r.f.a.ctx.pollAsyncEvent(), "RETRY_EXC_ERR is a completion error, not an async event");
        }
    }
}
