/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.bench;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.gdrkit.ibverbs.IbvLayouts;
import io.gdrkit.ibverbs.NativeHandles;
import io.gdrkit.ibverbs.NativeProvider;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The FFM cost of a {@code post_send} + {@code poll_cq} pair through a provider's ops table, against a C loop calling
 * the same function pointers. The provider is a stub libibverbs (ibverbs/src/test/c/stubverbs.c, built here with gcc)
 * whose entries return at once, so what is timed is the call path, not a NIC. Three variants, ns per pair:
 * {@code c} (the loop in C), {@code ffmRaw} (the two downcalls on a prebuilt native WR), {@code api} (gdrkit's verbs
 * API: marshalling a SendWorkRequest, the downcalls, copying the completion into a WorkCompletion).
 * Run from the repository root: {@code java -jar bench/target/gdrkit-bench.jar NativeOpsBench}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 5, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class NativeOpsBench {
    private static final int LOOP = 1000;
    private static final MethodHandle POST_SEND = NativeHandles.postSendHandle();
    private static final MethodHandle POLL_CQ = NativeHandles.pollCqHandle();
    private final Arena arena = Arena.ofShared();
    private VerbsContext ctx;
    private QueuePair qp;
    private CompletionQueue cq;
    private SendWorkRequest wr;
    private final WorkCompletion[] wcs = {new WorkCompletion()};
    private MemorySegment nativeWr;
    private MemorySegment badWr;
    private MemorySegment nativeWc;
    private MethodHandle cLoop;
    private MemorySegment qpPtr;
    private MemorySegment cqPtr;
    private MemorySegment postSendFn;
    private MemorySegment pollCqFn;
    private long qpAddr;
    private long cqAddr;
    private long wrAddr;
    private long badWrAddr;
    private long wcAddr;

    @Setup
    public void setup() throws Exception {
        final Path src = Path.of(io.gdrkit.ibverbs.config.IbverbsConfiguration.STUB_SOURCE
            .read(io.gdrkit.core.config.SettingsReader.ofProcess()).value());
        final Path dir = Files.createTempDirectory("gdrkit-stub");
        final Path lib = dir.resolve("libibverbs.so.1.14.0.0");
        final Process p = new ProcessBuilder("gcc", "-shared", "-fPIC", "-O2", "-o", lib.toString(), src.toString())
            .inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException("cannot build the stub libibverbs from " + src.toAbsolutePath());
        }
        final NativeProvider.Probe probe = NativeProvider.probe(lib);
        ctx = probe.devices().get(0).open();
        final ProtectionDomain pd = ctx.allocPd();
        final MemorySegment buf = arena.allocate(4096, 64);
        final MemoryRegion mr = pd.registerMr(buf, AccessFlags.LOCAL_WRITE);
        cq = ctx.createCq(1024);
        qp = pd.createQp(new QpInitAttr().cqs(cq, cq));
        wr = new SendWorkRequest(1).wrId(42).opcode(WrOpcode.RDMA_WRITE).remote(0x1000, 7).sge(mr, 0, 64);
        nativeWr = arena.allocate(IbvLayouts.SEND_WR);
        final MemorySegment sge = arena.allocate(IbvLayouts.SGE);
        sge.set(JAVA_LONG, 0, buf.address());
        sge.set(JAVA_INT, 8, 64);
        sge.set(JAVA_INT, 12, mr.lkey());
        nativeWr.set(JAVA_LONG, 0, 42);
        nativeWr.set(ADDRESS, IbvLayouts.SEND_WR.byteOffset(MemoryLayout.PathElement.groupElement("sg_list")), sge);
        nativeWr.set(JAVA_INT, IbvLayouts.SEND_WR.byteOffset(MemoryLayout.PathElement.groupElement("num_sge")), 1);
        badWr = arena.allocate(ADDRESS);
        nativeWc = arena.allocate(IbvLayouts.WC);
        final SymbolLookup syms = SymbolLookup.libraryLookup(lib, Arena.global());
        cLoop = Linker.nativeLinker().downcallHandle(syms.find("stub_c_loop").orElseThrow(),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));
        qpPtr = NativeHandles.qpPointer(qp);
        cqPtr = NativeHandles.cqPointer(cq);
        postSendFn = NativeHandles.postSendFn(ctx);
        pollCqFn = NativeHandles.pollCqFn(ctx);
        qpAddr = qpPtr.address();
        cqAddr = cqPtr.address();
        wrAddr = nativeWr.address();
        badWrAddr = badWr.address();
        wcAddr = nativeWc.address();
    }

    @TearDown
    public void tearDown() {
        ctx.close();
    }

    @Benchmark
    @OperationsPerInvocation(LOOP)
    public long c() throws Throwable {
        return (long) cLoop.invokeExact(qpPtr, cqPtr, nativeWr, (long) LOOP);
    }

    /** The same 1000 pairs as {@link #c()}, looped in Java, so that JMH's per-invocation cost weighs the same. */
    @Benchmark
    @OperationsPerInvocation(LOOP)
    public long ffmRaw() throws Throwable {
        long got = 0;
        for (int i = 0; i < LOOP; i++) {
            got += (int) POST_SEND.invokeExact(postSendFn, qpAddr, wrAddr, badWrAddr);
            got += (int) POLL_CQ.invokeExact(pollCqFn, cqAddr, 1, wcAddr);
        }
        return got;
    }

    /** One pair per invocation (JMH's call overhead included). */
    @Benchmark
    public int ffmRawSingle() throws Throwable {
        final int rc = (int) POST_SEND.invokeExact(postSendFn, qpAddr, wrAddr, badWrAddr);
        return rc + (int) POLL_CQ.invokeExact(pollCqFn, cqAddr, 1, wcAddr);
    }

    @Benchmark
    @OperationsPerInvocation(LOOP)
    public long api() {
        long got = 0;
        for (int i = 0; i < LOOP; i++) {
            qp.postSend(wr);
            got += cq.poll(wcs, 1);
        }
        return got;
    }
}
