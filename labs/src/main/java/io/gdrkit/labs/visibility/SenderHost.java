/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import io.gdrkit.labs.visibility.VisConfig.Flag;
import io.gdrkit.labs.visibility.VisConfig.Injection;
import io.gdrkit.labs.visibility.VisConfig.Readback;
import io.gdrkit.labs.visibility.VisConfig.Source;
import io.gdrkit.softnic.fabric.Fabric;
import io.gdrkit.softnic.fabric.TcpFabric;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.Pattern;
import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.gpu.devices.GpuDevices;
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
import java.io.IOException;
import java.io.UncheckedIOException;
import io.gdrkit.core.auth.Token;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.function.Function;

/**
 * One sender process (or, with the in-JVM fabric, one sender thread): hosts a software NIC (simulated) and some of
 * the configuration's senders, each with its own source buffer and QP(s), and follows the receiver's control
 * channel: for every granted round it posts the RDMA WRITE batch (split into WRs, only the last signaled), the
 * flag if the sender publishes it, checks every completion's status, opcode and wr_id, and notifies the receiver.
 * The receiver's verdict for the round comes back and is kept: a failure is reported back to the sender.
 */
public final class SenderHost implements AutoCloseable {
    static final Duration STEP_TIMEOUT = Duration.ofSeconds(60);
    /** Between configurations the receiver sets up its GPU buffers (up to GiBs, filled on the device). */
    static final Duration BETWEEN_CONFIGS = Duration.ofMinutes(10);
    private static final java.util.concurrent.atomic.AtomicInteger HOSTS = new java.util.concurrent.atomic.AtomicInteger();
    private static final int KIND_DATA = 0;
    private static final int KIND_READ = 1;
    private static final int KIND_FLAG = 2;

    private final Control control;
    private final java.net.InetAddress receiverHost;
    private final Function<String, Fabric> fabrics;
    private final SoftNicDriver sharedDriver;
    private final Token token;
    private SoftNicDriver driver;
    private SoftDevice device;

    /**
     * @param fabrics opens the fabric the receiver names in ASSIGN ({@code shm:DIR}, {@code tcp:HOST:PORT}); null
     *                with {@code sharedDriver} (in-JVM fabric: the receiver's own driver hosts the sender's NIC)
     */
    SenderHost(final InetSocketAddress receiver, final Function<String, Fabric> fabrics,
               final SoftNicDriver sharedDriver) {
        this(receiver, fabrics, sharedDriver, Token.fromProcess());
    }

    /** As above, proving {@code token} (the receiver's, from GDRKIT_TOKEN) in the HELLO. */
    SenderHost(final InetSocketAddress receiver, final Function<String, Fabric> fabrics,
               final SoftNicDriver sharedDriver, final Token token) {
        this.token = token;
        final Socket s = new Socket();
        try {
            s.connect(receiver, (int) STEP_TIMEOUT.toMillis());
        } catch (final IOException e) {
            throw new IllegalStateException("cannot reach the visibility receiver at " + receiver + ": " + e.getMessage(),
                e);
        }
        this.control = new Control(s, "receiver " + receiver);
        this.receiverHost = receiver.getAddress();
        this.fabrics = fabrics;
        this.sharedDriver = sharedDriver;
        this.driver = sharedDriver;
    }

    /** Connects to the receiver and serves it until BYE. */
    public static void serve(final InetSocketAddress receiver, final Function<String, Fabric> fabrics) {
        try (SenderHost h = new SenderHost(receiver, fabrics, null)) {
            h.run();
        }
    }

