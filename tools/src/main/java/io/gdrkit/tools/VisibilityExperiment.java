/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.tools;

import io.gdrkit.agent.ManualClock;
import io.gdrkit.gdr.gate.RdmaReadFlush;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.sim.DeviceView;
import io.gdrkit.gpu.sim.KernelContext;
import io.gdrkit.gpu.sim.SimDeviceBuffer;
import io.gdrkit.gpu.sim.SimFunction;
import io.gdrkit.gpu.sim.SimGpu;
import io.gdrkit.gpu.sim.SimGpuConfig;
import io.gdrkit.gpu.sim.SimPreset;
import io.gdrkit.nic.RcConnector;
import io.gdrkit.nic.SoftDevice;
import io.gdrkit.nic.SoftNicContext;
import io.gdrkit.nic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
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
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Locale;

/**
 * The visibility experiment (D1, D4, D5, D6), in ONE process for now: a sender with a software NIC (simulated)
 * RDMA-WRITEs a round- and position-dependent pattern into GPU memory of a simulated GPU behind a second software
 * NIC (the receiver's); the receiver does readback OFF / ON (1-byte loopback RDMA READ) / FLUSH
 * (cuFlushGPUDirectRDMAWrites TO_OWNER) and a consumer kernel verifies every position on the device and returns a
 * small result.
 *
 * <p>Determinism: the simulated GPU runs with {@link SimGpuConfig#deterministic}, so NIC writes land only when
 * something orders them (the completion under OWNER, a NIC read, a flush, a kernel launch) or when the receiver
 * steps the posted-write queue. The persistent consumer's flag is a CPU store through BAR1 (a posted write like the
 * NIC's); the receiver steps the queue one chunk at a time, in the GPU model's seeded order, until the flag has
 * landed, then stops stepping and waits for the kernel's result. Which data chunks had landed by then is decided by
 * the GPU model's seeded deadlines and its ordering attribute, not by the experiment.
 */
public final class VisibilityExperiment {
    /** What consumes the data on the GPU. */
    public enum Consumer { LAUNCH, PERSISTENT }

    /** What the receiver does after the sender's notification and before the consumer may read. */
    public enum Readback { OFF, ON, FLUSH }

    /** Who publishes the persistent consumer's flag; only RECEIVER is implemented. */
    public enum Flag { RECEIVER, SENDER_SAME_QP, SENDER_OTHER_QP, IMM }

    /** One configuration of the matrix. {@code skipWriteRound} 0 = none (D4 negative control otherwise). */
    public record Config(String gpu, Consumer consumer, Flag flag, Readback readback, int wrSplit, int size,
                         int rounds, long seed, int skipWriteRound) {
        public Config {
            if (!gpu.startsWith("sim:")) {
                throw new IllegalArgumentException("--gpu " + gpu + ": the visibility experiment runs on simulated"
                    + " GPUs only so far (sim:v100|sim:h100|sim:h200|sim:all-devices); cuda:N is not supported yet");
            }
            SimPreset.byLabel(gpu.substring(4)); // names the known presets when unknown
            if (flag != Flag.RECEIVER) {
                throw new IllegalArgumentException("--flag " + flag.name().toLowerCase(Locale.ROOT).replace('_', '-')
                    + " is not supported yet (only 'receiver', the receiver's CPU writes the flag)");
            }
            if (wrSplit != 1 && wrSplit != 16 && wrSplit != 256) {
                throw new IllegalArgumentException("--wr-split must be 1, 16 or 256, not " + wrSplit);
            }
            if (size < wrSplit || size > (4 << 20)) {
                throw new IllegalArgumentException("--size must be between the WR split (" + wrSplit
                    + ") and 4 MiB (the simulated GPU's deterministic staging ring), not " + size);
            }
            if (rounds < 1) {
                throw new IllegalArgumentException("--rounds must be at least 1, not " + rounds);
            }
            if (skipWriteRound < 0 || skipWriteRound > rounds) {
                throw new IllegalArgumentException("--skip-write-round must be 0 (none) or a round 1.." + rounds
                    + ", not " + skipWriteRound);
            }
        }
    }

    /** The small result the device returns for one round. */
    public record RoundResult(int round, long mismatches, long firstBad, String what) {
        public boolean ok() {
            return mismatches == 0 && what.equals("ok");
        }
    }

    /** The result of one configuration. {@code firstFailingRound} and position are -1 when nothing failed. */
    public record Result(Config config, String gpuName, String ordering, int rounds, int failures,
                         int firstFailingRound, long firstFailingPosition, String what, long staleRounds,
                         long partialRounds, long reorderedRounds) {
    }

