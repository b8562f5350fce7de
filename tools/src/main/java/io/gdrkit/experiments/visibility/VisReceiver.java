/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.experiments.visibility;

import io.gdrkit.experiments.visibility.VisConfig.Consumer;
import io.gdrkit.experiments.visibility.VisConfig.Flag;
import io.gdrkit.experiments.visibility.VisConfig.Injection;
import io.gdrkit.experiments.visibility.VisConfig.Readback;
import io.gdrkit.gdr.gate.RdmaReadFlush;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.VisKernels;
import io.gdrkit.nic.RcConnector;
import io.gdrkit.nic.SoftDevice;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.VerbsContext;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * The receiver: owns the GPU, the receive buffers (one per sender) and the consumer, and drives the rounds over
 * the control channels of its sender hosts. One round: grant; every sender writes and notifies; the receiver does
 * OFF / ON / FLUSH; the consumer verifies every position on the device; the small result goes back to the senders;
 * only then the next round.
 */
final class VisReceiver {
    private static final Duration TIMEOUT = ReceiverGpu.TIMEOUT;
    /**
     * The persistent consumer's flag poll gives up after this (GPU clock; a wall-clock guard on the simulator). A
     * flag is published milliseconds after the data; a poll that has not seen it in 2 s never will (a plain load
     * hoisted out of the loop), and a longer wait would only stretch the run by rounds x timeout.
     */
    private static final long POLL_TIMEOUT_NS = 2_000_000_000L;

    private static final String NOT_VERIFIED = "not-verified";

    private final SoftDevice device;
    private final List<Control> hosts;

    VisReceiver(final SoftDevice device, final List<Control> hosts) {
        this.device = device;
        this.hosts = hosts;
    }

    /** Per-round bookkeeping of one configuration. */
    private static final class Tally {
        long checks;
        long failures;
        int firstRound = -1;
        long firstPos = -1;
        String what = "none";
        long stale;
        long partial;
        long reordered;
        long corrupt;
        long timeouts;
        long errorCompletions;
        long launchFailures;
        String aborted;

        void fail(final int round, final long pos, final String kind) {
            failures++;
            switch (kind) {
                case "stale" -> stale++;
                case "partial" -> partial++;
                case "reordered" -> reordered++;
                case "corrupt" -> corrupt++;
                case "timeout" -> timeouts++;
                case "launch-failed" -> launchFailures++;
                case "error-completion" -> errorCompletions++;
                default -> { }
            }
            if (firstRound < 0) {
                firstRound = round;
                firstPos = pos;
                what = kind;
            }
        }
    }

