package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.gdrkit.softnic.fabric.LinkHook;
import io.gdrkit.softnic.fabric.RemoteMemoryReader;
import io.gdrkit.softnic.fabric.ShmFabric;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The shared-memory fabric's single copy (cma): two NICs on two {@link ShmFabric}s of one directory (in this JVM, so
 * one pid: process_vm_readv reads this process, which the kernel allows like any same-user process), WRITE and SEND
 * byte-exact on the cma path and on each fallback, the probe's failure named, and hostile references (rewritten in
 * flight by a link hook standing in for a hostile sender) refused by name. {@link ShmFabricTest} runs it across two
 * real processes.
 */
class ShmCmaTest {
    private static final int MIB = 1 << 20;

    /** Two drivers, each with its own fabric on one private directory: LID 1 (a) sends to LID 2 (b). */
    private static final class Pair implements AutoCloseable {
        final Path dir = ShmFabric.createPrivateDirectory(ShmFabric.defaultBase(), "gdrkit-test-cma-");
        final ShmFabric fa;
        final ShmFabric fb;
        final SoftNicDriver da;
        final SoftNicDriver db;
        final Fixture.Side a;
        final Fixture.Side b;
        final Arena arena = Arena.ofShared();

        Pair(final SoftNicContext ca, final SoftNicContext cb, final LinkHook hookA, final RemoteMemoryReader readerB,
             final long bytes) {
            fa = new ShmFabric(dir, 4 << 20, 2, hookA, false);
            fb = new ShmFabric(dir, 4 << 20, 2, null, false);
            if (readerB != null) {
                fb.remoteReader(readerB);
            }
            da = SoftNicDriver.launch(ca, fa);
            db = SoftNicDriver.launch(cb, fb);
            a = new Fixture.Side(da.addDevice("cma-a", 1), 256);
            b = new Fixture.Side(db.addDevice("cma-b", 2), 256);
            for (final Fixture.Side s : new Fixture.Side[] {a, b}) {
                s.buf = arena.allocate(bytes, 4096);
                s.mr = s.pd.registerMr(s.buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                s.qp = s.pd.createQp(new QpInitAttr().cqs(s.scq, s.rcq));
            }
            QpBringUp.connect(a.qp, 1, 100, b.qp, 2, 200, QpBringUp.rcDefaults());
        }

        void step() {
            da.progress();
            db.progress();
        }

        void await(final BooleanSupplier cond, final String what) {
            final long deadline = System.nanoTime() + 30_000_000_000L;
            while (!cond.getAsBoolean()) {
                if (System.nanoTime() > deadline) {
                    fail("timed out after 30 s waiting for " + what);
                }
                step();
            }
        }

        WorkCompletion awaitOne(final CompletionQueue cq, final String what) {
            final WorkCompletion[] wc = {new WorkCompletion()};
            await(() -> cq.poll(wc) == 1, what);
            return wc[0];
        }

        /** WRITEs {@code size} bytes of a seeded pattern from a's buffer to b's, signaled; returns the completion. */
        WorkCompletion write(final int size, final long seed) {
            Fixture.fill(a.buf.asSlice(0, size), seed);
            a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(seed)
                .sge(a.mr, 0, size).remote(b.mr.address(), b.mr.rkey()));
            return awaitOne(a.scq, "the WRITE's completion");
        }

        ShmFabric.CopyMode modeAtoB() {
            return fa.copyMode(1, 2);
        }

        /** Runs the NICs until b probed a (a small WRITE through the ring goes first: the hello travels with it). */
        void awaitProbe() {
            assertEquals(WcStatus.SUCCESS, write(4096, 1).status);
            await(() -> !modeAtoB().reason().contains("not probed"), "LID 2's probe of LID 1");
        }

        @Override
        public void close() {
            db.close();
            da.close();
            arena.close();
        }
    }

