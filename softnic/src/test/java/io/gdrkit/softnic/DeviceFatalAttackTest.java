/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * An exception on the NIC's path (here thrown by the link while the requester transmits) makes the device fatal in
 * every progress mode alike: a DEVICE_FATAL async event naming the cause, every posted WR flushed in order with
 * WR_FLUSH_ERR, then {@code poll} failing with EIO naming DEVICE_FATAL. Promptly: within the NIC's own steps, not
 * through a retransmission timer running out (RETRY_EXC_ERR would say the exception was swallowed). The retransmit
 * timer is stretched 1000x so that a swallowed exception shows as a missing event, not as a late RETRY_EXC_ERR.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeviceFatalAttackTest {
    private static final long WAIT_NS = TimeUnit.SECONDS.toNanos(20);

    @ParameterizedTest
    @EnumSource(SoftNicContext.ProgressMode.class)
    void aNicPathExceptionIsDeviceFatalWithFlushesThenEio(final SoftNicContext.ProgressMode mode) {
        final boolean[] armed = {false};
        final LinkHook bomb = (src, dst, buf, off, len) -> {
            if (armed[0]) {
                throw new IllegalStateException("injected engine failure");
            }
            return LinkHook.DELIVER;
        };
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(mode).linkHook(bomb)
            .retransmitFactor(1000.0), 1 << 16)) {
            f.a.qp.postSend(write(f, 1));
            final WorkCompletion first = awaitCompletion(f, mode);
            assertEquals(WcStatus.SUCCESS, first.status, first::toString);
            armed[0] = true;
            for (int i = 0; i < 4; i++) {
                f.a.qp.postSend(write(f, 10 + i));
            }
            final List<Long> flushed = new ArrayList<>();
            final List<String> other = new ArrayList<>();
            AsyncEvent fatal = null;
            VerbsException reported = null;
            final WorkCompletion[] wc = {new WorkCompletion()};
            final long deadline = System.nanoTime() + WAIT_NS;
            while (reported == null && System.nanoTime() < deadline) {
                step(f, mode);
                final AsyncEvent e = f.a.ctx.pollAsyncEvent();
                if (e != null && e.type() == AsyncEventType.DEVICE_FATAL) {
                    fatal = e;
                }
                try {
                    if (f.a.scq.poll(wc) == 1) {
                        if (wc[0].status == WcStatus.WR_FLUSH_ERR) {
                            flushed.add(wc[0].wrId);
                        } else {
                            other.add(wc[0].toString());
                        }
                    }
                } catch (final VerbsException v) {
                    reported = v;
                }
                Thread.onSpinWait();
            }
            for (int i = 0; i < 100 && fatal == null; i++) {
                final AsyncEvent e = f.a.ctx.pollAsyncEvent();
                fatal = e != null && e.type() == AsyncEventType.DEVICE_FATAL ? e : null;
            }
            assertEquals(List.of(), other, mode + ": no completion other than flushes (a RETRY_EXC_ERR means the "
                + "exception was swallowed)");
            assertNotNull(fatal, mode + ": a DEVICE_FATAL event");
            assertTrue(fatal.toString().contains("injected engine failure"), fatal::toString);
            final VerbsException seen = reported;
            assertEquals(List.of(10L, 11L, 12L, 13L), flushed, () -> mode + ": every posted WR flushed, in order "
                + "(the poll's error: " + (seen == null ? "none within the wait" : seen.getMessage()) + ")");
            assertNotNull(reported, mode + ": poll reports the failure once the flushes are read");
            assertEquals(Errno.EIO, reported.errno());
            assertTrue(reported.getMessage().contains("DEVICE_FATAL")
                && reported.getMessage().contains("injected engine failure"), reported::getMessage);
        }
    }

    /**
     * The responder's NIC fails (its link throws on the ACK it sends): that device, not the requester's, is fatal in
     * every mode, and a poll of its CQ reports EIO naming DEVICE_FATAL; the requester's QP is told by its retry budget
     * (RETRY_EXC_ERR), as a peer whose NIC died is on hardware.
     */
    @ParameterizedTest
    @EnumSource(SoftNicContext.ProgressMode.class)
    void aResponderSideExceptionIsFatalForThatDeviceOnly(final SoftNicContext.ProgressMode mode) {
        final boolean[] armed = {false};
        final int[] lidB = {-1};
        final LinkHook bomb = (src, dst, buf, off, len) -> {
            if (armed[0] && src == lidB[0]) {
                throw new IllegalStateException("injected responder failure");
            }
            return LinkHook.DELIVER;
        };
        try (Fixture f = new Fixture(new SoftNicContext().progressMode(mode).linkHook(bomb)
            .retransmitFactor(0.05).retransmitBackoff(0), 1 << 16)) {
            lidB[0] = f.b.dev.lid();
            f.a.qp.postSend(write(f, 1));
            assertEquals(WcStatus.SUCCESS, awaitCompletion(f, mode).status);
            armed[0] = true;
            f.a.qp.postSend(write(f, 2));
            AsyncEvent fatal = null;
            VerbsException reported = null;
            WorkCompletion requester = null;
            final WorkCompletion[] wc = {new WorkCompletion()};
            final long deadline = System.nanoTime() + WAIT_NS;
            while ((reported == null || requester == null) && System.nanoTime() < deadline) {
                step(f, mode);
                final AsyncEvent e = f.b.ctx.pollAsyncEvent();
                if (e != null && e.type() == AsyncEventType.DEVICE_FATAL) {
                    fatal = e;
                }
                if (reported == null) {
                    try {
                        f.b.rcq.poll(wc);
                    } catch (final VerbsException v) {
                        reported = v;
                    }
                }
                if (requester == null && f.a.scq.poll(wc) == 1) {
                    requester = wc[0];
                }
                Thread.onSpinWait();
            }
            for (int i = 0; i < 100 && fatal == null; i++) {
                final AsyncEvent e = f.b.ctx.pollAsyncEvent();
                fatal = e != null && e.type() == AsyncEventType.DEVICE_FATAL ? e : null;
            }
            assertNotNull(fatal, mode + ": a DEVICE_FATAL event on the responder's device");
            assertTrue(fatal.toString().contains("injected responder failure"), fatal::toString);
            assertNotNull(reported, mode + ": a poll of the failed device's CQ reports it");
            assertEquals(Errno.EIO, reported.errno());
            assertTrue(reported.getMessage().contains("DEVICE_FATAL"), reported::getMessage);
            assertNotNull(requester, mode + ": the requester's WR completes");
            assertEquals(WcStatus.RETRY_EXC_ERR, requester.status, requester::toString);
            assertEquals(null, f.a.ctx.pollAsyncEvent() instanceof AsyncEvent e
                && e.type() == AsyncEventType.DEVICE_FATAL ? e : null, "the requester's device is not fatal");
        }
    }

    private SendWorkRequest write(final Fixture f, final long wrId) {
        return new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(wrId)
            .sge(f.a.mr, 0, 64).remote(f.b.mr.address(), f.b.mr.rkey());
    }

    /** Deterministic mode moves nothing by itself: the test steps the NICs there; the other modes move on poll. */
    private static void step(final Fixture f, final SoftNicContext.ProgressMode mode) {
        if (mode == SoftNicContext.ProgressMode.DETERMINISTIC) {
            f.driver.progress();
        }
    }

    private static WorkCompletion awaitCompletion(final Fixture f, final SoftNicContext.ProgressMode mode) {
        final WorkCompletion[] wc = {new WorkCompletion()};
        final long deadline = System.nanoTime() + WAIT_NS;
        while (System.nanoTime() < deadline) {
            step(f, mode);
            if (f.a.scq.poll(wc) == 1) {
                return wc[0];
            }
            if (mode == SoftNicContext.ProgressMode.OWN_DEVICE) {
                f.b.scq.poll(new WorkCompletion[] {new WorkCompletion()}); // b's NIC moves when b polls
            }
        }
        throw new AssertionError(mode + ": no completion within 20 s");
    }
}
