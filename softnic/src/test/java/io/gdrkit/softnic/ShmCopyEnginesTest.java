/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.softnic.fabric.CopyEngines;
import io.gdrkit.softnic.fabric.RemoteMemoryReader;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Copy engines ({@code gdrkit.nic.copy.engines}) on the shared-memory fabric's cma path, two NICs on two
 * {@link io.gdrkit.softnic.fabric.ShmFabric}s of one directory as in {@link ShmCmaTest}: WRITEs, SENDs and READs
 * byte-exact with 1, 2 and 4 engines and a threshold that splits nearly every pull; a fault or a dead peer in one
 * part is the error one thread reports; closing the driver ends the engine threads.
 */
class ShmCopyEnginesTest {
    private static final int MIB = 1 << 20;

    private static SoftNicContext ctx(final int engines) {
        // retransmit timer far above a loaded machine's pauses: a resend would still be byte-exact, but slower
        return new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER).retransmitFactor(100)
            .copyEngines(engines).copyThreshold(4096);
    }

    @Test
    void writesSendsAndReadsAreByteExactWithOneTwoAndFourEngines() {
        for (final int engines : new int[] {1, 2, 4}) {
            for (final boolean spans : new boolean[] {false, true}) {
                final Random rnd = new Random(31L * engines + (spans ? 1 : 0));
                try (ShmCmaTest.Pair p = new ShmCmaTest.Pair(ctx(engines).shmBatch(spans), ctx(engines), null, null,
                    4 * MIB)) {
                    p.awaitProbe();
                    assertEquals("cma", p.modeAtoB().mode(), p.modeAtoB()::reason);
                    final String what = engines + " engines" + (spans ? ", spans" : "");
                    if (engines == 1) {
                        assertNull(p.b.dev.copyEngines, "one engine: no copy threads");
                    } else {
                        assertEquals(engines, p.b.dev.copyEngines.engines());
                    }
                    for (int round = 0; round < 6; round++) {
                        // odd sizes and offsets: pulls and their parts are not page multiples nor page aligned
                        final int size = round == 0 ? 3 * MIB / 2 + 1 : 4096 + rnd.nextInt(MIB + 1000);
                        final int from = rnd.nextInt(8192) + 1;
                        final int to = rnd.nextInt(8192) + 3;
                        write(p, size, from, to, 1000L * engines + round, what);
                        send(p, Math.min(size, 300_000), from, to, 2000L * engines + round, what);
                        read(p, Math.min(size, 700_000), to, from, 3000L * engines + round, what);
                    }
                    if (engines > 1) {
                        assertTrue(p.b.dev.copyEngines.splitReads() > 0, "pulls were split");
                    }
                    assertEquals(0, p.b.dev.responder.unresolvedReferences());
                    assertEquals(0, p.fb.copyMode(2, 1).pullErrors());
                }
            }
        }
    }

    private static void write(final ShmCmaTest.Pair p, final int size, final int from, final int to, final long seed,
                              final String what) {
        Fixture.fill(p.a.buf.asSlice(from, size), seed);
        p.b.buf.fill((byte) 0);
        p.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(seed)
            .sge(p.a.mr, from, size).remote(p.b.mr.address() + to, p.b.mr.rkey()));
        final WorkCompletion wc = p.awaitOne(p.a.scq, "WRITE of " + size);
        assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
        Fixture.assertBytes(p.a.buf.asSlice(from, size), p.b.buf.asSlice(to, size), "WRITE " + size + ", " + what);
        assertEquals(0, p.b.buf.get(java.lang.foreign.ValueLayout.JAVA_BYTE, to + size), "nothing past the WRITE");
        assertEquals(0, p.b.buf.get(java.lang.foreign.ValueLayout.JAVA_BYTE, to - 1), "nothing before the WRITE");
    }

    private static void send(final ShmCmaTest.Pair p, final int size, final int from, final int to, final long seed,
                             final String what) {
        Fixture.fill(p.a.buf.asSlice(from, size), seed);
        p.b.buf.fill((byte) 0);
        p.b.qp.postRecv(new RecvWorkRequest().wrId(seed).sge(p.b.mr, to, size + 100));
        p.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).wrId(seed)
            .sge(p.a.mr, from, size));
        final WorkCompletion sent = p.awaitOne(p.a.scq, "SEND of " + size);
        assertEquals(WcStatus.SUCCESS, sent.status, sent::toString);
        final WorkCompletion recv = p.awaitOne(p.b.rcq, "receive of " + size);
        assertEquals(WcStatus.SUCCESS, recv.status, recv::toString);
        assertEquals(WcOpcode.RECV, recv.opcode);
        assertEquals(size, recv.byteLen);
        Fixture.assertBytes(p.a.buf.asSlice(from, size), p.b.buf.asSlice(to, size), "SEND " + size + ", " + what);
    }

    /** a READs from b: the responses carry bytes through the ring (no references), engines or not. */
    private static void read(final ShmCmaTest.Pair p, final int size, final int remote, final int local,
                             final long seed, final String what) {
        Fixture.fill(p.b.buf.asSlice(remote, size), seed);
        p.a.buf.fill((byte) 0);
        p.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(seed)
            .sge(p.a.mr, local, size).remote(p.b.mr.address() + remote, p.b.mr.rkey()));
        final WorkCompletion wc = p.awaitOne(p.a.scq, "READ of " + size);
        assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
        Fixture.assertBytes(p.b.buf.asSlice(remote, size), p.a.buf.asSlice(local, size), "READ " + size + ", " + what);
    }

    /**
     * A page of the sender's buffer that faults (a reader standing in for an unmapped page) inside the third of four
     * parts of the first pull: with and without engines the bytes before it are placed, then the pull at the page
     * fails with the same named EFAULT, and the WRITE completes with REM_OP_ERR.
     */
    @Test
    void aFaultInOnePartIsTheErrorOneThreadReports() {
        final int poisonAt = 600 * 1024;
        for (final int engines : new int[] {1, 4}) {
            final AtomicLong poison = new AtomicLong();
            try (ShmCmaTest.Pair p = new ShmCmaTest.Pair(ctx(engines), ctx(engines), null, poisoned(poison, false),
                2 * MIB)) {
                p.awaitProbe();
                final long bad = p.a.buf.address() + poisonAt;
                poison.set(bad);
                final AsyncEvent e = failedWrite(p, MIB, 7);
                final String expected = "cross-process reference from LID 1: process_vm_readv of 4096 bytes at 0x"
                    + Long.toHexString(bad) + " in process " + ProcessHandle.current().pid()
                    + " (LID 1): EFAULT (an address outside that process's memory)";
                assertTrue(e.detail().contains(expected), () -> engines + " engines: " + e.detail());
                Fixture.assertBytes(p.a.buf.asSlice(0, poisonAt), p.b.buf.asSlice(0, poisonAt),
                    "the bytes before the fault, " + engines + " engines");
                if (engines > 1) {
                    assertTrue(p.b.dev.copyEngines.splitReads() > 0, "the failing pulls were split");
                }
            }
        }
    }

    /** The peer gone (ESRCH) for one part only: the pull fails at the message's first packet, as one read does. */
    @Test
    void aDeadPeerInOnePartIsTheErrorOneThreadReports() {
        for (final int engines : new int[] {1, 4}) {
            final AtomicLong poison = new AtomicLong();
            try (ShmCmaTest.Pair p = new ShmCmaTest.Pair(ctx(engines), ctx(engines), null, poisoned(poison, true),
                2 * MIB)) {
                p.awaitProbe();
                poison.set(p.a.buf.address() + 600 * 1024);
                final AsyncEvent e = failedWrite(p, MIB, 8);
                final String expected = "cross-process reference from LID 1: process_vm_readv of 4096 bytes at 0x"
                    + Long.toHexString(p.a.buf.address()) + " in process " + ProcessHandle.current().pid()
                    + " (LID 1): ESRCH (no such process)";
                assertTrue(e.detail().contains(expected), () -> engines + " engines: " + e.detail());
            }
        }
    }

    /** process_vm_readv, except that a read touching the page at {@code poison} faults there (or answers ESRCH). */
    private static RemoteMemoryReader poisoned(final AtomicLong poison, final boolean gone) {
        final RemoteMemoryReader real = RemoteMemoryReader.processVmReadv();
        return (pid, dst, off, remote, len) -> {
            final long at = poison.get();
            if (at != 0 && remote < at + 4096 && remote + len > at) {
                if (gone) {
                    return -RemoteMemoryReader.ESRCH;
                }
                final long ok = at - remote;
                return ok <= 0 ? -RemoteMemoryReader.EFAULT : real.read(pid, dst, off, remote, ok);
            }
            return real.read(pid, dst, off, remote, len);
        };
    }

    private static AsyncEvent failedWrite(final ShmCmaTest.Pair p, final int size, final long seed) {
        Fixture.fill(p.a.buf.asSlice(0, size), seed);
        p.b.buf.fill((byte) 0);
        p.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(seed)
            .sge(p.a.mr, 0, size).remote(p.b.mr.address(), p.b.mr.rkey()));
        final WorkCompletion wc = p.awaitOne(p.a.scq, "the failing WRITE's completion");
        assertEquals(WcStatus.REM_OP_ERR, wc.status, wc::toString);
        final AsyncEvent[] e = {null};
        p.await(() -> (e[0] = p.b.ctx.pollAsyncEvent()) != null, "the responder's async event");
        assertEquals(QpState.ERR, ((SoftQp) p.b.qp).state);
        assertEquals(1, p.fb.copyMode(2, 1).pullErrors());
        return e[0];
    }

    /**
     * A copy engine that does not finish its part: the port's pull fails with the named timeout (what the responder
     * NAKs with REM_OP_ERR) instead of hanging, and pulls after it run on one thread, byte-exact. The port is given
     * engines with a 300 ms timeout (the device's is 10 s) and pulled directly, as the responder does.
     */
    @Test
    void aCopyEngineThatDoesNotFinishIsANamedPullError() throws Exception {
        final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        final java.util.concurrent.atomic.AtomicBoolean stall = new java.util.concurrent.atomic.AtomicBoolean();
        final java.util.concurrent.atomic.AtomicInteger inWorkers = new java.util.concurrent.atomic.AtomicInteger();
        final RemoteMemoryReader real = RemoteMemoryReader.processVmReadv();
        final RemoteMemoryReader stalling = (pid, dst, off, remote, len) -> {
            if (stall.get() && Thread.currentThread().getName().startsWith("gdrkit-copy-stuck-")) {
                inWorkers.incrementAndGet();
                try {
                    release.await(20, java.util.concurrent.TimeUnit.SECONDS);
                } catch (final InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            } else if (stall.get()) {
                // the NIC thread's own part: wait until the worker holds its part, so there is one to time out on
                final long deadline = System.nanoTime() + 20_000_000_000L;
                while (inWorkers.get() == 0 && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
            }
            return real.read(pid, dst, off, remote, len);
        };
        try (ShmCmaTest.Pair p = new ShmCmaTest.Pair(ctx(1), ctx(1), null, stalling, 2 * MIB);
             CopyEngines stuck = new CopyEngines(2, 4096, 300_000_000L, "stuck")) {
            p.awaitProbe();
            p.b.dev.port.copyEngines(stuck);
            final long pid = ProcessHandle.current().pid();
            Fixture.fill(p.a.buf.asSlice(0, 65536), 21);
            stall.set(true);
            final long got = p.b.dev.port.pullAhead(1, pid, p.a.buf.address(), p.b.buf, 0, 4096, 65536);
            assertTrue(got < 0, "the pull failed: " + got);
            assertTrue(p.b.dev.port.pullError().startsWith("copy engine 1 of stuck did not finish its part of a "
                + "process_vm_readv (32768 bytes at 0x" + Long.toHexString(p.a.buf.address() + 32768)
                + " of process " + pid + ") within 300 ms"), p.b.dev.port.pullError());
            stall.set(false);
            release.countDown();
            p.b.buf.fill((byte) 0);
            assertEquals(65536, p.b.dev.port.pullAhead(1, pid, p.a.buf.address(), p.b.buf, 0, 4096, 65536));
            Fixture.assertBytes(p.a.buf.asSlice(0, 65536), p.b.buf.asSlice(0, 65536), "the pull after the timeout");
            assertEquals(1, stuck.splitReads(), "after the timeout, one thread pulls");
            p.b.dev.port.copyEngines(null);
        }
    }

    @Test
    void closingTheDriverEndsTheCopyEngineThreads() throws Exception {
        final List<Thread> threads = new ArrayList<>();
        try (ShmCmaTest.Pair p = new ShmCmaTest.Pair(ctx(4), ctx(3), null, null, 2 * MIB)) {
            p.awaitProbe();
            final CopyEngines a = p.a.dev.copyEngines;
            final CopyEngines b = p.b.dev.copyEngines;
            assertNotNull(a);
            assertNotNull(b);
            threads.addAll(List.of(a.threads()));
            threads.addAll(List.of(b.threads()));
            assertEquals(3 + 2, threads.size());
            for (final Thread t : threads) {
                assertTrue(t.isAlive() && t.isDaemon(), t::getName);
            }
            assertEquals(WcStatus.SUCCESS, p.write(MIB, 5).status);
            Fixture.assertBytes(p.a.buf.asSlice(0, MIB), p.b.buf.asSlice(0, MIB), "WRITE before the close");
        }
        for (final Thread t : threads) {
            t.join(10_000);
            assertFalse(t.isAlive(), () -> t.getName() + " still runs after the driver closed");
        }
    }

    @Test
    void theSettingsAreReadOnceWithTheirSource() {
        final SoftNicContext c = new SoftNicContext().properties(java.util.Map.of(
            SoftNicContext.COPY_ENGINES_PROP, "3", SoftNicContext.COPY_THRESHOLD_PROP, "65536")).conclude();
        assertEquals(3, c.copyEngines());
        assertEquals(65536, c.copyThreshold());
        assertTrue(c.settings().stream().anyMatch(s -> s.name().equals(SoftNicContext.COPY_ENGINES_PROP)
            && s.source() == io.gdrkit.core.config.Source.PROPERTY));
        final SoftNicContext auto = new SoftNicContext().properties(java.util.Map.of(
            SoftNicContext.COPY_ENGINES_PROP, "auto")).conclude();
        final int processors = Runtime.getRuntime().availableProcessors();
        assertEquals(SoftNicContext.defaultCopyEngines(processors), auto.copyEngines());
        final SoftNicContext dflt = new SoftNicContext().properties(java.util.Map.of()).conclude();
        assertEquals(1, dflt.copyEngines(), "off unless asked for: not measured on a many-core host yet");
        assertEquals(SoftNicContext.DEFAULT_COPY_THRESHOLD, dflt.copyThreshold());
        assertTrue(dflt.settings().stream().anyMatch(s -> s.name().equals(SoftNicContext.COPY_ENGINES_PROP)
            && s.source() == io.gdrkit.core.config.Source.DEFAULT));
        assertEquals(1, SoftNicContext.defaultCopyEngines(2));
        assertEquals(1, SoftNicContext.defaultCopyEngines(7));
        assertEquals(2, SoftNicContext.defaultCopyEngines(8));
        assertEquals(4, SoftNicContext.defaultCopyEngines(16));
        assertEquals(4, SoftNicContext.defaultCopyEngines(128));
        for (final String bad : new String[] {"0", "65", "many"}) {
            final IllegalArgumentException ex = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalArgumentException.class, () -> new SoftNicContext().properties(java.util.Map.of(
                    SoftNicContext.COPY_ENGINES_PROP, bad)).conclude());
            assertTrue(ex.getMessage().contains(SoftNicContext.COPY_ENGINES_PROP + "=" + bad), ex::getMessage);
        }
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
            () -> new SoftNicContext().copyThreshold(100).conclude());
    }
}
