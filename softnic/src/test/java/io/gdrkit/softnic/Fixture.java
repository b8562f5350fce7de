/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpBringUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.BooleanSupplier;

/** Two software NICs with one connected RC QP pair, and helpers to wait for completions with a timeout. */
final class Fixture implements AutoCloseable {
    final SoftNicDriver driver;
    final Side a;
    final Side b;
    final Arena arena = Arena.ofShared();

    static final class Side {
        final SoftDevice dev;
        final VerbsContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue scq;
        final CompletionQueue rcq;
        QueuePair qp;
        MemoryRegion mr;
        MemorySegment buf;

        Side(final SoftDevice dev, final int cqe) {
            this.dev = dev;
            this.ctx = dev.open();
            this.pd = ctx.allocPd();
            this.scq = ctx.createCq(cqe);
            this.rcq = ctx.createCq(cqe);
        }
    }

    Fixture(final SoftNicContext ctx, final long bufBytes) {
        this(ctx, bufBytes, new QpInitAttr(), QpBringUp.rcDefaults());
    }

    Fixture(final SoftNicContext ctx, final long bufBytes, final QpInitAttr init, final QpAttr attr) {
        this(ctx, bufBytes, init, attr, 100, 200);
    }

    /** {@code psnA}: a's sq_psn (= b's rq_psn); {@code psnB}: b's sq_psn (= a's rq_psn). */
    Fixture(final SoftNicContext ctx, final long bufBytes, final QpInitAttr init, final QpAttr attr, final int psnA,
            final int psnB) {
        this(SoftNicDriver.launch(ctx), bufBytes, init, attr, psnA, psnB);
    }

    /** The two NICs on {@code fabric} (which the driver closes) instead of a new in-JVM one. */
    Fixture(final SoftNicContext ctx, final io.gdrkit.softnic.fabric.Fabric fabric, final long bufBytes) {
        this(SoftNicDriver.launch(ctx, fabric), bufBytes, new QpInitAttr(), QpBringUp.rcDefaults(), 100, 200);
    }

    private Fixture(final SoftNicDriver driver, final long bufBytes, final QpInitAttr init, final QpAttr attr,
                    final int psnA, final int psnB) {
        this.driver = driver;
        final boolean shm = driver.fabric() instanceof io.gdrkit.softnic.fabric.ShmFabric; // ports need LIDs there
        a = new Side(shm ? driver.addDevice("soft0", 1) : driver.addDevice("soft0"), 4096);
        b = new Side(shm ? driver.addDevice("soft1", 2) : driver.addDevice("soft1"), 4096);
        for (final Side s : new Side[] {a, b}) {
            s.buf = arena.allocate(bufBytes, 4096);
            s.mr = s.pd.registerMr(s.buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
        }
        a.qp = a.pd.createQp(init.cqs(a.scq, a.rcq));
        b.qp = b.pd.createQp(init.cqs(b.scq, b.rcq));
        QpBringUp.connect(a.qp, a.dev.lid(), psnA, b.qp, b.dev.lid(), psnB, attr);
    }

    /** Polls {@code cq} (advancing the NICs) until one completion arrives; fails after 20 s. */
    WorkCompletion awaitOne(final CompletionQueue cq, final String what) {
        final WorkCompletion[] wc = {new WorkCompletion()};
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (System.nanoTime() < deadline) {
            if (cq.poll(wc) == 1) {
                return wc[0];
            }
            driver.progress();
        }
        fail("timed out after 20 s waiting for " + what);
        return null;
    }

    WorkCompletion awaitSuccess(final CompletionQueue cq, final String what) {
        final WorkCompletion wc = awaitOne(cq, what);
        assertEquals(WcStatus.SUCCESS, wc.status, () -> what + ": " + wc);
        return wc;
    }

    void await(final BooleanSupplier cond, final String what) {
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after 20 s waiting for " + what);
            }
            driver.progress();
        }
    }

    /** Polls {@code n} completions, in order, each with a timeout; copies them. */
    java.util.List<WorkCompletion> awaitN(final CompletionQueue cq, final int n, final String what) {
        final java.util.List<WorkCompletion> out = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            final WorkCompletion wc = new WorkCompletion();
            wc.copyFrom(awaitOne(cq, what + " #" + i));
            out.add(wc);
        }
        return out;
    }

    /** Asserts that {@code cq} holds no completion after the NICs ran a while. */
    void assertNoCompletion(final CompletionQueue cq, final String what) {
        settle(2000);
        final WorkCompletion[] wc = {new WorkCompletion()};
        assertEquals(0, cq.poll(wc), () -> what + ": unexpected completion " + wc[0]);
    }

    /** Waits for an async event of {@code type} on {@code ctx} for QP/CQ {@code element}. */
    io.gdrkit.verbs.AsyncEvent awaitEvent(final VerbsContext ctx, final int type, final int element) {
        final java.util.List<io.gdrkit.verbs.AsyncEvent> seen = new java.util.ArrayList<>();
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (System.nanoTime() < deadline) {
            final io.gdrkit.verbs.AsyncEvent e = ctx.pollAsyncEvent();
            if (e == null) {
                driver.progress();
                continue;
            }
            if (e.type() == type && e.element() == element) {
                return e;
            }
            seen.add(e);
        }
        fail("no async event " + io.gdrkit.verbs.AsyncEventType.name(type) + " for " + element + "; saw " + seen);
        return null;
    }

    /** Runs the NICs for a while so that anything that would happen, happens. */
    void settle(final int rounds) {
        for (int i = 0; i < rounds; i++) {
            driver.progress();
        }
    }

    static void fill(final MemorySegment seg, final long seed) {
        long x = seed;
        for (long i = 0; i < seg.byteSize(); i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (x >>> 56));
        }
    }

    static void assertBytes(final MemorySegment expected, final MemorySegment actual, final String what) {
        final long mismatch = expected.mismatch(actual);
        if (mismatch != -1) {
            fail(what + ": first differing byte at offset " + mismatch + " of " + expected.byteSize());
        }
    }

    @Override
    public void close() {
        driver.close();
        arena.close();
    }
}