    void run() {
        try {
            control.expect(Control.CHAL, STEP_TIMEOUT, "CHAL (the receiver's nonce)");
            final byte[] nonce = control.in.readNBytes(Token.NONCE_LENGTH);
            if (nonce.length != Token.NONCE_LENGTH) {
                throw new IllegalStateException("the receiver closed the control channel inside its CHAL");
            }
            control.out.writeByte(Control.HELLO);
            control.out.writeInt(Control.VERSION);
            control.out.writeInt(128);
            control.out.write(token.answer(nonce, Control.HELLO_PROOF));
            control.flush();
            final byte answer = control.next(STEP_TIMEOUT, "ASSIGN (the receiver's fabric and this host's LID)");
            if (answer == Control.REFUSED) {
                throw new IllegalStateException("the visibility receiver refused this sender: "
                    + control.in.readUTF());
            }
            if (answer != Control.ASSIGN) {
                throw new IllegalStateException("the receiver sent message " + answer + " instead of ASSIGN");
            }
            final int lid = control.in.readInt();
            final String fabric = control.in.readUTF();
            // the receiver is a peer: what it assigns is checked before use
            if (lid < 0 || lid > TcpFabric.MAX_LID) {
                throw new IllegalStateException("the receiver assigned LID " + lid + " (valid: 0..0x"
                    + Integer.toHexString(TcpFabric.MAX_LID) + ")");
            }
            if (fabric.startsWith("tcp:") && !fabric.substring(4).matches("[0-9]{1,5}")
                || fabric.startsWith("tcp:") && Integer.parseInt(fabric.substring(4)) > 65535) {
                throw new IllegalStateException("the receiver assigned TCP fabric port '" + fabric.substring(4)
                    + "', not 0..65535");
            }
            if (driver == null) {
                driver = SoftNicDriver.launch(new SoftNicContext().progressMode(SoftNicContext.ProgressMode.INVOKER),
                    fabrics.apply(fabric));
            }
            device = driver.addDevice("vis-sender-" + HOSTS.incrementAndGet(), lid);
            if (driver.fabric() instanceof TcpFabric tcp) {
                // the receiver's port is LID 1; its fabric listens on the port ASSIGN named, on the control host
                tcp.connect(1, new InetSocketAddress(receiverHost, Integer.parseInt(fabric.substring(4))));
            }
            while (true) {
                final byte type = control.next(BETWEEN_CONFIGS, "the next configuration (CONFIG or BYE)");
                if (type == Control.BYE) {
                    return;
                }
                if (type != Control.CONFIG) {
                    throw new IllegalStateException("control channel: expected CONFIG or BYE, got message " + type);
                }
                runConfig();
            }
        } catch (final IOException e) {
            throw new UncheckedIOException("visibility sender: control channel", e);
        }
    }

    /** The senders of one configuration that this host runs. */
    private final class Senders implements AutoCloseable {
        final VisConfig c;
        final int first;
        final int count;
        final Arena arena = Arena.ofShared();
        final VerbsContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair[] dataQps;
        final QueuePair[] flagQps;
        final MemorySegment[] src;
        final DeviceBuffer[] srcGpu;
        final GpuDmaMemory[] srcGpuMem;
        final MemoryRegion[] srcMr;
        final MemorySegment words;
        final MemoryRegion wordsMr;
        final long[] dataAddr;
        final int[] dataRkey;
        final long[] flagAddr;
        final int[] flagRkey;
        final GpuDevice sourceGpu;
        /** One stream for every fill: a stream is a thread on the simulator, slow to start and stop. */
        final GpuStream fillStream;
        long failuresTold;

        Senders(final VisConfig c, final int first, final int count, final int receiverLid, final int[] rDataQpn,
                final int[] rFlagQpn, final long[] dataAddr, final int[] dataRkey, final long[] flagAddr,
                final int[] flagRkey) {
            this.c = c;
            this.first = first;
            this.count = count;
            this.dataAddr = dataAddr;
            this.dataRkey = dataRkey;
            this.flagAddr = flagAddr;
            this.flagRkey = flagRkey;
            this.ctx = device.open();
            this.pd = ctx.allocPd();
            this.cq = ctx.createCq(Math.max(64, count * 8));
            this.dataQps = new QueuePair[count];
            this.flagQps = new QueuePair[count];
            this.src = new MemorySegment[count];
            this.srcGpu = new DeviceBuffer[count];
            this.srcGpuMem = new GpuDmaMemory[count];
            this.srcMr = new MemoryRegion[count];
            this.sourceGpu = c.source() == Source.GPU ? GpuDevices.open(sourceGpuSpec(c.gpu())) : null;
            this.fillStream = sourceGpu == null ? null : sourceGpu.createStream();
            // per sender: the flag word written to the receiver (4 B) and the target of a readback READ (4 B)
            this.words = arena.allocate(8L * count, 64);
            this.wordsMr = pd.registerMr(words, AccessFlags.LOCAL_WRITE);
            for (int i = 0; i < count; i++) {
                if (sourceGpu != null) {
                    srcGpu[i] = sourceGpu.alloc(c.size());
                    srcGpuMem[i] = new GpuDmaMemory(sourceGpu, srcGpu[i]);
                    srcMr[i] = pd.registerMr(srcGpuMem[i], AccessFlags.LOCAL_WRITE);
                } else {
                    src[i] = arena.allocate(c.size(), 4096);
                    srcMr[i] = pd.registerMr(src[i], AccessFlags.LOCAL_WRITE);
                }
                final QpInitAttr ia = new QpInitAttr().cqs(cq, cq);
                ia.cap.maxSendWr(c.wrSplit() + 8).maxRecvWr(1).maxInlineData(64);
                dataQps[i] = pd.createQp(ia);
                QpBringUp.toRts(dataQps[i], rDataQpn[i], receiverLid, 0, 0, QpBringUp.rcDefaults());
                if (c.flag() == Flag.SENDER_OTHER_QP) {
                    final QpInitAttr fa = new QpInitAttr().cqs(cq, cq);
                    fa.cap.maxSendWr(8).maxRecvWr(1).maxInlineData(64);
                    flagQps[i] = pd.createQp(fa);
                    QpBringUp.toRts(flagQps[i], rFlagQpn[i], receiverLid, 0, 0, QpBringUp.rcDefaults());
                }
            }
        }