    private static SoftNicContext ctx() {
        return new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER);
    }

    @Test
    void writeAndSendAreByteExactOnTheCmaPathWithOneReferencePerPacket() {
        try (Pair p = new Pair(ctx(), ctx(), null, null, 2 * MIB)) {
            p.awaitProbe();
            final ShmFabric.CopyMode before = p.modeAtoB();
            assertEquals("cma", before.mode(), before::reason);
            final WorkCompletion wc = p.write(MIB, 42);
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE pulled across the fabric");
            final ShmFabric.CopyMode after = p.modeAtoB();
            assertTrue(after.referencePackets() - before.referencePackets() >= MIB / 4096,
                () -> "every 4 KiB packet a reference: " + before + " -> " + after);
            // the receiver pulled the message ahead of its packets: a few system calls, not one per 4 KiB packet
            final long pulls = p.fb.copyMode(2, 1).pulls();
            assertTrue(pulls >= 1 && pulls <= 4, () -> "b's pulls: " + p.fb.copyMode(2, 1));

            // SEND into a receive WQE of two SGEs, at an offset: scattered after the pull
            final int size = 256 * 1024 + 4096 * 3;
            Fixture.fill(p.a.buf.asSlice(0, size), 7);
            p.b.buf.fill((byte) 0);
            final RecvWorkRequest rw = new RecvWorkRequest().wrId(9).numSge(2);
            rw.sge(0).set(p.b.mr, 100, 5000);
            rw.sge(1).set(p.b.mr, 8192, size);
            p.b.qp.postRecv(rw);
            p.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(8)
                .sge(p.a.mr, 0, size));
            final WorkCompletion sent = p.awaitOne(p.a.scq, "the SEND's completion");
            assertEquals(WcStatus.SUCCESS, sent.status, sent::toString);
            final WorkCompletion recv = p.awaitOne(p.b.rcq, "the receive");
            assertEquals(WcStatus.SUCCESS, recv.status, recv::toString);
            assertEquals(WcOpcode.RECV, recv.opcode);
            assertEquals(size, recv.byteLen);
            Fixture.assertBytes(p.a.buf.asSlice(0, 5000), p.b.buf.asSlice(100, 5000), "SEND, first SGE");
            Fixture.assertBytes(p.a.buf.asSlice(5000, size - 5000), p.b.buf.asSlice(8192, size - 5000),
                "SEND, second SGE");
            assertTrue(p.modeAtoB().referencePackets() > after.referencePackets(), "the SEND went as references");
        }
    }

    @Test
    void offAtTheReceiverFallsBackToTheRingByteExactAndSaysWhy() {
        try (Pair p = new Pair(ctx(), ctx().shmCma(false), null, null, 2 * MIB)) {
            p.awaitProbe();
            assertRing(p, "gdrkit.nic.shm.cma is off in the peer");
        }
    }

    @Test
    void offAtTheSenderFallsBackToTheRing() {
        try (Pair p = new Pair(ctx().shmCma(false), ctx(), null, null, 2 * MIB)) {
            assertEquals(WcStatus.SUCCESS, p.write(4096, 1).status);
            assertRing(p, "off in this process");
        }
    }

    @Test
    void aProbeThatCannotReadTheSenderFallsBackAndNamesTheErrno() {
        final RemoteMemoryReader denied = (pid, dst, off, remote, len) -> -RemoteMemoryReader.EPERM;
        try (Pair p = new Pair(ctx(), ctx(), null, denied, 2 * MIB)) {
            p.awaitProbe();
            assertRing(p, "EPERM");
        }
    }

    @Test
    void aProbeThatReadsAnotherWordFallsBack() {
        final RemoteMemoryReader liar = (pid, dst, off, remote, len) -> {
            dst.set(ValueLayout.JAVA_LONG, off, 0L);
            return len;
        };
        try (Pair p = new Pair(ctx(), ctx(), null, liar, 2 * MIB)) {
            p.awaitProbe();
            assertRing(p, "read another value");
        }
    }

    private static void assertRing(final Pair p, final String why) {
        final ShmFabric.CopyMode m = p.modeAtoB();
        assertEquals("ring", m.mode(), m::toString);
        assertTrue(m.reason().contains(why), () -> "reason names '" + why + "': " + m.reason());
        final WorkCompletion wc = p.write(MIB, 77);
        assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
        Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE through the ring");
        assertEquals(0, p.modeAtoB().referencePackets(), "no reference packet on the ring path");
    }

    /** Rewrites reference packets in flight after the probe: what a hostile sender could put on its link. */
    private static final class Hostile implements LinkHook {
        private final Packet pkt = new Packet();
        volatile java.util.function.Consumer<Packet> rewrite;

        @Override
        public int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer, final long offset,
                            final int length) {
            final java.util.function.Consumer<Packet> r = rewrite;
            if (r != null && pkt.wrap(buffer, offset, length).isReference()) {
                r.accept(pkt);
            }
            return DELIVER;
        }

        @Override
        public boolean passesReferences() {
            return true;
        }
    }

    private static AsyncEvent hostileWrite(final java.util.function.Consumer<Packet> rewrite, final int status) {
        final Hostile h = new Hostile();
        try (Pair p = new Pair(ctx(), ctx(), h, null, 2 * MIB)) {
            p.awaitProbe();
            assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
            h.rewrite = rewrite;
            final WorkCompletion wc = p.write(64 * 1024, 5);
            assertEquals(status, wc.status, wc::toString);
            final AsyncEvent[] e = {null};
            p.await(() -> (e[0] = p.b.ctx.pollAsyncEvent()) != null, "the responder's async event");
            return e[0];
        }
    }

    @Test
    void aReferenceOutsideTheSendersMemoryIsANamedEfaultNotACrash() {
        final AsyncEvent e = hostileWrite(pkt -> pkt.refEntry(0, 0x10, 0, pkt.refLength(0)), WcStatus.REM_OP_ERR);
        assertEquals(AsyncEventType.QP_REQ_ERR, e.type());
        assertTrue(e.detail().contains("EFAULT") && e.detail().contains("cross-process reference"), e::detail);
    }

    @Test
    void aReferenceNamingAnotherProcessIsRefusedByName() {
        final AsyncEvent e = hostileWrite(pkt -> pkt.refToken(1), WcStatus.REM_OP_ERR);
        assertTrue(e.detail().contains("names process 1, but LID 1 is process "
            + ProcessHandle.current().pid()), e::detail);
    }

    @Test
    void aReferencedWritePastTheDestinationMrIsARemoteAccessError() {
        final AsyncEvent e = hostileWrite(pkt -> {
            if (pkt.is(io.gdrkit.softnic.wire.BthOpcode.FIRST)) {
                pkt.reth(pkt.rethVa() + 2 * MIB - 4096, pkt.rethRkey(), pkt.rethDmaLength());
            }
        }, WcStatus.REM_ACCESS_ERR);
        assertEquals(AsyncEventType.QP_ACCESS_ERR, e.type());
        assertTrue(e.detail().contains("refused for WRITE"), e::detail);
    }

    @Test
    void aShortReadIsANamedErrorAfterTheProbe() {
        final boolean[] probed = {false};
        final RemoteMemoryReader real = RemoteMemoryReader.processVmReadv();
        final RemoteMemoryReader shortAfterProbe = (pid, dst, off, remote, len) -> {
            if (!probed[0]) {
                probed[0] = true;
                return real.read(pid, dst, off, remote, len);
            }
            return Math.min(len, 2048); // the kernel read only part of the range
        };
        try (Pair p = new Pair(ctx(), ctx(), null, shortAfterProbe, 2 * MIB)) {
            p.awaitProbe();
            assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
            final WorkCompletion wc = p.write(64 * 1024, 3);
            assertEquals(WcStatus.REM_OP_ERR, wc.status, wc::toString);
            final AsyncEvent[] e = {null};
            p.await(() -> (e[0] = p.b.ctx.pollAsyncEvent()) != null, "the responder's async event");
            assertTrue(e[0].detail().contains("short process_vm_readv: 2048 of 4096 bytes"), e[0]::detail);
        }
    }

    /** Drops every 37th reference packet: go-back-N resends re-read the source, which the open WR still owns. */
    @Test
    void retransmittedReferencesReReadTheSourceByteExact() {
        final LinkHook lossy = new LinkHook() {
            private int n;

            @Override
            public int onPacket(final int srcLid, final int dstLid, final MemorySegment buffer, final long offset,
                                final int length) {
                return (buffer.get(ValueLayout.JAVA_BYTE, offset + 12) & 0x80) != 0 && ++n % 37 == 0 ? DROP : DELIVER;
            }

            @Override
            public boolean passesReferences() {
                return true;
            }
        };
        try (Pair p = new Pair(ctx(), ctx(), lossy, null, 2 * MIB)) {
            p.awaitProbe();
            final WorkCompletion wc = p.write(MIB, 11);
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE with lost references");
            assertTrue(p.fa.copyMode(1, 2).packetsSent() > 0 && p.da.fabric() == p.fa);
            assertTrue(p.modeAtoB().referencePackets() > MIB / 4096, () -> "resent references: " + p.modeAtoB());
        }
    }

    @Test
    void processVmReadvReadsThisProcessAndNamesItsErrors() {
        final RemoteMemoryReader r = RemoteMemoryReader.processVmReadv();
        final long me = ProcessHandle.current().pid();
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment src = arena.allocate(8192);
            Fixture.fill(src, 99);
            final MemorySegment dst = arena.allocate(8192);
            assertEquals(8192, r.read(me, dst, 0, src.address(), 8192));
            Fixture.assertBytes(src, dst, "process_vm_readv of this process");
            assertEquals(-RemoteMemoryReader.EFAULT, r.read(me, dst, 0, 0x10, 64));
            assertEquals(-RemoteMemoryReader.EINVAL, r.read(me, dst, 8000, src.address(), 400), "past dst");
            assertEquals(-RemoteMemoryReader.EINVAL, r.read(me, MemorySegment.ofArray(new byte[16]), 0,
                src.address(), 16), "a heap destination has no address");
            assertTrue(RemoteMemoryReader.describe(-RemoteMemoryReader.EFAULT).startsWith("EFAULT"));
            assertTrue(RemoteMemoryReader.describe(-RemoteMemoryReader.ESRCH).startsWith("ESRCH"));
        }
    }
}
