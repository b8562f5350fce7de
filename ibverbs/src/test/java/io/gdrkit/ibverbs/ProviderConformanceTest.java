/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * RC conformance through the verbs API only, run against every provider ServiceLoader finds: the software NIC
 * (always: a driver is launched for it); the native provider where libibverbs lists a device (rxe, siw or
 * hardware; two QPs on its port 1 connected to each other, with a GRH on a RoCE port). Where no native device
 * exists the native run is skipped with the evidence of where the provider looked. The cases: every RC opcode
 * byte-exact (WRITE, WRITE_WITH_IMM, READ, SEND, SEND_WITH_IMM, multi-SGE SEND, both atomics) and the error paths
 * the IB spec fixes (bad rkey, bad lkey, a write to an MR without REMOTE_WRITE, a receive too short, a read past
 * the MR, and the flush of what follows an error).
 */
class ProviderConformanceTest {
    private static final int SIZE = 65536;
    private static final long TIMEOUT_NS = 10_000_000_000L;

    /** Two connected RC QPs, each with a registered buffer, on one provider. */
    private static final class Pair implements AutoCloseable {
        final Arena arena = Arena.ofShared();
        final SoftNicDriver driver;
        final VerbsContext ca;
        final VerbsContext cb;
        final ProtectionDomain pa;
        final ProtectionDomain pb;
        final CompletionQueue qa;
        final CompletionQueue qb;
        final QueuePair a;
        final QueuePair b;
        final MemorySegment ba;
        final MemorySegment bb;
        final MemoryRegion ma;
        final MemoryRegion mb;

        Pair(final String provider) {
            this(provider, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
        }

        Pair(final String provider, final int accessB) {
            final Device da;
            final Device db;
            if (provider.equals("softnic")) {
                driver = SoftNicDriver.launch();
                da = driver.addDevice("conf0");
                db = driver.addDevice("conf1");
            } else {
                driver = null;
                final NativeProvider.Probe p = NativeProvider.probe();
                Assumptions.assumeTrue(provider.equals("ibverbs"), "unknown provider " + provider);
                Assumptions.assumeTrue(!p.devices().isEmpty(), "no native RDMA device: " + p.evidence());
                da = p.devices().get(0);
                db = da;
            }
            ca = da.open();
            cb = db == da && driver == null ? ca : db.open();
            pa = ca.allocPd();
            pb = cb == ca ? pa : cb.allocPd();
            qa = ca.createCq(256);
            qb = cb.createCq(256);
            a = pa.createQp(new QpInitAttr().cqs(qa, qa));
            b = pb.createQp(new QpInitAttr().cqs(qb, qb));
            ba = arena.allocate(SIZE, 4096);
            bb = arena.allocate(SIZE, 4096);
            final int access = AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE;
            ma = pa.registerMr(ba, access);
            mb = pb.registerMr(bb, accessB);
            final io.gdrkit.verbs.PortAttr portA = ca.queryPort(1);
            final int lidA = portA.lid();
            final int lidB = cb.queryPort(1).lid();
            if ("Ethernet".equals(portA.linkLayer())) {
                QpBringUp.connectGlobal(a, lidA, ca.queryGid(1, 0), 100, b, lidB, cb.queryGid(1, 0), 200, 0,
                    QpBringUp.rcDefaults());
            } else {
                QpBringUp.toRts(a, b.qpNum(), lidB, 100, 200, QpBringUp.rcDefaults());
                QpBringUp.toRts(b, a.qpNum(), lidA, 200, 100, QpBringUp.rcDefaults());
            }
        }

        @Override
        public void close() {
            a.close();
            b.close();
            ma.deregister();
            mb.deregister();
            qa.close();
            qb.close();
            if (pb != pa) {
                pb.close();
            }
            pa.close();
            if (cb != ca) {
                cb.close();
            }
            ca.close();
            if (driver != null) {
                driver.close();
            }
            arena.close();
        }
    }

