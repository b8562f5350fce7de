/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.GlobalRoute;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The RoCE address vector (is_global + GRH) and the asynchronous events of the native provider, against the stub
 * libibverbs (a test double, not a NIC): the ibv_qp_attr the binding hands to ibv_modify_qp is read back by C code
 * compiled against the real headers, field by field; events the stub emits come back through a poll(2) on a
 * non-blocking async_fd, mapped to the verbs API's types, and are acknowledged.
 */
class NativeGrhAndAsyncTest {
    private static Path stub;
    private static Device dev;
    private static SymbolLookup syms;

    @BeforeAll
    static void load() throws Exception {
        stub = StubLibrary.build("1.14.0.0");
        Assumptions.assumeTrue(stub != null, "no gcc or rdma-core headers to build the stub");
        final IbvLibrary.Loaded l = IbvLibrary.doLoad(stub.toString(), false);
        assertNotNull(l.library(), l.unavailable());
        dev = NativeProvider.probe(l).devices().getFirst();
        syms = SymbolLookup.libraryLookup(stub, Arena.global());
    }

    private static MethodHandle fn(final String name, final FunctionDescriptor fd) {
        return Linker.nativeLinker().downcallHandle(syms.find(name).orElseThrow(), fd);
    }

    @Test
    void theGrhReachesIbvModifyQpFieldByField() throws Throwable {
        final MethodHandle lastAv = fn("stub_last_av", FunctionDescriptor.ofVoid(ADDRESS));
        final byte[] dgid = new byte[16];
        for (int i = 0; i < 16; i++) {
            dgid[i] = (byte) (0xa0 + i);
        }
        try (VerbsContext ctx = dev.open(); Arena a = Arena.ofConfined()) {
            final ProtectionDomain pd = ctx.allocPd();
            final CompletionQueue cq = ctx.createCq(16);
            final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            qp.modify(new QpAttr().state(QpState.INIT), QpAttrMask.STATE);
            final QpAttr rtr = new QpAttr().state(QpState.RTR).destQpNum(0x99).rqPsn(7).sl(5)
                .grh(new GlobalRoute().dgid(dgid).flowLabel(0xABCDE).sgidIndex(3).hopLimit(64).trafficClass(0x28));
            rtr.dlid = 0;          // RoCE: no LID
            rtr.portNum = 1;
            final int mask = QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN;
            qp.modify(rtr, mask);
            final MemorySegment out = a.allocate(32);
            lastAv.invokeExact(out);
            final ByteBuffer b = ByteBuffer.wrap(out.toArray(JAVA_BYTE)).order(ByteOrder.LITTLE_ENDIAN);
            final byte[] seen = new byte[16];
            b.get(seen);
            assertArrayEquals(dgid, seen, "grh.dgid");
            assertEquals(0xABCDE, b.getInt(), "grh.flow_label");
            assertEquals(3, b.get(), "grh.sgid_index");
            assertEquals(64, b.get(), "grh.hop_limit");
            assertEquals(0x28, b.get(), "grh.traffic_class");
            assertEquals(1, b.get(), "is_global");
            assertEquals(5, b.get(), "sl");
            assertEquals(0, b.getShort(), "dlid");
            assertEquals(1, b.get(), "port_num");
            assertEquals(mask, b.getInt(), "attr_mask");

            final QpAttr q = qp.queryQp(); // the stub returns the attributes it was given
            assertTrue(q.isGlobal);
            assertArrayEquals(dgid, q.grh.dgid);
            assertEquals(0xABCDE, q.grh.flowLabel);
            assertEquals(3, q.grh.sgidIndex);
            assertEquals(64, q.grh.hopLimit);
            assertEquals(0x28, q.grh.trafficClass);
            assertEquals(5, q.sl);

            // without is_global nothing of the GRH is written: the struct is zeroed before each modify
            qp.modify(new QpAttr().state(QpState.RTR).destQpNum(0x99).dlid(0x11), mask);
            lastAv.invokeExact(out);
            final byte[] none = out.toArray(JAVA_BYTE);
            for (int i = 0; i < 24; i++) {
                assertEquals(0, none[i], "GRH byte " + i + " without is_global");
            }
            assertEquals(0x11, none[25]);
            qp.close();
            cq.close();
            pd.close();
        }
    }

