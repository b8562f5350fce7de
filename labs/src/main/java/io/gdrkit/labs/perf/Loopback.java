/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import io.gdrkit.softnic.fabric.FaultInjector;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.softnic.SoftDevice;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionChannel;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsContext;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Two software NICs on one in-JVM fabric with {@code numQps} connected RC QP pairs between them, one buffer
 * and MR per side, and a send and a receive CQ per side shared by all QPs of that side.
 */
public final class Loopback implements AutoCloseable {
    /** Header every tool prints before device or result lines: the NIC is not hardware. */
    public static final String SIMULATED_HEADER = "# software NIC (simulated), in-JVM fabric";

    public final SoftNicDriver driver;
    public final boolean invoker;
    private final GpuDevice gpu;
    private final SoftNicContext.ProgressMode mode;
    /** In OWN_DEVICE mode: the "server" thread driving NIC b, as perftest's server process would. */
    private Thread server;
    private volatile boolean running = true;
    public final Side a;
    public final Side b;
    private final Arena arena = Arena.ofShared();

    /** One end: device, context, PD, CQs, QPs and a registered buffer. */
    public static final class Side {
        public final SoftDevice dev;
        final VerbsContext ctx;
        public final ProtectionDomain pd;
        public final CompletionQueue scq;
        public final CompletionQueue rcq;
        /** The receive CQ's completion channel (send_lat --events waits on it). */
        public final CompletionChannel channel;
        public final QueuePair[] qps;
        public MemorySegment buf;
        public MemoryRegion mr;
        DeviceBuffer gpuBuffer;
        GpuDmaMemory gpuMemory;

        Side(final SoftDevice dev, final int numQps, final int cqe) {
            this.dev = dev;
            this.ctx = dev.open();
            this.pd = ctx.allocPd();
            this.scq = ctx.createCq(cqe);
            this.channel = ctx.createCompChannel();
            this.rcq = ctx.createCq(cqe, channel, 0);
            this.qps = new QueuePair[numQps];
        }
    }

    /**
     * @param mtuBytes 256..4096 selects an IB path MTU; larger powers of two up to 1 MiB a software MTU
     */
    public Loopback(final SoftNicContext.ProgressMode mode, final int numQps, final long bufBytes, final int txDepth,
             final int rxDepth, final int maxInline, final int mtuBytes) {
        this(mode, numQps, bufBytes, txDepth, rxDepth, maxInline, mtuBytes, null);
    }

    public Loopback(final SoftNicContext.ProgressMode mode, final int numQps, final long bufBytes, final int txDepth,
             final int rxDepth, final int maxInline, final int mtuBytes, final FaultInjector faults) {
        this(mode, numQps, bufBytes, txDepth, rxDepth, maxInline, mtuBytes, faults, null);
    }

    /**
     * The pair a perf run needs: QPs, depths, inline size, MTU and progress mode from the concluded {@code cfg}, a
     * registered buffer of twice {@link PerfConfig#bufferBytes()} per side.
     *
     * @param faults a fault injector for the fabric's links, or null; corruption turns the link CRC on
     * @param gpu    when not null, each side's MR is GPU memory of this GPU
     */
    public Loopback(final PerfConfig cfg, final FaultInjector faults, final GpuDevice gpu) {
        this(cfg.progress(), cfg.numQps(), 2 * cfg.bufferBytes(), cfg.txDepth(), cfg.rxDepth(), cfg.inlineSize(),
            cfg.mtu(), faults, gpu);
    }

    /**
     * @param faults a fault injector for the fabric's links, or null; corruption turns the link CRC on
     * @param gpu    when not null, each side's MR is GPU memory of this GPU (perftest's --use_cuda); the host
     *               buffers stay allocated but the NICs read and write the GPU
     */
    public Loopback(final SoftNicContext.ProgressMode mode, final int numQps, final long bufBytes, final int txDepth,
             final int rxDepth, final int maxInline, final int mtuBytes, final FaultInjector faults,
             final GpuDevice gpu) {
        this.gpu = gpu;
        final SoftNicContext ctx = new SoftNicContext().progressMode(mode);
        if (faults != null) {
            ctx.linkHook(faults).linkCrc(faults.config().corrupt() > 0);
        }
        driver = SoftNicDriver.launch(ctx);
        invoker = mode == SoftNicContext.ProgressMode.INVOKER;
        this.mode = mode;
        try {
            // Room for every WQE of every QP to complete signaled, so a CQ can never overflow.
            final int cqe = Math.max(numQps * Math.max(txDepth, rxDepth) + 16, 64);
            a = new Side(driver.addDevice("soft0"), numQps, cqe);
            b = new Side(driver.addDevice("soft1"), numQps, cqe);
            final QpAttr attr = QpBringUp.rcDefaults();
            if (mtuBytes <= 4096) {
                attr.pathMtu(Mtu.fromBytes(mtuBytes));
            } else {
                attr.softwareMtu(mtuBytes);
            }
            for (final Side s : new Side[] {a, b}) {
                s.buf = arena.allocate(Math.max(bufBytes, 64), 4096);
                if (gpu != null) {
                    s.gpuBuffer = gpu.alloc(Math.max(bufBytes, 64));
                    s.gpuMemory = new GpuDmaMemory(gpu, s.gpuBuffer);
                    s.mr = s.pd.registerMr(s.gpuMemory, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                } else {
                    s.mr = s.pd.registerMr(s.buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                }
            }
            for (int i = 0; i < numQps; i++) {
                final QpInitAttr ia = new QpInitAttr();
                ia.cap.maxSendWr(txDepth).maxRecvWr(rxDepth).maxInlineData(maxInline);
                a.qps[i] = a.pd.createQp(ia.cqs(a.scq, a.rcq));
                final QpInitAttr ib = new QpInitAttr();
                ib.cap.maxSendWr(txDepth).maxRecvWr(rxDepth).maxInlineData(maxInline);
                b.qps[i] = b.pd.createQp(ib.cqs(b.scq, b.rcq));
                QpBringUp.connect(a.qps[i], a.dev.lid(), 1000 + i, b.qps[i], b.dev.lid(), 2000 + i, attr);
            }
        } catch (final RuntimeException e) {
            close();
            throw e;
        }
        if (mode == SoftNicContext.ProgressMode.OWN_DEVICE) {
            final SoftDevice bDev = b.dev;
            server = Thread.ofPlatform().daemon(true).name("gdrkit-perf-server").start(() -> {
                while (running) {
                    if (bDev.doWork() == 0) {
                        Thread.onSpinWait();
                    }
                }
            });
        }
    }

    /** Advances the NICs when the caller drives progress; dedicated NIC threads need nothing. */
    public void progress() {
        if (invoker) {
            driver.progress();
        } else if (mode == SoftNicContext.ProgressMode.OWN_DEVICE) {
            a.dev.doWork();
        }
    }

    @Override
    public void close() {
        running = false;
        if (server != null) {
            try {
                server.join(10_000);
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        driver.close();
        if (gpu != null) {
            for (final Side s : new Side[] {a, b}) {
                if (s != null && s.gpuMemory != null) {
                    s.gpuMemory.close();
                    gpu.free(s.gpuBuffer);
                }
            }
        }
        arena.close();
    }
}