    /** Every provider on the class path, by name (the software NIC and the native provider here). */
    static java.util.stream.Stream<String> providers() {
        final java.util.List<String> names = java.util.ServiceLoader.load(io.gdrkit.verbs.VerbsProvider.class).stream()
            .map(p -> p.get().name()).toList();
        assertTrue(names.contains("softnic") && names.contains("ibverbs"), "both providers are found: " + names);
        return names.stream();
    }

    private static WorkCompletion await(final CompletionQueue cq, final CompletionQueue other, final String what) {
        final WorkCompletion[] wc = {new WorkCompletion()};
        final long deadline = System.nanoTime() + TIMEOUT_NS;
        while (cq.poll(wc) == 0) {
            other.poll(new WorkCompletion[0]); // keeps caller-driven NICs moving
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("no completion within 10 s waiting for " + what);
            }
            Thread.onSpinWait();
        }
        return wc[0];
    }

    private static void fill(final MemorySegment s, final long seed) {
        final byte[] b = new byte[(int) s.byteSize()];
        new Random(seed).nextBytes(b);
        s.copyFrom(MemorySegment.ofArray(b));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("providers")
    void writeReadSendAndAtomicsAreByteExact(final String provider) {
        try (Pair p = new Pair(provider)) {
            fill(p.ba, 11);
            p.a.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(p.mb.address(), p.mb.rkey()).sge(p.ma, 0, SIZE));
            final WorkCompletion w = await(p.qa, p.qb, "RDMA_WRITE");
            assertEquals(WcStatus.SUCCESS, w.status, w.toString());
            assertEquals(WcOpcode.RDMA_WRITE, w.opcode);
            assertArrayEquals(p.ba.toArray(ValueLayout.JAVA_BYTE), p.bb.toArray(ValueLayout.JAVA_BYTE));

            fill(p.bb, 12);
            p.a.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .remote(p.mb.address() + 4096, p.mb.rkey()).sge(p.ma, 0, 8192));
            assertEquals(WcStatus.SUCCESS, await(p.qa, p.qb, "RDMA_READ").status);
            assertArrayEquals(p.bb.asSlice(4096, 8192).toArray(ValueLayout.JAVA_BYTE),
                p.ba.asSlice(0, 8192).toArray(ValueLayout.JAVA_BYTE));

            fill(p.ba, 13);
            p.b.postRecv(new RecvWorkRequest().wrId(30).sge(p.mb, 1000, 5000));
            p.a.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.SEND_WITH_IMM).imm(0x0a0b0c0d)
                .flags(SendFlags.SIGNALED).sge(p.ma, 100, 4321));
            assertEquals(WcStatus.SUCCESS, await(p.qa, p.qb, "SEND_WITH_IMM").status);
            final WorkCompletion r = await(p.qb, p.qa, "the RECV");
            assertEquals(WcStatus.SUCCESS, r.status);
            assertEquals(30, r.wrId);
            assertEquals(4321, r.byteLen);
            assertTrue(r.hasImm());
            assertEquals(0x0a0b0c0d, r.immData);
            assertArrayEquals(p.ba.asSlice(100, 4321).toArray(ValueLayout.JAVA_BYTE),
                p.bb.asSlice(1000, 4321).toArray(ValueLayout.JAVA_BYTE));

            p.bb.set(ValueLayout.JAVA_LONG, 64, 40L);
            p.a.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                .flags(SendFlags.SIGNALED).remote(p.mb.address() + 64, p.mb.rkey()).atomic(2, 0).sge(p.ma, 0, 8));
            assertEquals(WcStatus.SUCCESS, await(p.qa, p.qb, "FETCH_AND_ADD").status);
            assertEquals(40L, p.ba.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(42L, p.bb.get(ValueLayout.JAVA_LONG, 64));
            p.a.postSend(new SendWorkRequest().wrId(5).opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                .flags(SendFlags.SIGNALED).remote(p.mb.address() + 64, p.mb.rkey()).atomic(42, 7).sge(p.ma, 8, 8));
            assertEquals(WcStatus.SUCCESS, await(p.qa, p.qb, "CMP_AND_SWP").status);
            assertEquals(42L, p.ba.get(ValueLayout.JAVA_LONG, 8));
            assertEquals(7L, p.bb.get(ValueLayout.JAVA_LONG, 64));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("providers")
    void aBadRkeyIsARemoteAccessErrorAndTheQpGoesToError(final String provider) {
        try (Pair p = new Pair(provider)) {
            p.a.postSend(new SendWorkRequest().wrId(9).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(p.mb.address(), p.mb.rkey() ^ 0x5a5a00).sge(p.ma, 0, 64));
            final WorkCompletion w = await(p.qa, p.qb, "the failed RDMA_WRITE");
            assertEquals(WcStatus.REM_ACCESS_ERR, w.status, w.toString());
            assertEquals(9, w.wrId);
            assertEquals(QpState.ERR, p.a.queryQp().qpState);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("providers")
    void aBadLkeyIsALocalProtectionError(final String provider) {
        try (Pair p = new Pair(provider)) {
            p.a.postSend(new SendWorkRequest().wrId(8).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(p.mb.address(), p.mb.rkey()).sge(p.ma.address(), 64, p.ma.lkey() ^ 0x70000));
            final WorkCompletion w = await(p.qa, p.qb, "the failed RDMA_WRITE");
            assertEquals(WcStatus.LOC_PROT_ERR, w.status, w.toString());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("providers")
    void anArmedCqOnAChannelRaisesOneEventForItsCompletion(final String provider) {
        try (Pair p = new Pair(provider)) {
            final io.gdrkit.verbs.CompletionChannel ch = p.ca.createCompChannel();
            final CompletionQueue ev = p.ca.createCq(16, ch, 0);
            final QueuePair a2 = p.pa.createQp(new QpInitAttr().cqs(ev, ev));
            final QueuePair b2 = p.pb.createQp(new QpInitAttr().cqs(p.qb, p.qb));
            final int lidA = p.ca.queryPort(1).lid();
            final int lidB = p.cb.queryPort(1).lid();
            if ("Ethernet".equals(p.ca.queryPort(1).linkLayer())) {
                QpBringUp.connectGlobal(a2, lidA, p.ca.queryGid(1, 0), 300, b2, lidB, p.cb.queryGid(1, 0), 400, 0,
                    QpBringUp.rcDefaults());
            } else {
                QpBringUp.toRts(a2, b2.qpNum(), lidB, 300, 400, QpBringUp.rcDefaults());
                QpBringUp.toRts(b2, a2.qpNum(), lidA, 400, 300, QpBringUp.rcDefaults());
            }
            fill(p.ba, 31);
            ev.reqNotifyCq(false);
            a2.postSend(new SendWorkRequest().wrId(90).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(p.mb.address() + 100, p.mb.rkey()).sge(p.ma, 0, 4000));
            assertEquals(ev, ch.getCqEvent(TIMEOUT_NS), "the armed CQ's event");
            final WorkCompletion wc = await(ev, p.qb, "the WRITE's completion after its event");
            assertEquals(WcStatus.SUCCESS, wc.status);
            assertEquals(90, wc.wrId);
            assertArrayEquals(p.ba.asSlice(0, 4000).toArray(ValueLayout.JAVA_BYTE),
                p.bb.asSlice(100, 4000).toArray(ValueLayout.JAVA_BYTE));
            ev.ackCqEvents(1);
            a2.close();
            b2.close();
            ev.close();
            ch.close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("providers")
    void writeWithImmAndMultiSgeSendAreByteExact(final String provider) {
        try (Pair p = new Pair(provider)) {
            fill(p.ba, 21);
            p.b.postRecv(new RecvWorkRequest().wrId(70).sge(p.mb, 0, 16));
            p.a.postSend(new SendWorkRequest().wrId(7).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).imm(0x11223344)
                .flags(SendFlags.SIGNALED).remote(p.mb.address() + 8192, p.mb.rkey()).sge(p.ma, 512, 3000));
            assertEquals(WcStatus.SUCCESS, await(p.qa, p.qb, "RDMA_WRITE_WITH_IMM").status);
            final WorkCompletion r = await(p.qb, p.qa, "the RECV consumed by WRITE_WITH_IMM");
            assertEquals(WcStatus.SUCCESS, r.status);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode);
            assertEquals(70, r.wrId);
            assertEquals(0x11223344, r.immData);
            assertEquals(3000, r.byteLen);
            assertArrayEquals(p.ba.asSlice(512, 3000).toArray(ValueLayout.JAVA_BYTE),
                p.bb.asSlice(8192, 3000).toArray(ValueLayout.JAVA_BYTE));

            // a SEND gathered from three SGEs lands contiguously
            p.b.postRecv(new RecvWorkRequest().wrId(71).sge(p.mb, 20000, 9000));
            final SendWorkRequest s = new SendWorkRequest(3).wrId(71).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .numSge(3);
            s.sge(0).set(p.ma, 0, 100);
            s.sge(1).set(p.ma, 5000, 2000);
            s.sge(2).set(p.ma, 40000, 1);
            p.a.postSend(s);
            assertEquals(WcStatus.SUCCESS, await(p.qa, p.qb, "the 3-SGE SEND").status);
            final WorkCompletion rs = await(p.qb, p.qa, "the RECV of the 3-SGE SEND");
            assertEquals(WcOpcode.RECV, rs.opcode);
            assertEquals(2101, rs.byteLen);
            assertArrayEquals(p.ba.asSlice(0, 100).toArray(ValueLayout.JAVA_BYTE),
                p.bb.asSlice(20000, 100).toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(p.ba.asSlice(5000, 2000).toArray(ValueLayout.JAVA_BYTE),
                p.bb.asSlice(20100, 2000).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(p.ba.get(ValueLayout.JAVA_BYTE, 40000), p.bb.get(ValueLayout.JAVA_BYTE, 22100));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("providers")
    void aWriteToAnMrWithoutRemoteWriteIsARemoteAccessError(final String provider) {
        try (Pair p = new Pair(provider, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_READ)) {
            fill(p.bb, 31);
            final byte[] before = p.bb.toArray(ValueLayout.JAVA_BYTE);
            p.a.postSend(new SendWorkRequest().wrId(10).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(p.mb.address(), p.mb.rkey()).sge(p.ma, 0, 256));
            final WorkCompletion w = await(p.qa, p.qb, "the refused RDMA_WRITE");
            assertEquals(WcStatus.REM_ACCESS_ERR, w.status, w.toString());
            assertArrayEquals(before, p.bb.toArray(ValueLayout.JAVA_BYTE), "nothing was written");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("providers")
    void aReadPastTheMrIsARemoteAccessError(final String provider) {
        try (Pair p = new Pair(provider)) {
            p.a.postSend(new SendWorkRequest().wrId(11).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .remote(p.mb.address() + SIZE - 100, p.mb.rkey()).sge(p.ma, 0, 200));
            final WorkCompletion w = await(p.qa, p.qb, "the RDMA_READ past the MR");
            assertEquals(WcStatus.REM_ACCESS_ERR, w.status, w.toString());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("providers")
    void aReceiveTooShortFailsBothSidesAndWhatFollowsIsFlushed(final String provider) {
        try (Pair p = new Pair(provider)) {
            p.b.postRecv(new RecvWorkRequest().wrId(80).sge(p.mb, 0, 64));
            p.a.postSend(new SendWorkRequest().wrId(12).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(p.ma, 0, 1000));
            final WorkCompletion req = await(p.qa, p.qb, "the SEND into a short receive");
            assertEquals(WcStatus.REM_INV_REQ_ERR, req.status, req.toString());
            final WorkCompletion resp = await(p.qb, p.qa, "the short receive");
            assertEquals(WcStatus.LOC_LEN_ERR, resp.status, resp.toString());
            assertEquals(80, resp.wrId);
            assertEquals(QpState.ERR, p.a.queryQp().qpState);
            // a QP in ERR completes what is posted to it with WR_FLUSH_ERR
            p.a.postSend(new SendWorkRequest().wrId(13).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(p.mb.address(), p.mb.rkey()).sge(p.ma, 0, 8));
            final WorkCompletion flushed = await(p.qa, p.qb, "the flushed WRITE");
            assertEquals(WcStatus.WR_FLUSH_ERR, flushed.status, flushed.toString());
            assertEquals(13, flushed.wrId);
        }
    }
}