    VisResult run(final VisConfig c, final String processes, final IntConsumer roundDone) {
        final int n = c.senders();
        try (ReceiverGpu g = ReceiverGpu.open(c, c.size() * n);
             Arena arena = Arena.ofShared()) {
            final VerbsContext ctx = device.open();
            final ProtectionDomain pd = ctx.allocPd();
            final CompletionQueue cq = ctx.createCq(Math.max(64, 4 * n));
            final DeviceBuffer[] data = new DeviceBuffer[n];
            final GpuDmaMemory[] dma = new GpuDmaMemory[n];
            final MemoryRegion[] mr = new MemoryRegion[n];
            final QueuePair[] dataQp = new QueuePair[n];
            final QueuePair[] flagQp = new QueuePair[n];
            for (int s = 0; s < n; s++) {
                data[s] = g.gpu.alloc(c.size());
                g.fill(data[s], 0, c.patternSeed(s));
                if (c.syncMemops()) {
                    g.gpu.setSyncMemops(data[s], true);
                }
                dma[s] = new GpuDmaMemory(g.gpu, data[s]);
                mr[s] = pd.registerMr(dma[s], AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                final QpInitAttr ia = new QpInitAttr().cqs(cq, cq);
                ia.cap.maxSendWr(4).maxRecvWr(4).maxInlineData(0);
                dataQp[s] = pd.createQp(ia);
                if (c.flag() == Flag.SENDER_OTHER_QP) {
                    flagQp[s] = pd.createQp(ia);
                }
            }
            // flags: GPU memory the senders' NICs write, or words the receiver's CPU stores
            final boolean nicFlags = c.flag().senderWritesFlag();
            final DeviceBuffer flagBuf = nicFlags ? g.gpu.alloc(4L * n) : null;
            final GpuDmaMemory flagDma;
            final MemoryRegion flagMr;
            if (nicFlags) {
                g.gpu.copyHtoD(flagBuf, 0, arena.allocate(4L * n), 0, 4L * n);
                flagDma = new GpuDmaMemory(g.gpu, flagBuf);
                flagMr = pd.registerMr(flagDma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            } else {
                flagDma = null;
                flagMr = null;
            }
            final ReceiverGpu.Words cpuFlags = nicFlags || c.consumer() == Consumer.LAUNCH ? null : g.words(4L * n);
            final RdmaReadFlush readFlush = !nicFlags && c.readback() == Readback.ON ? new RdmaReadFlush(ctx, pd) : null;
            final RecvWorkRequest recv = new RecvWorkRequest(0);
            // the senders: a contiguous share per host, then the QPs are brought up both ways
            final int[] firstOf = new int[hosts.size() + 1];
            for (int h = 0; h <= hosts.size(); h++) {
                firstOf[h] = (int) ((long) n * h / hosts.size());
            }
            for (int h = 0; h < hosts.size(); h++) {
                final int count = firstOf[h + 1] - firstOf[h];
                if (count == 0) {
                    continue;
                }
                final Control ch = hosts.get(h);
                ch.out.writeByte(Control.CONFIG);
                c.write(ch.out);
                ch.out.writeInt(firstOf[h]);
                ch.out.writeInt(count);
                ch.out.writeInt(device.lid());
                for (int s = firstOf[h]; s < firstOf[h + 1]; s++) {
                    ch.out.writeInt(dataQp[s].qpNum());
                    ch.out.writeInt(flagQp[s] == null ? 0 : flagQp[s].qpNum());
                    ch.out.writeLong(mr[s].address());
                    ch.out.writeInt(mr[s].rkey());
                    ch.out.writeLong(nicFlags ? flagMr.address() + 4L * s : 0);
                    ch.out.writeInt(nicFlags ? flagMr.rkey() : 0);
                }
                ch.flush();
            }
            for (int h = 0; h < hosts.size(); h++) {
                if (firstOf[h + 1] == firstOf[h]) {
                    continue;
                }
                final Control ch = hosts.get(h);
                ch.expect(Control.READY, TIMEOUT, "READY (the sender host's QPs)");
                final int lid = ch.in.readInt();
                for (int s = firstOf[h]; s < firstOf[h + 1]; s++) {
                    final int dq = ch.in.readInt();
                    final int fq = ch.in.readInt();
                    RcConnector.bringUp(dataQp[s], dq, lid, 0, 0, RcConnector.defaults());
                    if (flagQp[s] != null) {
                        RcConnector.bringUp(flagQp[s], fq, lid, 0, 0, RcConnector.defaults());
                    }
                }
            }
            if (c.flag() == Flag.IMM) {
                // a receive per WRITE_WITH_IMM; one is reposted each time one is consumed
                for (int s = 0; s < n; s++) {
                    for (int k = 0; k < 2; k++) {
                        dataQp[s].postRecv(recv.wrId(s));
                    }
                }
            }

            final Tally t = new Tally();
            int roundsRun = 0;
            GpuStream consumerStream = null;
            ReceiverGpu.Words results = null;
            DeviceBuffer table = null;
            if (c.consumer() == Consumer.PERSISTENT) {
                // one kernel, running before the first byte arrives and across all rounds
                table = g.consumer.alloc(8L * n);
                final MemorySegment addrs = arena.allocate(8L * n, 8);
                for (int s = 0; s < n; s++) {
                    addrs.setAtIndex(ValueLayout.JAVA_LONG, s, data[s].address());
                }
                g.consumer.copyHtoD(table, 0, addrs, 0, 8L * n);
                results = g.words(VisKernels.resultBytes(c.rounds(), n));
                consumerStream = g.consumer.createStream();
                final KernelArgs a = new KernelArgs(8);
                if (nicFlags) {
                    a.ptr(flagBuf);
                } else {
                    cpuFlags.addTo(a);
                }
                a.ptr(table).u32(n).u64(c.size()).u32(c.rounds()).u32(c.patternSeed(0)).u64(POLL_TIMEOUT_NS);
                results.addTo(a);
                try {
                    g.consumer.launch(g.consumer.function("kernels", VisKernels.Poll.valueOf(c.poll().name()).kernel()),
                        // every block must be resident: simulated blocks hold one of a few SM workers each, and
                        // blocks loop over senders when there are fewer blocks than senders
                        Dim3.of(Math.min(n, g.simulated() ? 2 : 128)), c.inject().at(Injection.Kind.BAD_LAUNCH, 1) ? Dim3.of(2048)
                            : Dim3.of(256), consumerStream, a);
                } catch (final GpuException e) {
                    t.fail(1, -1, "launch-failed");
                    t.aborted = "the persistent consumer did not launch: " + e.getMessage();
                }
            }
            final DeviceBuffer launchResult = c.consumer() == Consumer.LAUNCH ? g.consumer.alloc(VisKernels.VERIFY_BYTES)
                : null;
            final MemorySegment verifyHost = arena.allocate(VisKernels.VERIFY_BYTES, 8);
            final String[] status = new String[n];
            final long[] bad = new long[n];
            final long[] first = new long[n];
            final String[] what = new String[n];
            final WorkCompletion[] wc = {new WorkCompletion()};
            for (int round = 1; round <= c.rounds() && t.aborted == null; round++) {
                // 1. grant the round to every host; 2-3. they write, check their completions and notify
                for (int h = 0; h < hosts.size(); h++) {
                    if (firstOf[h + 1] > firstOf[h]) {
                        hosts.get(h).out.writeByte(Control.GRANT);
                        hosts.get(h).out.writeInt(round);
                        hosts.get(h).flush();
                    }
                }
                for (int h = 0; h < hosts.size(); h++) {
                    if (firstOf[h + 1] == firstOf[h]) {
                        continue;
                    }
                    final Control ch = hosts.get(h);
                    ch.expect(Control.NOTIFY, TIMEOUT, "NOTIFY of round " + round);
                    final int r = ch.in.readInt();
                    if (r != round) {
                        throw new IllegalStateException(ch.peer() + " notified round " + r + " during round " + round);
                    }
                    for (int s = firstOf[h]; s < firstOf[h + 1]; s++) {
                        final boolean err = ch.in.readInt() != 0;
                        final String detail = ch.in.readUTF();
                        status[s] = err ? detail : null;
                    }
                }
                if (c.flag() == Flag.IMM) {
                    awaitImm(cq, dataQp, status, round, recv, wc);
                }
                // 4. OFF / ON / FLUSH, by the receiver's CPU (with a sender-published flag, the sender did ON)
                if (!nicFlags) {
                    switch (c.readback()) {
                        case OFF -> { }
                        case ON -> {
                            for (int s = 0; s < n; s++) {
                                if (status[s] == null) {
                                    readFlush.flush(mr[s]);
                                }
                            }
                        }
                        case FLUSH -> g.gpu.flushGpuDirectRdmaWrites(FlushScope.TO_OWNER);
                        case FLUSH_ALL -> g.gpu.flushGpuDirectRdmaWrites(FlushScope.TO_ALL_DEVICES);
                    }
                }
                // 5. the consumer verifies on the device and returns a small result
                if (c.consumer() == Consumer.LAUNCH) {
                    for (int s = 0; s < n; s++) {
                        if (status[s] != null) {
                            continue;
                        }
                        try {
                            final VisKernels.Slot v = verifyLaunched(g, c, launchResult, verifyHost, data[s], round, s,
                                c.inject().at(Injection.Kind.BAD_LAUNCH, round) && s == 0);
                            bad[s] = v.bad();
                            first[s] = v.first();
                            what[s] = v.what(c.size());
                        } catch (final GpuException e) {
                            bad[s] = -1;
                            first[s] = -1;
                            what[s] = "launch-failed";
                        }
                    }
                } else if (anyError(status)) {
                    // an error completion stops the configuration: the consumer's flags for this round are not
                    // all coming, so nothing of this round is verified (the errored senders are counted below)
                    for (int s = 0; s < n; s++) {
                        bad[s] = 0;
                        first[s] = -1;
                        what[s] = NOT_VERIFIED;
                    }
                } else {
                    final int rr = round;
                    if (cpuFlags != null) {
                        // the receiver's CPU publishes the flag: a store through BAR1 / into mapped host memory
                        for (int s = 0; s < n; s++) {
                            if (status[s] == null) {
                                cpuFlags.cpuStore(4L * s, round);
                            }
                        }
                    }
                    // time passes on the PCIe path until the flags have landed (simulated GPU; CUDA: real time)
                    final MemorySegment flagWords = nicFlags ? flagMemory(g, flagBuf) : cpuFlags.host;
                    g.letTimePass(!nicFlags, () -> flagsLanded(flagWords, status, rr));
                    final ReceiverGpu.Words res = results;
                    for (int s = 0; s < n; s++) {
                        if (status[s] != null) {
                            continue;
                        }
                        final VisKernels.Slot v = awaitSlot(g, consumerStream, res.host, round, s, n);
                        bad[s] = v.bad();
                        first[s] = v.first();
                        what[s] = v.what(c.size());
                    }
                    // the rest of this round's posted writes land before the next round is granted
                    g.landAll();
                }
                // 6. tally, then the results go back to the senders; the next round starts only now
                roundsRun = round;
                for (int s = 0; s < n; s++) {
                    if (status[s] == null && what[s] == NOT_VERIFIED) {
                        continue;
                    }
                    t.checks++;
                    if (status[s] != null) {
                        bad[s] = -1;
                        first[s] = -1;
                        what[s] = "error-completion";
                        t.aborted = "sender " + s + " round " + round + ": " + status[s];
                    }
                    if (!what[s].equals("ok")) {
                        t.fail(round, first[s] == -1 ? -1 : first[s], what[s]);
                    }
                }
                for (int h = 0; h < hosts.size(); h++) {
                    if (firstOf[h + 1] == firstOf[h]) {
                        continue;
                    }
                    final Control ch = hosts.get(h);
                    ch.out.writeByte(Control.RESULT);
                    ch.out.writeInt(round);
                    for (int s = firstOf[h]; s < firstOf[h + 1]; s++) {
                        ch.out.writeLong(bad[s]);
                        ch.out.writeLong(first[s]);
                        ch.out.writeUTF(what[s]);
                    }
                    ch.flush();
                }
                if (roundDone != null) {
                    roundDone.accept(round);
                }
            }
            if (consumerStream != null) {
                if (roundsRun < c.rounds() && t.launchFailures == 0) {
                    // stopped early: let the persistent consumer run through the rounds it still waits for
                    releaseConsumer(g, nicFlags ? null : cpuFlags, flagDma, n, arena);
                }
                if (t.launchFailures == 0) {
                    g.consumer.synchronize(consumerStream, TIMEOUT);
                }
                g.consumer.destroyStream(consumerStream);
            }
            long told = 0;
            for (int h = 0; h < hosts.size(); h++) {
                if (firstOf[h + 1] == firstOf[h]) {
                    continue;
                }
                final Control ch = hosts.get(h);
                ch.out.writeByte(Control.END);
                ch.flush();
                ch.expect(Control.ENDED, TIMEOUT, "ENDED (the sender host's tally)");
                told += ch.in.readLong();
            }
            // teardown: QPs before the MRs they use, MRs before the BAR1 mappings
            for (int s = 0; s < n; s++) {
                dataQp[s].close();
                if (flagQp[s] != null) {
                    flagQp[s].close();
                }
                mr[s].deregister();
                dma[s].close();
            }
            if (readFlush != null) {
                readFlush.close();
            }
            if (flagMr != null) {
                flagMr.deregister();
                flagDma.close();
            }
            for (final ReceiverGpu.Words w : new ReceiverGpu.Words[] {cpuFlags, results}) {
                if (w != null) {
                    w.close();
                }
            }
            if (launchResult != null) {
                g.consumer.free(launchResult);
            }
            cq.close();
            pd.close();
            ctx.close();
            return new VisResult(c, g.gpu.attributes().name(), g.ordering(), g.simulated(), processes, roundsRun,
                t.checks, t.failures, t.firstRound, t.firstPos, t.what, t.stale, t.partial, t.reordered, t.corrupt,
                t.timeouts, t.errorCompletions, t.launchFailures, told, t.aborted);
        } catch (final IOException e) {
            throw new UncheckedIOException("visibility receiver: control channel", e);
        }
    }

    private static boolean anyError(final String[] status) {
        for (final String st : status) {
            if (st != null) {
                return true;
            }
        }
        return false;
    }

    private static MemorySegment flagMemory(final ReceiverGpu g, final DeviceBuffer flagBuf) {
        return g.simulated() ? ((io.gdrkit.gpu.sim.SimDeviceBuffer) flagBuf).memory() : null;
    }

    private static boolean flagsLanded(final MemorySegment flags, final String[] status, final int round) {
        for (int s = 0; s < status.length; s++) {
            if (status[s] == null && flags.get(ValueLayout.JAVA_INT, 4L * s) != round) {
                return false;
            }
        }
        return true;
    }

    /** The receive completions of the WRITE_WITH_IMMs: the NIC's notification; each reposted. */
    private static void awaitImm(final CompletionQueue cq, final QueuePair[] qps, final String[] status,
                                 final int round, final RecvWorkRequest recv, final WorkCompletion[] wc) {
        int missing = 0;
        for (final String st : status) {
            if (st == null) {
                missing++;
            }
        }
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (missing > 0) {
            if (cq.poll(wc) == 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("round " + round + ": " + missing + " WRITE_WITH_IMM receive"
                        + " completion(s) missing after " + TIMEOUT.toSeconds() + " s");
                }
                Thread.onSpinWait();
                continue;
            }
            final int s = (int) wc[0].wrId;
            if (wc[0].status != WcStatus.SUCCESS || wc[0].opcode != WcOpcode.RECV_RDMA_WITH_IMM
                || wc[0].immData != round) {
                if (status[s] == null) {
                    status[s] = "bad receive completion " + wc[0] + " (expected RECV_RDMA_WITH_IMM, imm " + round + ")";
                }
            }
            missing--;
            qps[s].postRecv(recv.wrId(s));
        }
    }

    /** A kernel launched by the CPU after the notification: vis_verify into a device result, copied back. */
    private static VisKernels.Slot verifyLaunched(final ReceiverGpu g, final VisConfig c, final DeviceBuffer result,
                                                  final MemorySegment host, final DeviceBuffer buf, final int round,
                                                  final int sender, final boolean badLaunch) {
        VisKernels.resetVerify(host, 0);
        final GpuStream s = g.work();
        g.consumer.copyHtoD(result, 0, host, 0, VisKernels.VERIFY_BYTES);
        final KernelArgs a = new KernelArgs(5).ptr(buf).u64(c.size()).u32(round).u32(c.patternSeed(sender))
            .ptr(result);
        g.consumer.launch(g.consumer.function("kernels", VisKernels.VERIFY), Dim3.of(64),
            badLaunch ? Dim3.of(2048) : Dim3.of(256), s, a);
        g.consumer.synchronize(s, TIMEOUT);
        g.consumer.copyDtoH(host, 0, result, 0, VisKernels.VERIFY_BYTES);
        return VisKernels.readVerify(host, 0, round);
    }

    private static VisKernels.Slot awaitSlot(final ReceiverGpu g, final GpuStream stream, final MemorySegment res,
                                             final int round, final int sender, final int senders) {
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!VisKernels.ready(res, round, sender, senders)) {
            if (g.consumer.isComplete(stream)) {
                g.consumer.synchronize(stream, TIMEOUT); // throws the kernel's error, if any
                if (VisKernels.ready(res, round, sender, senders)) {
                    break;
                }
                throw new IllegalStateException("round " + round + ": the persistent consumer exited before"
                    + " verifying sender " + sender);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("round " + round + ": no result for sender " + sender + " from the"
                    + " persistent consumer within " + TIMEOUT.toSeconds() + " s");
            }
            Thread.yield();
        }
        return VisKernels.read(res, round, sender, senders);
    }

    /** Publishes "every round" to every flag so a persistent consumer still waiting runs to its end. */
    private static void releaseConsumer(final ReceiverGpu g, final ReceiverGpu.Words cpuFlags,
                                        final GpuDmaMemory flagDma, final int n, final Arena arena) {
        final MemorySegment all = arena.allocate(4L * n, 4);
        for (int s = 0; s < n; s++) {
            all.setAtIndex(ValueLayout.JAVA_INT, s, Integer.MAX_VALUE);
            if (cpuFlags != null) {
                cpuFlags.cpuStore(4L * s, Integer.MAX_VALUE);
            }
        }
        if (flagDma != null) {
            flagDma.dmaWrite(0, all, 0, 4L * n);
        }
        g.landAll();
    }
}