        @Override
        public void close() {
            for (int i = 0; i < count; i++) {
                closeQuietly(dataQps[i]);
                closeQuietly(flagQps[i]);
                if (srcMr[i] != null) {
                    srcMr[i].deregister();
                }
                if (srcGpuMem[i] != null) {
                    srcGpuMem[i].close();
                    sourceGpu.free(srcGpu[i]);
                }
            }
            wordsMr.deregister();
            cq.close();
            pd.close();
            ctx.close();
            if (sourceGpu != null) {
                sourceGpu.destroyStream(fillStream);
                sourceGpu.close();
            }
            arena.close();
        }
    }

    /** The source GPU: another simulated GPU of the same model, or the next CUDA device if there is one. */
    static String sourceGpuSpec(final String receiverGpu) {
        if (receiverGpu.startsWith("sim:")) {
            return receiverGpu;
        }
        final int n = Integer.parseInt(receiverGpu.substring(5));
        final int count = CudaGpu.probe().deviceCount();
        return "cuda:" + (count > 1 ? (n + 1) % count : n);
    }

    private static void closeQuietly(final QueuePair qp) {
        if (qp != null) {
            qp.close();
        }
    }

    private void runConfig() throws IOException {
        final VisConfig c = VisConfig.read(control.in);
        final int first = control.in.readInt();
        final int count = control.in.readInt();
        final int receiverLid = control.in.readInt();
        // the receiver is a peer: check what sizes the arrays and names the connection before using it
        if (count < 1 || count > Math.min(128, c.senders())) {
            throw new IOException("protocol: CONFIG asks for " + count + " senders (1.." + Math.min(128, c.senders())
                + ")");
        }
        if (first < 0 || first > c.senders() - count) {
            throw new IOException("protocol: CONFIG names sender " + first + " of " + c.senders());
        }
        if (receiverLid < 1 || receiverLid > 0xBFFF) {
            throw new IOException("protocol: CONFIG names receiver LID " + receiverLid + " (1..0xBFFF)");
        }
        final int[] rData = new int[count];
        final int[] rFlag = new int[count];
        final long[] dataAddr = new long[count];
        final int[] dataRkey = new int[count];
        final long[] flagAddr = new long[count];
        final int[] flagRkey = new int[count];
        for (int i = 0; i < count; i++) {
            rData[i] = control.in.readInt();
            rFlag[i] = control.in.readInt();
            dataAddr[i] = control.in.readLong();
            dataRkey[i] = control.in.readInt();
            flagAddr[i] = control.in.readLong();
            flagRkey[i] = control.in.readInt();
            // a flag QP number of 0 means the configuration has no flag QP
            if (rData[i] < 2 || rData[i] > 0xFFFFFF || rFlag[i] != 0 && (rFlag[i] < 2 || rFlag[i] > 0xFFFFFF)) {
                throw new IOException("protocol: CONFIG names QP numbers " + rData[i] + "/" + rFlag[i]
                    + " (2..0xFFFFFF; 0 for no flag QP)");
            }
        }
        try (Senders s = new Senders(c, first, count, receiverLid, rData, rFlag, dataAddr, dataRkey, flagAddr,
            flagRkey)) {
            control.out.writeByte(Control.READY);
            control.out.writeInt(device.lid());
            for (int i = 0; i < count; i++) {
                control.out.writeInt(s.dataQps[i].qpNum());
                control.out.writeInt(s.flagQps[i] == null ? 0 : s.flagQps[i].qpNum());
            }
            control.flush();
            final String[] status = new String[count];
            final SendWorkRequest wr = new SendWorkRequest();
            final WorkCompletion[] wcs = new WorkCompletion[16];
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new WorkCompletion();
            }
            while (true) {
                final byte type = control.next(STEP_TIMEOUT, "GRANT or END");
                if (type == Control.END) {
                    control.out.writeByte(Control.ENDED);
                    control.out.writeLong(s.failuresTold);
                    control.flush();
                    return;
                }
                if (type != Control.GRANT) {
                    throw new IllegalStateException("control channel: expected GRANT or END, got message " + type);
                }
                final int round = control.in.readInt();
                round(s, round, wr, wcs, status);
                control.out.writeByte(Control.NOTIFY);
                control.out.writeInt(round);
                for (int i = 0; i < count; i++) {
                    control.out.writeInt(status[i] == null ? 0 : 1);
                    control.out.writeUTF(status[i] == null ? "" : status[i]);
                }
                control.flush();
                control.expect(Control.RESULT, STEP_TIMEOUT, "RESULT of round " + round);
                final int resultRound = control.in.readInt();
                if (resultRound != round) {
                    throw new IllegalStateException("RESULT for round " + resultRound + " while round " + round
                        + " was running");
                }
                for (int i = 0; i < count; i++) {
                    final long bad = control.in.readLong();
                    control.in.readLong();
                    control.in.readUTF();
                    if (bad != 0) {
                        s.failuresTold++;
                    }
                }
            }
        }
    }

    /** One round for every sender of this host; {@code status[i]} null when sender i's completions were right. */
    private void round(final Senders s, final int round, final SendWorkRequest wr, final WorkCompletion[] wcs,
                       final String[] status) {
        final VisConfig c = s.c;
        final int[] expected = new int[s.count];
        for (int i = 0; i < s.count; i++) {
            status[i] = null;
            final int sender = s.first + i;
            final boolean skip = sender == 0 && c.inject().at(Injection.Kind.SKIP_WRITE, round);
            final int rkey = sender == 0 && c.inject().at(Injection.Kind.BAD_RKEY, round)
                ? s.dataRkey[i] ^ 0x5A5A00 : s.dataRkey[i];
            fillSource(s, i, round, c.patternSeed());
            if (!skip) {
                for (int w = 0; w < c.wrSplit(); w++) {
                    final long from = c.size() * w / c.wrSplit();
                    final long to = c.size() * (w + 1) / c.wrSplit();
                    final boolean last = w == c.wrSplit() - 1;
                    wr.clear().opcode(last && c.flag() == Flag.IMM ? WrOpcode.RDMA_WRITE_WITH_IMM : WrOpcode.RDMA_WRITE)
                        .wrId(wrId(round, sender, KIND_DATA, w)).flags(last ? SendFlags.SIGNALED : 0)
                        .sge(s.srcMr[i], from, (int) (to - from)).remote(s.dataAddr[i] + from, rkey);
                    if (last && c.flag() == Flag.IMM) {
                        wr.imm(round);
                    }
                    s.dataQps[i].postSend(wr);
                }
                expected[i]++;
            }
            if (c.flag().senderWritesFlag()) {
                int fence = 0;
                if (c.readback() == Readback.ON) {
                    // a READ of the target buffer: when it completes, the NIC's earlier writes there have landed
                    wr.clear().opcode(WrOpcode.RDMA_READ).wrId(wrId(round, sender, KIND_READ, 0))
                        .flags(SendFlags.SIGNALED).sge(s.wordsMr, 8L * i + 4, 1).remote(s.dataAddr[i], rkey);
                    s.dataQps[i].postSend(wr);
                    expected[i]++;
                    fence = SendFlags.FENCE;
                    if (c.flag() == Flag.SENDER_OTHER_QP) {
                        // a fence orders WRs of one QP only: across QPs the sender waits for the READ itself
                        awaitCompletions(s, round, expected, status, wcs, i);
                        fence = 0;
                    }
                }
                s.words.set(ValueLayout.JAVA_INT, 8L * i, round);
                wr.clear().opcode(WrOpcode.RDMA_WRITE).wrId(wrId(round, sender, KIND_FLAG, 0))
                    .flags(SendFlags.SIGNALED | fence).sge(s.wordsMr, 8L * i, 4)
                    .remote(s.flagAddr[i], s.flagRkey[i]);
                (c.flag() == Flag.SENDER_OTHER_QP ? s.flagQps[i] : s.dataQps[i]).postSend(wr);
                expected[i]++;
            }
        }
        awaitCompletions(s, round, expected, status, wcs, -1);
    }

    /**
     * Polls until every sender's (or only sender {@code only}'s) expected completions are in, checking each. After a
     * sender's error completion its QP is in error: what else it posted completes flushed, carries no news and is
     * neither awaited nor counted.
     */
    private void awaitCompletions(final Senders s, final int round, final int[] expected, final String[] status,
                                  final WorkCompletion[] wcs, final int only) {
        final long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        int total = 0;
        for (final int e : expected) {
            total += e;
        }
        while (only >= 0 ? expected[only] > 0 : total > 0) {
            final int n = s.cq.poll(wcs);
            if (n == 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("round " + round + ": " + total + " completion(s) missing"
                        + " after " + STEP_TIMEOUT.toSeconds() + " s (senders " + s.first + ".." + (s.first + s.count - 1)
                        + ")");
                }
                Thread.onSpinWait();
                continue;
            }
            for (int k = 0; k < n; k++) {
                final WorkCompletion wc = wcs[k];
                final int sender = (int) ((wc.wrId >>> 16) & 0xFFFF);
                final int i = sender - s.first;
                if (i < 0 || i >= s.count) {
                    throw new IllegalStateException("round " + round + ": completion for an unknown sender: " + wc);
                }
                if (expected[i] == 0) {
                    continue; // flushed after this sender's error completion
                }
                expected[i]--;
                total--;
                final String bad = check(wc, round, s.c);
                if (bad != null && status[i] == null) {
                    status[i] = bad;
                }
                if (wc.status != WcStatus.SUCCESS) {
                    total -= expected[i];
                    expected[i] = 0;
                }
            }
        }
    }

    /** What was wrong with a completion, or null: status, opcode and wr_id are all checked. */
    static String check(final WorkCompletion wc, final int round, final VisConfig c) {
        final int kind = (int) ((wc.wrId >>> 12) & 0xF);
        final int index = (int) (wc.wrId & 0xFFF);
        final int wrRound = (int) (wc.wrId >>> 32);
        if (wc.status != WcStatus.SUCCESS) {
            return "error completion " + WcStatus.name(wc.status) + " (wr_id 0x" + Long.toHexString(wc.wrId) + ")";
        }
        final int opcode = kind == KIND_READ ? WcOpcode.RDMA_READ : WcOpcode.RDMA_WRITE;
        final int expectIndex = kind == KIND_DATA ? c.wrSplit() - 1 : 0;
        if (wc.opcode != opcode || wrRound != round || index != expectIndex) {
            return "unexpected completion " + wc + " (expected opcode " + opcode + ", round " + round + ", WR "
                + expectIndex + ")";
        }
        return null;
    }

    static long wrId(final int round, final int sender, final int kind, final int index) {
        return ((long) round << 32) | ((long) sender << 16) | ((long) kind << 12) | index;
    }

    private static void fillSource(final Senders s, final int i, final int round, final int seed) {
        if (s.sourceGpu == null) {
            Pattern.fill(s.src[i], 0, s.c.size(), 0, round, seed);
            return;
        }
        s.sourceGpu.launch(s.sourceGpu.function("kernels", "fill_pattern"), Dim3.of(64), Dim3.of(256), s.fillStream,
            new KernelArgs(4).ptr(s.srcGpu[i]).u64(s.c.size()).u32(round).u32(seed));
        s.sourceGpu.synchronize(s.fillStream, STEP_TIMEOUT);
    }

    @Override
    public void close() {
        control.close();
        if (sharedDriver == null && driver != null) {
            driver.close();
        }
    }
}
