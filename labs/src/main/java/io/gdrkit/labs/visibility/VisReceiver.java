/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import io.gdrkit.labs.visibility.VisConfig.Consumer;
import io.gdrkit.labs.visibility.VisConfig.Flag;
import io.gdrkit.labs.visibility.VisConfig.Injection;
import io.gdrkit.labs.visibility.VisConfig.Readback;
import io.gdrkit.gdr.gate.RdmaReadFlush;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.VisKernels;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.softnic.SoftDevice;
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

    /** The median of the first {@code count} values, in microseconds; NaN when there are none. */
    static double medianMicros(final long[] nanos, final int count) {
        if (count == 0) {
            return Double.NaN;
        }
        final long[] sorted = java.util.Arrays.copyOf(nanos, count);
        java.util.Arrays.sort(sorted);
        final double mid = (count & 1) == 1 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2.0;
        return mid / 1_000.0;
    }

    VisResult run(final VisConfig c, final String processes, final IntConsumer roundDone) {
        try (ReceiverGpu g = ReceiverGpu.open(c, c.size() * c.senders());
             Arena arena = Arena.ofShared()) {
            final ConfigRun r = new ConfigRun(c, g, arena);
            r.connectSenders();
            r.launchConsumer();
            for (int round = 1; round <= c.rounds() && r.tally.aborted == null; round++) {
                r.runRound(round);
                if (roundDone != null) {
                    roundDone.accept(round);
                }
            }
            final long told = r.finish();
            r.tearDown();
            return r.result(processes, told);
        } catch (final IOException e) {
            throw new UncheckedIOException("visibility receiver: control channel", e);
        }
    }

    /**
     * One configuration on the receiver: the verbs objects, the receive buffers with their MRs and QPs (one per
     * sender), the flags, the consumer and the tally. Made in the order the steps run: buffers (constructor),
     * {@link #connectSenders}, {@link #launchConsumer}, {@link #runRound} per round, {@link #finish},
     * {@link #tearDown}.
     */
    private final class ConfigRun {
        /** Wall time of each round (grant to results sent) and of its readback step, for the medians reported. */
        private final long[] roundNanos;
        private final long[] readbackNanos;
        private final VisConfig c;
        private final ReceiverGpu g;
        private final Arena arena;
        private final int n;
        /** The senders' NICs write the flags into GPU memory (else the receiver's CPU stores them, or none). */
        private final boolean nicFlags;
        /** Host {@code h} serves senders {@code firstOf[h]} (inclusive) to {@code firstOf[h + 1]} (exclusive). */
        private final int[] firstOf;

        private final VerbsContext ctx;
        private final ProtectionDomain pd;
        private final CompletionQueue cq;
        private final DeviceBuffer[] data;
        private final GpuDmaMemory[] dma;
        private final MemoryRegion[] mr;
        private final QueuePair[] dataQp;
        private final QueuePair[] flagQp;
        private final DeviceBuffer flagBuf;
        private final GpuDmaMemory flagDma;
        private final MemoryRegion flagMr;
        private final ReceiverGpu.Words cpuFlags;
        private final RdmaReadFlush readFlush;
        private final RecvWorkRequest recv = new RecvWorkRequest(0);

        private final Tally tally = new Tally();
        private int roundsRun;
        private GpuStream consumerStream;
        private ReceiverGpu.Words results;
        private DeviceBuffer launchResult;
        private MemorySegment verifyHost;
        /** The previous round's pattern, copied into every receive buffer before a round (refill only). */
        private final MemorySegment refillHost;

        /** This round's outcome per sender: the error completion (null: none), then the consumer's verdict. */
        private final String[] status;
        private final long[] bad;
        private final long[] first;
        private final String[] what;
        private final WorkCompletion[] wc = {new WorkCompletion()};

        /** Sets up the buffers: one filled receive buffer, MR and QP(s) per sender, then the flags. */
        ConfigRun(final VisConfig c, final ReceiverGpu g, final Arena arena) {
            this.c = c;
            this.g = g;
            this.arena = arena;
            this.n = c.senders();
            this.roundNanos = new long[c.rounds()];
            this.readbackNanos = new long[c.rounds()];
            this.ctx = device.open();
            this.pd = ctx.allocPd();
            this.cq = ctx.createCq(Math.max(64, 4 * n));
            this.data = new DeviceBuffer[n];
            this.dma = new GpuDmaMemory[n];
            this.mr = new MemoryRegion[n];
            this.dataQp = new QueuePair[n];
            this.flagQp = new QueuePair[n];
            for (int s = 0; s < n; s++) {
                setUpSender(s);
            }
            // flags: GPU memory the senders' NICs write, or words the receiver's CPU stores
            this.nicFlags = c.flag().senderWritesFlag();
            this.flagBuf = nicFlags ? g.gpu.alloc(4L * n) : null;
            if (nicFlags) {
                g.gpu.copyHtoD(flagBuf, 0, arena.allocate(4L * n), 0, 4L * n);
                this.flagDma = new GpuDmaMemory(g.gpu, flagBuf);
                this.flagMr = pd.registerMr(flagDma, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            } else {
                this.flagDma = null;
                this.flagMr = null;
            }
            this.cpuFlags = nicFlags || c.consumer() == Consumer.LAUNCH ? null : g.words(4L * n);
            this.readFlush = !nicFlags && c.readback() == Readback.ON ? new RdmaReadFlush(ctx, pd) : null;
            // the senders: a contiguous share per host
            this.firstOf = new int[hosts.size() + 1];
            for (int h = 0; h <= hosts.size(); h++) {
                firstOf[h] = (int) ((long) n * h / hosts.size());
            }
            // pageable host memory, as a plain cudaMemcpy from a CPU buffer uses
            this.refillHost = c.refill() ? arena.allocate(c.size(), 256) : null;
            this.status = new String[n];
            this.bad = new long[n];
            this.first = new long[n];
            this.what = new String[n];
        }

        private void setUpSender(final int s) {
            data[s] = g.gpu.alloc(c.size());
            g.fill(data[s], 0, c.patternSeed());
            dma[s] = new GpuDmaMemory(g.gpu, data[s]);
            // mapping sets SYNC_MEMOPS, as NCCL does; the experiment's axis decides what the buffer keeps
            g.gpu.setSyncMemops(data[s], c.syncMemops());
            mr[s] = pd.registerMr(dma[s], AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
            final QpInitAttr ia = new QpInitAttr().cqs(cq, cq);
            ia.cap.maxSendWr(4).maxRecvWr(4).maxInlineData(0);
            dataQp[s] = pd.createQp(ia);
            if (c.flag() == Flag.SENDER_OTHER_QP) {
                flagQp[s] = pd.createQp(ia);
            }
        }

        /** Whether host {@code h} has any senders (a host with none takes no part in the configuration). */
        private boolean serves(final int h) {
            return firstOf[h + 1] > firstOf[h];
        }

        /** CONFIG to every host, READY back, then the QPs are brought up both ways. */
        void connectSenders() throws IOException {
            for (int h = 0; h < hosts.size(); h++) {
                if (serves(h)) {
                    sendConfig(hosts.get(h), firstOf[h], firstOf[h + 1]);
                }
            }
            for (int h = 0; h < hosts.size(); h++) {
                if (serves(h)) {
                    awaitReady(hosts.get(h), firstOf[h], firstOf[h + 1]);
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
        }

        private void sendConfig(final Control ch, final int from, final int to) throws IOException {
            ch.out.writeByte(Control.CONFIG);
            c.write(ch.out);
            ch.out.writeInt(from);
            ch.out.writeInt(to - from);
            ch.out.writeInt(device.lid());
            for (int s = from; s < to; s++) {
                ch.out.writeInt(dataQp[s].qpNum());
                ch.out.writeInt(flagQp[s] == null ? 0 : flagQp[s].qpNum());
                ch.out.writeLong(mr[s].address());
                ch.out.writeInt(mr[s].rkey());
                ch.out.writeLong(nicFlags ? flagMr.address() + 4L * s : 0);
                ch.out.writeInt(nicFlags ? flagMr.rkey() : 0);
            }
            ch.flush();
        }

        private void awaitReady(final Control ch, final int from, final int to) throws IOException {
            ch.expect(Control.READY, TIMEOUT, "READY (the sender host's QPs)");
            final int lid = ch.in.readInt();
            for (int s = from; s < to; s++) {
                final int dq = ch.in.readInt();
                final int fq = ch.in.readInt();
                QpBringUp.toRts(dataQp[s], dq, lid, 0, 0, QpBringUp.rcDefaults());
                if (flagQp[s] != null) {
                    QpBringUp.toRts(flagQp[s], fq, lid, 0, 0, QpBringUp.rcDefaults());
                }
            }
        }

        /** The persistent consumer, if the configuration has one; the result buffer of a launched one. */
        void launchConsumer() {
            if (c.consumer() == Consumer.PERSISTENT) {
                launchPersistentConsumer();
            }
            launchResult = c.consumer() == Consumer.LAUNCH ? g.consumer.alloc(VisKernels.VERIFY_BYTES) : null;
            verifyHost = arena.allocate(VisKernels.VERIFY_BYTES, 8);
        }

        /** One kernel, running before the first byte arrives and across all rounds. */
        private void launchPersistentConsumer() {
            final DeviceBuffer table = g.consumer.alloc(8L * n);
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
            a.ptr(table).u32(n).u64(c.size()).u32(c.rounds()).u32(c.patternSeed()).u64(POLL_TIMEOUT_NS);
            results.addTo(a);
            try {
                g.consumer.launch(g.consumer.function("kernels", VisKernels.Poll.valueOf(c.poll().name()).kernel()),
                    // every block must be resident: simulated blocks hold one of a few SM workers each, and
                    // blocks loop over senders when there are fewer blocks than senders
                    Dim3.of(Math.min(n, g.simulated() ? 2 : 128)),
                    c.inject().at(Injection.Kind.BAD_LAUNCH, 1) ? Dim3.of(2048) : Dim3.of(256), consumerStream, a);
            } catch (final GpuException e) {
                tally.fail(1, -1, "launch-failed");
                tally.aborted = "the persistent consumer did not launch: " + e.getMessage();
            }
        }

        /** One round, steps 1 to 6; the results are back with the senders when it returns. */
        void runRound(final int round) throws IOException {
            if (c.refill()) {
                refill(round);
            }
            final long start = System.nanoTime();
            grant(round);
            collectNotifications(round);
            if (c.flag() == Flag.IMM) {
                awaitImm(round);
            }
            final long readbackStart = System.nanoTime();
            readBack();
            readbackNanos[round - 1] = System.nanoTime() - readbackStart;
            // 5. the consumer verifies on the device and returns a small result
            if (c.consumer() == Consumer.LAUNCH) {
                verifyByLaunch(round);
            } else if (anyError()) {
                // an error completion stops the configuration: the consumer's flags for this round are not
                // all coming, so nothing of this round is verified (the errored senders are counted below)
                for (int s = 0; s < n; s++) {
                    bad[s] = 0;
                    first[s] = -1;
                    what[s] = NOT_VERIFIED;
                }
            } else {
                verifyByPersistent(round);
            }
            // 6. tally, then the results go back to the senders; the next round starts only now
            roundsRun = round;
            count(round);
            sendResults(round);
            roundNanos[round - 1] = System.nanoTime() - start;
        }

        /**
         * 0. (refill) the receiver's CPU puts the previous round's pattern back into every receive buffer with a
         * synchronous copy; the senders' NICs overwrite it in this round. Without SYNC_MEMOPS the copy may still be
         * landing when the NIC writes (CUDA promises it complete only in stream order), and then the consumer sees
         * the previous round: stale.
         */
        private void refill(final int round) {
            Pattern.fill(refillHost, 0, c.size(), 0, round - 1, c.patternSeed());
            for (int s = 0; s < n; s++) {
                g.gpu.copyHtoD(data[s], 0, refillHost, 0, c.size());
            }
        }

        /** 1. grant the round to every host. */
        private void grant(final int round) throws IOException {
            for (int h = 0; h < hosts.size(); h++) {
                if (serves(h)) {
                    hosts.get(h).out.writeByte(Control.GRANT);
                    hosts.get(h).out.writeInt(round);
                    hosts.get(h).flush();
                }
            }
        }

        /** 2-3. they write, check their completions and notify: one error completion (or none) per sender. */
        private void collectNotifications(final int round) throws IOException {
            for (int h = 0; h < hosts.size(); h++) {
                if (!serves(h)) {
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
        }

        /** 4. OFF / ON / FLUSH, by the receiver's CPU (with a sender-published flag, the sender did ON). */
        private void readBack() {
            if (nicFlags) {
                return;
            }
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

        /** A verify kernel launched by the CPU per sender that did not report an error completion. */
        private void verifyByLaunch(final int round) {
            for (int s = 0; s < n; s++) {
                if (status[s] != null) {
                    continue;
                }
                try {
                    final VisKernels.Slot v = verifyLaunched(round, s,
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
        }

        /** The flags are published (or have landed), then the persistent consumer's slots are read. */
        private void verifyByPersistent(final int round) {
            if (cpuFlags != null) {
                // the receiver's CPU publishes the flag: a store through BAR1 / into mapped host memory
                for (int s = 0; s < n; s++) {
                    if (status[s] == null) {
                        cpuFlags.publishFlag(s, round);
                    }
                }
            }
            // time passes on the PCIe path until the flags have landed (simulated GPU; CUDA: real time)
            final MemorySegment flagWords = nicFlags ? flagMemory() : cpuFlags.host;
            g.letTimePass(!nicFlags, () -> flagsLanded(flagWords, round));
            for (int s = 0; s < n; s++) {
                if (status[s] != null) {
                    continue;
                }
                final VisKernels.Slot v = awaitSlot(round, s);
                bad[s] = v.bad();
                first[s] = v.first();
                what[s] = v.what(c.size());
            }
            // the rest of this round's posted writes land before the next round is granted
            g.landAll();
        }

        private void count(final int round) {
            for (int s = 0; s < n; s++) {
                if (status[s] == null && what[s] == NOT_VERIFIED) {
                    continue;
                }
                tally.checks++;
                if (status[s] != null) {
                    bad[s] = -1;
                    first[s] = -1;
                    what[s] = "error-completion";
                    tally.aborted = "sender " + s + " round " + round + ": " + status[s];
                }
                if (!what[s].equals("ok")) {
                    tally.fail(round, first[s] == -1 ? -1 : first[s], what[s]);
                }
            }
        }

        private void sendResults(final int round) throws IOException {
            for (int h = 0; h < hosts.size(); h++) {
                if (!serves(h)) {
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
        }

        /** Lets the persistent consumer end, then END to every host; returns the sum of their ENDED tallies. */
        long finish() throws IOException {
            if (consumerStream != null) {
                if (roundsRun < c.rounds() && tally.launchFailures == 0) {
                    // stopped early: let the persistent consumer run through the rounds it still waits for
                    releaseConsumer();
                }
                if (tally.launchFailures == 0) {
                    g.consumer.synchronize(consumerStream, TIMEOUT);
                }
                g.consumer.destroyStream(consumerStream);
            }
            long told = 0;
            for (int h = 0; h < hosts.size(); h++) {
                if (!serves(h)) {
                    continue;
                }
                final Control ch = hosts.get(h);
                ch.out.writeByte(Control.END);
                ch.flush();
                ch.expect(Control.ENDED, TIMEOUT, "ENDED (the sender host's tally)");
                told += ch.in.readLong();
            }
            return told;
        }

        /**
         * Teardown: QPs before the MRs they use, MRs before the BAR1 mappings. Only after a clean {@link #finish};
         * when a step throws, what is left goes with the GPU.
         */
        void tearDown() {
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
        }

        VisResult result(final String processes, final long told) {
            final Tally t = tally;
            return new VisResult(c, g.gpu.attributes().name(), g.ordering(), g.simulated(), processes, roundsRun,
                t.checks, t.failures, t.firstRound, t.firstPos, t.what, t.stale, t.partial, t.reordered, t.corrupt,
                t.timeouts, t.errorCompletions, t.launchFailures, told, t.aborted,
                medianMicros(roundNanos, roundsRun), medianMicros(readbackNanos, roundsRun));
        }

        private boolean anyError() {
            for (final String st : status) {
                if (st != null) {
                    return true;
                }
            }
            return false;
        }

        private MemorySegment flagMemory() {
            return g.simulated() ? ((io.gdrkit.gpu.sim.SimDeviceBuffer) flagBuf).memory() : null;
        }

        private boolean flagsLanded(final MemorySegment flags, final int round) {
            for (int s = 0; s < status.length; s++) {
                if (status[s] == null && flags.get(ValueLayout.JAVA_INT, 4L * s) != round) {
                    return false;
                }
            }
            return true;
        }

        /** The receive completions of the WRITE_WITH_IMMs: the NIC's notification; each reposted. */
        private void awaitImm(final int round) {
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
                        status[s] = "bad receive completion " + wc[0] + " (expected RECV_RDMA_WITH_IMM, imm " + round
                            + ")";
                    }
                }
                missing--;
                dataQp[s].postRecv(recv.wrId(s));
            }
        }

        /** A kernel launched by the CPU after the notification: vis_verify into a device result, copied back. */
        private VisKernels.Slot verifyLaunched(final int round, final int sender, final boolean badLaunch) {
            VisKernels.resetVerify(verifyHost, 0);
            final GpuStream s = g.work();
            g.consumer.copyHtoD(launchResult, 0, verifyHost, 0, VisKernels.VERIFY_BYTES);
            final KernelArgs a = new KernelArgs(5).ptr(data[sender]).u64(c.size()).u32(round)
                .u32(c.patternSeed()).ptr(launchResult);
            g.consumer.launch(g.consumer.function("kernels", VisKernels.VERIFY), Dim3.of(64),
                badLaunch ? Dim3.of(2048) : Dim3.of(256), s, a);
            g.consumer.synchronize(s, TIMEOUT);
            g.consumer.copyDtoH(verifyHost, 0, launchResult, 0, VisKernels.VERIFY_BYTES);
            return VisKernels.readVerify(verifyHost, 0, round);
        }

        private VisKernels.Slot awaitSlot(final int round, final int sender) {
            final MemorySegment res = results.host;
            final long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (!VisKernels.ready(res, round, sender, n)) {
                if (g.consumer.isComplete(consumerStream)) {
                    g.consumer.synchronize(consumerStream, TIMEOUT); // throws the kernel's error, if any
                    if (VisKernels.ready(res, round, sender, n)) {
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
            return VisKernels.read(res, round, sender, n);
        }

        /** Publishes "every round" to every flag so a persistent consumer still waiting runs to its end. */
        private void releaseConsumer() {
            final MemorySegment all = arena.allocate(4L * n, 4);
            for (int s = 0; s < n; s++) {
                all.setAtIndex(ValueLayout.JAVA_INT, s, Integer.MAX_VALUE);
                if (cpuFlags != null) {
                    cpuFlags.publishFlag(s, Integer.MAX_VALUE);
                }
            }
            if (flagDma != null) {
                flagDma.dmaWrite(0, all, 0, 4L * n);
            }
            g.landAll();
        }
    }
}