    static final String VERIFY = "gdrkit_vis_verify";
    static final String PERSISTENT = "gdrkit_vis_persistent";
    private static final int SLOT = 64; // bytes per round in the persistent kernel's result area
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /**
     * {@code gdrkit_vis_verify(const u8* buf, u64 n, u32 round, u32 seed, u64* result)}, one block: result[0]
     * mismatching bytes, [1] first mismatch (-1), [2] last position holding this round (-1), [3] mismatching bytes
     * that hold the previous round's value.
     */
    static final SimFunction VERIFY_KERNEL = new SimFunction(VERIFY, ctx ->
        verify(ctx.view(0), ctx.u64(1), ctx.u32(2), ctx.u32(3), ctx.view(4), 0));

    /**
     * {@code gdrkit_vis_persistent(const volatile u32* flag, const u8* buf, u64 n, u32 rounds, u32 seed, u64* res)},
     * launched once, one block: for each round r it polls the flag until it is at least r, verifies the buffer
     * against round r into res[r*8 .. r*8+3] (as {@link #VERIFY_KERNEL}), then publishes res[0] = r (release).
     */
    static final SimFunction PERSISTENT_KERNEL = new SimFunction(PERSISTENT, ctx -> {
        final DeviceView flag = ctx.view(0);
        final DeviceView res = ctx.view(5);
        final int rounds = ctx.u32(3);
        for (int r = 1; r <= rounds; r++) {
            long polls = 0;
            while (Integer.compareUnsigned(flag.getIntAcquire(0), r) < 0) {
                if (ctx.stopRequested()) {
                    return;
                }
                if ((++polls & 63) == 0) {
                    Thread.yield();
                } else {
                    Thread.onSpinWait();
                }
            }
            verify(ctx.view(1), ctx.u64(2), r, ctx.u32(4), res, (long) r * SLOT);
            res.putIntRelease(0, r);
        }
    });

    private static void verify(final DeviceView buf, final long n, final int round, final int seed,
                               final DeviceView result, final long at) {
        final MemorySegment local = MemorySegment.ofArray(new byte[4096]);
        long bad = 0;
        long first = -1;
        long lastGood = -1;
        long prev = 0;
        for (long base = 0; base < n; base += 4096) {
            final int len = (int) Math.min(4096, n - base);
            buf.read(base, local, 0, len); // one snapshot per chunk, like a warp's coalesced load
            for (int j = 0; j < len; j++) {
                final byte b = local.get(ValueLayout.JAVA_BYTE, j);
                if (b == Pattern.at(base + j, round, seed)) {
                    lastGood = base + j;
                } else {
                    bad++;
                    if (first < 0) {
                        first = base + j;
                    }
                    if (b == Pattern.at(base + j, round - 1, seed)) {
                        prev++;
                    }
                }
            }
        }
        result.putLong(at, bad);
        result.putLong(at + 8, first);
        result.putLong(at + 16, lastGood);
        result.putLong(at + 24, prev);
    }

    /** Stale: nothing of this round; partial: a prefix of it; reordered: later positions new, earlier old. */
    static String classify(final long n, final long bad, final long first, final long lastGood, final long prev) {
        if (bad == 0) {
            return "ok";
        }
        if (prev != bad) {
            return "corrupt";
        }
        if (bad == n) {
            return "stale";
        }
        return lastGood > first ? "reordered" : "partial";
    }

    private VisibilityExperiment() {
    }