    @Test
    void asyncEventsArePolledWithATimeoutMappedAndAcknowledged() throws Throwable {
        final MethodHandle emit = fn("stub_emit_async", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS,
            ADDRESS, JAVA_INT));
        final MethodHandle acks = fn("stub_async_acks", FunctionDescriptor.of(JAVA_INT));
        try (VerbsContext ctx = dev.open()) {
            final NativeContext nc = (NativeContext) ctx;
            final int acked = (int) acks.invokeExact();
            // nothing pending: a zero wait and a 20 ms wait both come back empty (no thread blocks)
            assertNull(ctx.pollAsyncEvent());
            assertNull(ctx.getAsyncEvent(20_000_000L));
            assertTrue((Posix.statusFlags(nc.asyncFd()) & Posix.O_NONBLOCK) != 0, "async_fd is O_NONBLOCK");

            final ProtectionDomain pd = ctx.allocPd();
            final CompletionQueue cq = ctx.createCq(16);
            final QueuePair qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
            final MemorySegment qpPtr = ((NativeQp) qp).qpPointer();
            assertEquals(0, (int) emit.invokeExact(nc.ctx, AsyncEventType.QP_FATAL, qpPtr, MemorySegment.NULL, 0));
            assertEquals(0, (int) emit.invokeExact(nc.ctx, AsyncEventType.PORT_ERR, MemorySegment.NULL,
                MemorySegment.NULL, 1));
            assertEquals(0, (int) emit.invokeExact(nc.ctx, AsyncEventType.CQ_ERR, MemorySegment.NULL,
                ((NativeCq) cq).cq, 0));
            final AsyncEvent e1 = ctx.getAsyncEvent(1_000_000_000L);
            assertEquals(AsyncEventType.QP_FATAL, e1.type());
            assertEquals(qp.qpNum(), e1.element());
            assertTrue(e1.detail().contains("QP_FATAL (QP " + qp.qpNum() + "), acknowledged"), e1.detail());
            final AsyncEvent e2 = ctx.pollAsyncEvent();
            assertEquals(AsyncEventType.PORT_ERR, e2.type());
            assertEquals(1, e2.element());
            final AsyncEvent e3 = ctx.pollAsyncEvent();
            assertEquals(AsyncEventType.CQ_ERR, e3.type());
            assertEquals(((NativeCq) cq).cq.get(JAVA_INT, IbvLayouts.offset(IbvLayouts.CQ, "handle")),
                e3.element());
            assertNull(ctx.pollAsyncEvent());
            assertEquals(acked + 3, (int) acks.invokeExact(), "every event acknowledged");
            qp.close();
            cq.close();
            pd.close();
        }
    }

    @Test
    void aPollDoesNotQueueBehindAnotherThreadsLongWait() throws Throwable {
        final MethodHandle emit = fn("stub_emit_async", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS,
            ADDRESS, JAVA_INT));
        try (VerbsContext ctx = dev.open()) {
            final NativeContext nc = (NativeContext) ctx;
            final AsyncEvent[] got = new AsyncEvent[1];
            final Thread waiter = Thread.ofPlatform().daemon(true).start(() -> got[0] = ctx.getAsyncEvent(
                8_000_000_000L));
            // until the waiter is inside poll(2) on async_fd
            final long until = System.nanoTime() + 10_000_000_000L;
            while (java.util.Arrays.stream(waiter.getStackTrace()).noneMatch(f -> f.getMethodName().equals(
                "readable")) && System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            assertTrue(waiter.isAlive(), "the waiter is still waiting for an event");
            // a zero wait comes back at once, empty, while the other thread still waits (it used to queue behind
            // the waiter's whole 8 s on the context's lock)
            assertNull(ctx.pollAsyncEvent());
            assertTrue(waiter.isAlive(), "the poll returned while the waiter was still waiting");
            assertEquals(0, (int) emit.invokeExact(nc.ctx, AsyncEventType.PORT_ACTIVE, MemorySegment.NULL,
                MemorySegment.NULL, 1));
            waiter.join(10_000);
            assertEquals(AsyncEventType.PORT_ACTIVE, got[0].type(), "the waiter got the event");
            assertEquals(1, got[0].element());
        }
    }
}
