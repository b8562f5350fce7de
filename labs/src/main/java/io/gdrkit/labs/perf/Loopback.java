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
 * and MR per side, and a send and a receive CQ per side shared by all QPs of that side. {@link #overNative} builds
 * the same pair on a real device of the native provider (two contexts on one port, as perftest's loopback on one
 * HCA): the hardware progresses itself, so {@link #progress()} does nothing there.
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
    /** The native pair's host buffers (null for software NICs, whose buffers are in {@link #arena}). */
    private Arena nativeArena;

    /** One end: device, context, PD, CQs, QPs and a registered buffer. */
    public static final class Side {
        /** The software NIC; null on a native device. */
        public final SoftDevice dev;
        /** The device's name (for what a wait names). */
        public final String name;
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
        io.gdrkit.labs.provider.NativeGpuMr.Registration gpuRegistration;

        Side(final SoftDevice dev, final int numQps, final int cqe) {
            this.dev = dev;
            this.name = dev.name();
            this.ctx = dev.open();
            this.pd = ctx.allocPd();
            this.scq = ctx.createCq(cqe);
            this.channel = ctx.createCompChannel();
            this.rcq = ctx.createCq(cqe, channel, 0);
            this.qps = new QueuePair[numQps];
        }

        /** A native side: no completion channel (perf's -e is for the software NIC). */
        Side(final VerbsContext ctx, final int numQps, final int cqe) {
            this.dev = null;
            this.name = ctx.device().name();
            this.ctx = ctx;
            this.pd = ctx.allocPd();
            this.scq = ctx.createCq(cqe);
            this.channel = null;
            this.rcq = ctx.createCq(cqe);
            this.qps = new QueuePair[numQps];
        }

        /** Closes what a native side created, in reverse order (the software NIC's driver does it for its own). */
        void closeNative() {
            for (final QueuePair q : qps) {
                if (q != null) {
                    q.close();
                }
            }
            if (mr != null) {
                mr.deregister();
            }
            rcq.close();
            scq.close();
            pd.close();
            ctx.close();
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
            cfg.mtu(), faults, gpu, Loopback::connectDirect, false);
    }

    /** As {@link #Loopback(PerfConfig, FaultInjector, GpuDevice)}, each QP pair connected by {@code connector}. */
    public Loopback(final PerfConfig cfg, final FaultInjector faults, final GpuDevice gpu, final Connector connector) {
        this(cfg.progress(), cfg.numQps(), 2 * cfg.bufferBytes(), cfg.txDepth(), cfg.rxDepth(), cfg.inlineSize(),
            cfg.mtu(), faults, gpu, connector, false);
    }

    /**
     * As {@link #Loopback(PerfConfig, FaultInjector, GpuDevice, Connector)}; with {@code requesterOnHost} side a's
     * buffer (the requester's: the source of its WRITEs and SENDs) stays in host memory and only side b's is GPU
     * memory, as perftest with {@code --use_cuda} on the server only. The host MR is pinned for the GPU
     * ({@link GpuDevice#dmaTarget()}{@code .nicPinHost}, {@code cuMemHostRegister} on a CUDA GPU).
     */
    public Loopback(final PerfConfig cfg, final FaultInjector faults, final GpuDevice gpu, final Connector connector,
                    final boolean requesterOnHost) {
        this(cfg.progress(), cfg.numQps(), 2 * cfg.bufferBytes(), cfg.txDepth(), cfg.rxDepth(), cfg.inlineSize(),
            cfg.mtu(), faults, gpu, connector, requesterOnHost);
    }

    /** The long form with {@code requesterOnHost} (see {@link #Loopback(PerfConfig, FaultInjector, GpuDevice, Connector, boolean)}). */
    public Loopback(final SoftNicContext.ProgressMode mode, final int numQps, final long bufBytes, final int txDepth,
                    final int rxDepth, final int maxInline, final int mtuBytes, final FaultInjector faults,
                    final GpuDevice gpu, final boolean requesterOnHost) {
        this(mode, numQps, bufBytes, txDepth, rxDepth, maxInline, mtuBytes, faults, gpu, Loopback::connectDirect,
            requesterOnHost);
    }

    /**
     * @param faults a fault injector for the fabric's links, or null; corruption turns the link CRC on
     * @param gpu    when not null, each side's MR is GPU memory of this GPU (perftest's --use_cuda); the host
     *               buffers stay allocated but the NICs read and write the GPU
     */
    public Loopback(final SoftNicContext.ProgressMode mode, final int numQps, final long bufBytes, final int txDepth,
             final int rxDepth, final int maxInline, final int mtuBytes, final FaultInjector faults,
             final GpuDevice gpu) {
        this(mode, numQps, bufBytes, txDepth, rxDepth, maxInline, mtuBytes, faults, gpu, Loopback::connectDirect,
            false);
    }

    /**
     * Both sides' buffers in host memory, with every host MR registered on the pair pinned for {@code gpu}
     * ({@link GpuDevice#dmaTarget()}{@code .nicPinHost}), as a GPUDirect-capable stack pins the memory a NIC
     * registers: a WRITE from side a's buffer into an MR over {@code gpu}'s memory is then one copy-engine read of
     * the source where it lies (a CUDA GPU; a simulated one pins nothing). gpu-path's GDR row runs on it.
     */
    public static Loopback hostPinnedFor(final GpuDevice gpu, final SoftNicContext.ProgressMode mode, final int numQps,
                                         final long bufBytes, final int txDepth, final int rxDepth, final int maxInline,
                                         final int mtuBytes) {
        return new Loopback(mode, numQps, bufBytes, txDepth, rxDepth, maxInline, mtuBytes, null, null,
            Loopback::connectDirect, false, gpu);
    }

    private Loopback(final SoftNicContext.ProgressMode mode, final int numQps, final long bufBytes, final int txDepth,
             final int rxDepth, final int maxInline, final int mtuBytes, final FaultInjector faults,
             final GpuDevice gpu, final Connector connector, final boolean requesterOnHost) {
        this(mode, numQps, bufBytes, txDepth, rxDepth, maxInline, mtuBytes, faults, gpu, connector, requesterOnHost,
            gpu);
    }

    /** {@code pinFor}: the GPU host MRs are pinned for (null: none); {@code gpu}: the GPU the sides' MRs are on. */
    private Loopback(final SoftNicContext.ProgressMode mode, final int numQps, final long bufBytes, final int txDepth,
             final int rxDepth, final int maxInline, final int mtuBytes, final FaultInjector faults,
             final GpuDevice gpu, final Connector connector, final boolean requesterOnHost, final GpuDevice pinFor) {
        this.gpu = gpu;
        final SoftNicContext ctx = new SoftNicContext().progressMode(mode);
        if (faults != null) {
            ctx.linkHook(faults).linkCrc(faults.config().corrupt() > 0);
        }
        if (pinFor != null) {
            // host MRs are pinned for the GPU, as a GPUDirect-capable stack pins registered memory: the GPU's copy
            // engine then reads a referenced source where it is (a CUDA GPU; others pin nothing)
            ctx.hostPinner(pinFor.dmaTarget()::nicPinHost);
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
                if (gpu != null && !(requesterOnHost && s == a)) {
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
                connector.connect(a, b, i, attr);
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

    private Loopback(final GpuDevice gpu, final Side a, final Side b) {
        this.gpu = gpu;
        this.driver = null;
        this.invoker = false;
        this.mode = SoftNicContext.ProgressMode.DEDICATED; // the hardware moves the bytes
        this.a = a;
        this.b = b;
    }

    /** What registering one side's GPU memory with a native device did (null for host memory). */
    public io.gdrkit.labs.provider.NativeGpuMr.Registration gpuRegistration() {
        return a.gpuRegistration;
    }

    /**
     * The pair on a native device: two contexts on {@code device}'s port {@code port}, QPs connected through
     * {@code connector} (QpBringUp with LIDs, or a GRH on a RoCE port), buffers registered in host memory or, with
     * {@code gpu}, in GPU memory through {@link io.gdrkit.labs.provider.NativeGpuMr} (DMA-BUF, else peermem).
     */
    public static Loopback overNative(final io.gdrkit.verbs.Device device, final PerfConfig cfg, final GpuDevice gpu,
                                      final Connector connector) {
        final int cqe = Math.max(cfg.numQps() * Math.max(cfg.txDepth(), cfg.rxDepth()) + 16, 64);
        final long bufBytes = Math.max(2 * cfg.bufferBytes(), 64);
        Side a = null;
        Side b = null;
        final Arena arena = Arena.ofShared();
        try {
            a = new Side(device.open(), cfg.numQps(), cqe);
            b = new Side(device.open(), cfg.numQps(), cqe);
            for (final Side s : new Side[] {a, b}) {
                s.buf = arena.allocate(bufBytes, 4096);
                if (gpu != null) {
                    s.gpuBuffer = gpu.alloc(bufBytes);
                    s.gpuRegistration = io.gdrkit.labs.provider.NativeGpuMr.register(s.pd, gpu, s.gpuBuffer,
                        AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                    s.mr = s.gpuRegistration.mr();
                } else {
                    s.mr = s.pd.registerMr(s.buf, AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE);
                }
            }
            final QpAttr attr = QpBringUp.rcDefaults();
            if (cfg.mtu() > 4096) {
                throw new IllegalArgumentException("--mtu " + cfg.mtu() + " is a software MTU; a native device "
                    + "takes 256..4096");
            }
            attr.pathMtu(Mtu.fromBytes(cfg.mtu()));
            for (int i = 0; i < cfg.numQps(); i++) {
                final QpInitAttr ia = new QpInitAttr();
                ia.cap.maxSendWr(cfg.txDepth()).maxRecvWr(cfg.rxDepth()).maxInlineData(cfg.inlineSize());
                a.qps[i] = a.pd.createQp(ia.cqs(a.scq, a.rcq));
                final QpInitAttr ib = new QpInitAttr();
                ib.cap.maxSendWr(cfg.txDepth()).maxRecvWr(cfg.rxDepth()).maxInlineData(cfg.inlineSize());
                b.qps[i] = b.pd.createQp(ib.cqs(b.scq, b.rcq));
                connector.connect(a, b, i, attr);
            }
            final Loopback lb = new Loopback(gpu, a, b);
            lb.nativeArena = arena;
            return lb;
        } catch (final RuntimeException e) {
            for (final Side s : new Side[] {b, a}) {
                if (s != null) {
                    try {
                        s.closeNative();
                    } catch (final RuntimeException suppressed) {
                        e.addSuppressed(suppressed);
                    }
                    if (s.gpuBuffer != null) {
                        gpu.free(s.gpuBuffer);
                    }
                }
            }
            arena.close();
            throw e;
        }
    }

    /**
     * Connects QP pair {@code index} of a loopback, both QPs in RESET: out of band ({@link #connectDirect}, as
     * perftest without -R) or through a connection manager (perf's -R).
     */
    @FunctionalInterface
    public interface Connector {
        void connect(Side a, Side b, int index, QpAttr template);
    }

    /**
     * The out-of-band connector: port 1's LID, and on a RoCE (Ethernet) port GID 0 in a GRH, exchanged in this
     * process, as perftest does over its TCP socket without -R. PSNs 1000 + index (a) and 2000 + index (b).
     */
    public static void connectDirect(final Side a, final Side b, final int index, final QpAttr template) {
        final io.gdrkit.verbs.PortAttr pa = a.ctx.queryPort(1);
        final io.gdrkit.verbs.PortAttr pb = b.ctx.queryPort(1);
        if ("Ethernet".equals(pa.linkLayer())) {
            QpBringUp.connectGlobal(a.qps[index], pa.lid(), a.ctx.queryGid(1, 0), 1000 + index, b.qps[index],
                pb.lid(), b.ctx.queryGid(1, 0), 2000 + index, 0, template);
        } else {
            QpBringUp.connect(a.qps[index], pa.lid(), 1000 + index, b.qps[index], pb.lid(), 2000 + index, template);
        }
    }

    /** The context of this side (connectors query its port). */
    public static VerbsContext context(final Side s) {
        return s.ctx;
    }

    /** Advances the NICs when the caller drives progress; dedicated NIC threads need nothing. */
    public void progress() {
        if (driver == null) {
            return;
        }
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
        if (driver != null) {
            driver.close();
            if (gpu != null) {
                // a host MR pinned for the GPU is unpinned by its deregistration (a fence first), before its arena
                // frees the memory below
                for (final Side s : new Side[] {a, b}) {
                    if (s != null && s.gpuMemory == null && s.mr != null) {
                        try {
                            s.mr.deregister();
                        } catch (final RuntimeException e) {
                            // the device's close unregisters what is left
                        }
                    }
                }
            }
        } else {
            b.closeNative();
            a.closeNative();
            nativeArena.close();
        }
        if (gpu != null) {
            for (final Side s : new Side[] {a, b}) {
                if (s != null && s.gpuMemory != null) {
                    s.gpuMemory.close();
                }
                if (s != null && s.gpuBuffer != null) {
                    gpu.free(s.gpuBuffer);
                }
            }
        }
        arena.close();
    }
}
