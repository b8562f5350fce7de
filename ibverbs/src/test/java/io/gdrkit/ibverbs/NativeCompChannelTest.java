/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionChannel;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Completion channels on the native provider, against the stub libibverbs (whose channel fd is a pipe and whose
 * armed CQs write an event on their next completion): create, arm through {@code ops.req_notify_cq}, wait with a
 * timeout, the event's CQ mapped back to the verbs object, acknowledged through {@code ibv_ack_cq_events}, and every
 * misuse named.
 */
class NativeCompChannelTest {
    private static Device dev;
    private static SymbolLookup syms;

    @BeforeAll
    static void load() throws Exception {
        final Path stub = StubLibrary.build("1.14.0.0");
        Assumptions.assumeTrue(stub != null, "no gcc or rdma-core headers to build the stub");
        final IbvLibrary.Loaded l = IbvLibrary.doLoad(stub.toString(), false);
        assertNotNull(l.library(), l.unavailable());
        dev = NativeProvider.probe(l).devices().getFirst();
        syms = SymbolLookup.libraryLookup(stub, Arena.global());
    }

    private static int acks(final CompletionQueue cq) throws Throwable {
        final MethodHandle h = Linker.nativeLinker().downcallHandle(syms.find("stub_cq_acks").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS));
        return (int) h.invokeExact(((NativeCq) cq).cq);
    }

    @Test
    void anArmedCqRaisesOneEventPerArmingAndItIsAcknowledged() throws Throwable {
        try (VerbsContext ctx = dev.open(); Arena a = Arena.ofConfined()) {
            final CompletionChannel ch = ctx.createCompChannel();
            final CompletionQueue cq = ctx.createCq(16, ch, 0);
            final CompletionQueue other = ctx.createCq(16, ch, 0);
            assertSame(ch, cq.channel());
            final ProtectionDomain pd = ctx.allocPd();
            final MemorySegment buf = a.allocate(64);
            final MemoryRegion mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE);
            final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            final SendWorkRequest wr = new SendWorkRequest(1).wrId(7).opcode(WrOpcode.RDMA_WRITE).remote(0x1000, 3)
                .sge(mr, 0, 64);
            final WorkCompletion[] wc = {new WorkCompletion()};

            // not armed: a completion raises no event
            qp.postSend(wr);
            assertEquals(1, cq.poll(wc, 1));
            assertNull(ch.getCqEvent(0));
            assertNull(ch.getCqEvent(20_000_000L), "a 20 ms wait with nothing pending comes back empty");

            // armed: the next completion raises one event, for this CQ, and only one until re-armed
            cq.reqNotifyCq(false);
            qp.postSend(wr.wrId(8));
            qp.postSend(wr.wrId(9));
            assertSame(cq, ch.getCqEvent(1_000_000_000L));
            assertNull(ch.getCqEvent(0), "one event per arming");
            assertEquals(2, cq.poll(new WorkCompletion[] {new WorkCompletion(), new WorkCompletion()}, 2));
            cq.reqNotifyCq(false);
            qp.postSend(wr.wrId(10));
            assertSame(cq, ch.getCqEvent(1_000_000_000L));
            assertEquals(1, cq.poll(wc, 1));
            assertEquals(10, wc[0].wrId);

            // acknowledgement: no more than were delivered, and ibv_ack_cq_events gets the count
            final VerbsException over = assertThrows(VerbsException.class, () -> cq.ackCqEvents(3));
            assertEquals(Errno.EINVAL, over.errno());
            assertTrue(over.getMessage().contains("3 acknowledged but only 2"), over.getMessage());
            final VerbsException neg = assertThrows(VerbsException.class, () -> cq.ackCqEvents(-1));
            assertEquals(Errno.EINVAL, neg.errno());
            // destroying a CQ with unacknowledged events is refused (libibverbs would wait for ever)
            final VerbsException busyCq = assertThrows(VerbsException.class, cq::close);
            assertEquals(Errno.EBUSY, busyCq.errno());
            assertTrue(busyCq.getMessage().contains("2 completion event(s) not acknowledged"), busyCq.getMessage());
            final int before = acks(cq);
            cq.ackCqEvents(2);
            assertEquals(before + 2, acks(cq));

            // a channel still used by a CQ is not destroyed
            qp.close();
            cq.close();
            final VerbsException busy = assertThrows(VerbsException.class, ch::close);
            assertEquals(Errno.EBUSY, busy.errno());
            assertTrue(busy.getMessage().contains("1 CQ(s) still use the channel"), busy.getMessage());
            other.close();
            ch.close();
            final VerbsException gone = assertThrows(VerbsException.class, () -> ch.getCqEvent(0));
            assertEquals(Errno.EBADF, gone.errno());
            mr.close();
            pd.close();
        }
    }

    @Test
    void misuseIsNamed() {
        try (VerbsContext ctx = dev.open(); VerbsContext other = dev.open()) {
            final CompletionQueue plain = ctx.createCq(4);
            final VerbsException noChannel = assertThrows(VerbsException.class, () -> plain.reqNotifyCq(false));
            assertEquals(Errno.EINVAL, noChannel.errno());
            assertTrue(noChannel.getMessage().contains("no completion channel"), noChannel.getMessage());
            final CompletionChannel foreign = other.createCompChannel();
            final VerbsException wrongCtx = assertThrows(VerbsException.class, () -> ctx.createCq(4, foreign, 0));
            assertEquals(Errno.EINVAL, wrongCtx.errno());
            assertTrue(wrongCtx.getMessage().contains("not one of this context's"), wrongCtx.getMessage());
            foreign.close();
            plain.close();
            final VerbsException destroyed = assertThrows(VerbsException.class, () -> plain.reqNotifyCq(false));
            assertEquals(Errno.EINVAL, destroyed.errno());
        }
    }

    @Test
    void aWaiterIsWokenByTheEventAnotherThreadCauses() throws Exception {
        try (VerbsContext ctx = dev.open(); Arena a = Arena.ofShared()) {
            final CompletionChannel ch = ctx.createCompChannel();
            final CompletionQueue cq = ctx.createCq(16, ch, 0);
            final ProtectionDomain pd = ctx.allocPd();
            final MemoryRegion mr = pd.registerMr(a.allocate(64), AccessFlags.LOCAL_WRITE);
            final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            cq.reqNotifyCq(false);
            final CompletionQueue[] got = new CompletionQueue[1];
            final Thread waiter = Thread.ofPlatform().start(() -> got[0] = ch.getCqEvent(10_000_000_000L));
            qp.postSend(new SendWorkRequest(1).wrId(1).opcode(WrOpcode.RDMA_WRITE).remote(0x1000, 3).sge(mr, 0, 8));
            waiter.join(15_000);
            assertSame(cq, got[0], "the waiter got the CQ's event");
            cq.ackCqEvents(1);
            assertEquals(1, cq.poll(new WorkCompletion[] {new WorkCompletion()}, 1));
            qp.close();
            cq.close();
            ch.close();
            mr.close();
            pd.close();
        }
    }
}