    /** Runs one configuration; a device check, launch or completion error is thrown with what went wrong. */
    public static Result run(final Config c) {
        final SimPreset preset = SimPreset.byLabel(c.gpu().substring(4));
        final int patternSeed = (int) (c.seed() * 0x9E3779B1L);
        try (SimGpu gpu = SimGpu.create(preset, SimGpuConfig.deterministic(c.seed(), new ManualClock(0)));
             SoftNicDriver driver = SoftNicDriver.launch(new SoftNicContext()
                 .progressMode(SoftNicContext.ProgressMode.INVOKER));
             Arena arena = Arena.ofShared()) {
            gpu.register(VERIFY_KERNEL);
            gpu.register(PERSISTENT_KERNEL);
            // --- receiver: GPU buffer (round 0 pattern), MR over it, flush QP, flag, result area
            final SoftDevice rDev = driver.addDevice("soft-recv");
            final VerbsContext rCtx = rDev.open();
            final ProtectionDomain rPd = rCtx.allocPd();
            final CompletionQueue rCq = rCtx.createCq(16);
            final DeviceBuffer data = gpu.alloc(c.size());
            fill(gpu, data, 0, patternSeed);
            final GpuDmaMemory dma = new GpuDmaMemory(gpu, data);
            final MemoryRegion dataMr = rPd.registerMr(dma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final RdmaReadFlush readFlush = new RdmaReadFlush(rCtx, rPd);
            final DeviceBuffer flag = gpu.alloc(4);
            final NicMapping flagBar = gpu.mapForNic(flag); // the CPU's store goes through BAR1
            final MemorySegment flagWord = arena.allocate(4);
            final DeviceBuffer result = gpu.alloc((long) (c.rounds() + 1) * SLOT);
            gpu.copyHtoD(flag, 0, arena.allocate(4), 0, 4);
            gpu.copyHtoD(result, 0, arena.allocate((long) (c.rounds() + 1) * SLOT), 0, (long) (c.rounds() + 1) * SLOT);
            // --- sender: host source buffer, QP connected to the receiver's
            final SoftDevice sDev = driver.addDevice("soft-send");
            final VerbsContext sCtx = sDev.open();
            final ProtectionDomain sPd = sCtx.allocPd();
            final CompletionQueue sCq = sCtx.createCq(512);
            final MemorySegment src = arena.allocate(c.size(), 4096);
            final MemoryRegion srcMr = sPd.registerMr(src, AccessFlags.LOCAL_WRITE);
            final QpInitAttr si = new QpInitAttr().cqs(sCq, sCq);
            si.cap.maxSendWr(512).maxRecvWr(1).maxInlineData(0);
            final QueuePair sQp = sPd.createQp(si);
            final QpInitAttr ri = new QpInitAttr().cqs(rCq, rCq);
            ri.cap.maxSendWr(4).maxRecvWr(4).maxInlineData(0);
            final QueuePair rQp = rPd.createQp(ri);
            RcConnector.connect(sQp, sDev.lid(), 100, rQp, rDev.lid(), 200, RcConnector.defaults());

            final GpuStream consumerStream = gpu.createStream();
            if (c.consumer() == Consumer.PERSISTENT) {
                // the consumer is running before the first byte arrives, and stays running across rounds
                gpu.launch(gpu.function("kernels", PERSISTENT), Dim3.of(1), Dim3.of(128), consumerStream,
                    new KernelArgs(6).ptr(flag).ptr(data).u64(c.size()).u32(c.rounds()).u32(patternSeed).ptr(result));
            }
            final MemorySegment resultMem = ((SimDeviceBuffer) result).memory();
            final SendWorkRequest wr = new SendWorkRequest();
            final WorkCompletion[] wc = {new WorkCompletion()};
            int failures = 0;
            int firstRound = -1;
            long firstPos = -1;
            String firstWhat = "none";
            long stale = 0;
            long partial = 0;
            long reordered = 0;
            for (int round = 1; round <= c.rounds(); round++) {
                // 1. receiver grants the round (its result area is ready: slot `round` is zero)
                // 2. sender: the round's pattern, posted as wrSplit WRs, only the last signaled
                final boolean skip = round == c.skipWriteRound();
                if (!skip) {
                    Pattern.fill(src, 0, c.size(), 0, round, patternSeed);
                    final long expectId = ((long) round << 16) | (c.wrSplit() - 1);
                    for (int i = 0; i < c.wrSplit(); i++) {
                        final long from = (long) c.size() * i / c.wrSplit();
                        final long to = (long) c.size() * (i + 1) / c.wrSplit();
                        wr.clear().opcode(WrOpcode.RDMA_WRITE).wrId(((long) round << 16) | i)
                            .flags(i == c.wrSplit() - 1 ? SendFlags.SIGNALED : 0)
                            .sge(srcMr, from, (int) (to - from)).remote(dataMr.address() + from, dataMr.rkey());
                        sQp.postSend(wr);
                    }
                    // 3. sender checks the one completion: status, opcode, wr_id
                    final long deadline = System.nanoTime() + TIMEOUT.toNanos();
                    while (sCq.poll(wc) == 0) {
                        if (System.nanoTime() > deadline) {
                            throw new IllegalStateException("round " + round + ": no completion for the WRITE batch"
                                + " within " + TIMEOUT.toSeconds() + " s");
                        }
                    }
                    if (wc[0].status != WcStatus.SUCCESS || wc[0].opcode != WcOpcode.RDMA_WRITE
                        || wc[0].wrId != expectId) {
                        throw new IllegalStateException("round " + round + ": bad completion " + wc[0]
                            + " (expected SUCCESS, RDMA_WRITE, wr_id 0x" + Long.toHexString(expectId) + ")");
                    }
                }
                // ... and notifies the receiver (in-process call). 4. receiver: readback OFF / ON / FLUSH
                switch (c.readback()) {
                    case OFF -> { }
                    case ON -> readFlush.flush(dataMr);
                    case FLUSH -> gpu.flushGpuDirectRdmaWrites(FlushScope.TO_OWNER);
                }
                // 5. the consumer verifies on the device and returns a small result
                final long bad;
                final long first;
                final long lastGood;
                final long prev;
                if (c.consumer() == Consumer.LAUNCH) {
                    final DeviceBuffer r = gpu.alloc(32);
                    gpu.copyHtoD(r, 0, arena.allocate(32), 0, 32);
                    gpu.launch(gpu.function("kernels", VERIFY), Dim3.of(1), Dim3.of(128), consumerStream,
                        new KernelArgs(5).ptr(data).u64(c.size()).u32(round).u32(patternSeed).ptr(r));
                    gpu.synchronize(consumerStream, TIMEOUT);
                    final MemorySegment h = arena.allocate(32);
                    gpu.copyDtoH(h, 0, r, 0, 32);
                    gpu.free(r);
                    bad = h.get(ValueLayout.JAVA_LONG, 0);
                    first = h.get(ValueLayout.JAVA_LONG, 8);
                    lastGood = h.get(ValueLayout.JAVA_LONG, 16);
                    prev = h.get(ValueLayout.JAVA_LONG, 24);
                } else {
                    // the receiver's CPU stores the flag through BAR1: a posted write, like the NIC's
                    flagWord.set(ValueLayout.JAVA_INT, 0, round);
                    flagBar.write(0, flagWord, 0, 4);
                    final MemorySegment flagMem = ((SimDeviceBuffer) flag).memory();
                    // time passes on the PCIe path: chunks land in the GPU model's (seeded) order until the flag has
                    while (flagMem.get(ValueLayout.JAVA_INT, 0) != round) {
                        if (!gpu.postedWrites().stepLanding()) {
                            throw new IllegalStateException("round " + round + ": the flag never landed");
                        }
                    }
                    final long deadline = System.nanoTime() + TIMEOUT.toNanos();
                    while (true) {
                        final int done = resultMem.get(ValueLayout.JAVA_INT, 0);
                        VarHandle.acquireFence();
                        if (done >= round) {
                            break;
                        }
                        if (gpu.isComplete(consumerStream)) {
                            gpu.synchronize(consumerStream, TIMEOUT); // throws the kernel's error, if any
                            throw new IllegalStateException("round " + round + ": the persistent consumer exited");
                        }
                        if (System.nanoTime() > deadline) {
                            throw new IllegalStateException("round " + round + ": no result from the persistent"
                                + " consumer within " + TIMEOUT.toSeconds() + " s");
                        }
                        Thread.yield();
                    }
                    final long at = (long) round * SLOT;
                    bad = resultMem.get(ValueLayout.JAVA_LONG, at);
                    first = resultMem.get(ValueLayout.JAVA_LONG, at + 8);
                    lastGood = resultMem.get(ValueLayout.JAVA_LONG, at + 16);
                    prev = resultMem.get(ValueLayout.JAVA_LONG, at + 24);
                    // the rest of this round's posted writes land before the next round is granted
                    while (gpu.postedWrites().stepLanding()) {
                        // seeded order
                    }
                }
                // 6. the result goes back to the sender; the next round starts only now
                final String what = classify(c.size(), bad, first, lastGood, prev);
                if (bad != 0) {
                    failures++;
                    switch (what) {
                        case "stale" -> stale++;
                        case "partial" -> partial++;
                        case "reordered" -> reordered++;
                        default -> { }
                    }
                    if (firstRound < 0) {
                        firstRound = round;
                        firstPos = first;
                        firstWhat = what;
                    }
                }
            }
            if (c.consumer() == Consumer.PERSISTENT) {
                gpu.synchronize(consumerStream, TIMEOUT);
            }
            readFlush.close();
            dataMr.deregister();
            dma.close();
            flagBar.close();
            return new Result(c, preset.name(), gpu.postedWrites().ordering().name(), c.rounds(), failures,
                firstRound, firstPos, firstWhat, stale, partial, reordered);
        }
    }

    private static void fill(final SimGpu gpu, final DeviceBuffer buf, final int round, final int seed) {
        final GpuStream s = gpu.createStream();
        gpu.launch(gpu.function("kernels", "fill_pattern"), Dim3.of(1), Dim3.of(128), s,
            new KernelArgs(4).ptr(buf).u64(buf.size()).u32(round).u32(seed));
        gpu.synchronize(s, TIMEOUT);
        gpu.destroyStream(s);
    }
}
