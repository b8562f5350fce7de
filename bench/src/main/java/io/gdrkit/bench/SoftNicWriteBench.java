/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * RDMA WRITE on two software NICs (simulated) in this JVM, invoker progress: one op posts one WRITE, keeping up
 * to {@link #DEPTH} outstanding and signaling every {@link #CQ_MOD}-th. Ops/s at 64 B is the message rate; the
 * {@code bytes} counter at 1 MiB is the bandwidth in bytes/s.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class SoftNicWriteBench {
    static final int DEPTH = 128;
    static final int CQ_MOD = 32;
    private static final long TIMEOUT_NS = 30_000_000_000L;

    @Param({"64", "1048576"})
    public int size;

    private SoftNicDriver driver;
    private Arena arena;
    private QueuePair qp;
    private CompletionQueue scq;
    private final SendWorkRequest wr = new SendWorkRequest(1);
    private final WorkCompletion[] wcs = new WorkCompletion[16];
    private long posted;
    private long completed;

    /** Bytes written, reported by JMH as a rate (bytes/s). */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Bytes {
        public long bytes;

        @Setup(Level.Iteration)
        public void reset() {
            bytes = 0;
        }
    }

    @Setup
    public void setup() {
        driver = SoftNicDriver.launch(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER));
        arena = Arena.ofShared();
        final SoftDevice da = driver.addDevice("soft0");
        final SoftDevice db = driver.addDevice("soft1");
        final VerbsContext ca = da.open();
        final VerbsContext cb = db.open();
        final ProtectionDomain pa = ca.allocPd();
        final ProtectionDomain pb = cb.allocPd();
        scq = ca.createCq(1024);
        final CompletionQueue rcqA = ca.createCq(16);
        final CompletionQueue scqB = cb.createCq(16);
        final CompletionQueue rcqB = cb.createCq(16);
        final MemorySegment bufA = arena.allocate(size, 4096);
        final MemorySegment bufB = arena.allocate(size, 4096);
        final MemoryRegion mrA = pa.registerMr(bufA, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
        final MemoryRegion mrB = pb.registerMr(bufB, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
        final QpInitAttr ia = new QpInitAttr().cqs(scq, rcqA);
        ia.cap.maxSendWr(DEPTH);
        qp = pa.createQp(ia);
        final QueuePair qpB = pb.createQp(new QpInitAttr().cqs(scqB, rcqB));
        QpBringUp.connect(qp, da.lid(), 1, qpB, db.lid(), 2, QpBringUp.rcDefaults());
        wr.opcode(WrOpcode.RDMA_WRITE).sge(mrA, 0, size).remote(mrB.address(), mrB.rkey());
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
    }

    @TearDown
    public void tearDown() {
        drain();
        driver.close();
        arena.close();
    }

    @Benchmark
    public void write(final Bytes counter) {
        if (posted - completed >= DEPTH) {
            final long deadline = System.nanoTime() + TIMEOUT_NS;
            while (posted - completed >= DEPTH) {
                if (poll() == 0 && System.nanoTime() > deadline) {
                    throw new IllegalStateException("no WRITE completion within 30 s");
                }
            }
        }
        wr.wrId = posted;
        wr.sendFlags = (posted + 1) % CQ_MOD == 0 ? SendFlags.SIGNALED : 0;
        qp.postSend(wr);
        posted++;
        counter.bytes += size;
    }

    private int poll() {
        final int n = scq.poll(wcs);
        for (int i = 0; i < n; i++) {
            if (wcs[i].status != WcStatus.SUCCESS) {
                throw new IllegalStateException("WRITE failed: " + wcs[i]);
            }
            completed = wcs[i].wrId + 1;
        }
        return n;
    }

    /** Waits for the unsignaled tail by posting one signaled zero-byte WRITE behind it. */
    private void drain() {
        wr.wrId = posted;
        wr.sendFlags = SendFlags.SIGNALED;
        wr.numSge(0);
        qp.postSend(wr);
        posted++;
        final long deadline = System.nanoTime() + TIMEOUT_NS;
        while (completed < posted) {
            if (poll() == 0 && System.nanoTime() > deadline) {
                throw new IllegalStateException("WRITEs did not drain within 30 s");
            }
        }
    }
}
