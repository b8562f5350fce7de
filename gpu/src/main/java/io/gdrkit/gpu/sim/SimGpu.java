/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.Bar1ExhaustedException;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.DmaBufExport;
import io.gdrkit.gpu.FlushResult;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuAttributes;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaMemory;
import io.gdrkit.gpu.GpuDmaTarget;
import io.gdrkit.gpu.GpuEvent;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuFunction;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.MpsState;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.WritesOrdering;
import io.gdrkit.core.mem.DmaBuf;
import io.gdrkit.core.mem.DmaMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A simulated GPU. Device memory is native memory; kernels are Java ({@link SimKernel}) run by SM worker threads;
 * streams serialize work; NIC access goes through a BAR1 aperture of limited size and a {@link PostedWriteQueue},
 * which is what decides when NIC writes become visible.
 *
 * <p>What makes posted NIC writes visible (beyond their drain delays):
 * <ul>
 *   <li>{@link #nicRead}: a read on the same path lands every write posted before it;</li>
 *   <li>{@link #nicCompletionFence}: with ordering OWNER or ALL_DEVICES the NIC's completion lands them first;</li>
 *   <li>{@link #flushGpuDirectRdmaWrites}: lands (TO_OWNER) or lands and retires (TO_ALL_DEVICES), unless the
 *       ordering already covers the scope, when it is a no-op;</li>
 *   <li>any work submission or synchronization from the CPU (launch, copy, stream or event synchronize): lands
 *       everything posted before the call, for the owner. A kernel already running gets no such guarantee.</li>
 * </ul>
 * {@code CU_POINTER_ATTRIBUTE_SYNC_MEMOPS} is recorded per buffer. Without it, a synchronous host-to-device copy
 * into a buffer a NIC has mapped ({@link #mapForNic}) is complete only with respect to CUDA's stream semantics: it
 * is held and lands at this GPU's next synchronizing event (any work submission or copy, stream or event
 * synchronize, {@link #landDeferredCopies}), so a NIC read in between sees the old bytes. With it, or with
 * {@link SimGpuConfig#deferUnsyncedCopies} off, the copy lands before returning. It has no effect on NIC writes.
 */
public final class SimGpu implements GpuDevice, GpuDmaTarget {
    /** BAR1 is mapped in 64 KiB pages ({@code nvidia_p2p_get_pages} granularity). */
    public static final long BAR1_PAGE = 64 * 1024;
    private static final long ADDRESS_ALIGN = 2L << 20;
    private static final AtomicLong DMABUF_EXPORTS = new AtomicLong();

    private final SimGpuSystem system;
    private final int ordinal;
    private final SimPreset preset;
    private final SimGpuConfig config;
    private final GpuAttributes attributes;
    private final Arena arena = Arena.ofShared();
    private final PostedWriteQueue queue;
    private final ExecutorService sms;
    private final SimStream defaultStream;
    private final Map<SimStream, Boolean> streams = new ConcurrentHashMap<>();
    /** Live buffers by device address: kernels that get a pointer as a number (an array of pointers) resolve it here. */
    private final ConcurrentSkipListMap<Long, SimDeviceBuffer> buffers = new ConcurrentSkipListMap<>();
    private final Map<Long, Arena> hostAllocs = new ConcurrentHashMap<>();
    private final Map<String, SimFunction> functions = new ConcurrentHashMap<>(SimKernels.builtins());
    private final AtomicLong nextAddress;
    private final AtomicLong memUsed = new AtomicLong();
    private final AtomicLong bar1Mapped = new AtomicLong();
    private final AtomicInteger streamIds = new AtomicInteger();
    /** Synchronous copies into NIC-mapped buffers without SYNC_MEMOPS that have returned but not landed, in order. */
    private final List<DeferredCopy> deferred = new ArrayList<>();
    private volatile boolean anyDeferred;
    private volatile boolean closing;
    private boolean ownsSystem;

    SimGpu(final SimGpuSystem system, final int ordinal, final SimPreset preset, final SimGpuConfig config) {
        this.system = system;
        this.ordinal = ordinal;
        this.preset = preset;
        this.config = config;
        this.attributes = new GpuAttributes(preset.name(), preset.gpuDirectRdmaSupported(),
            preset.flushWritesOptions(), preset.writesOrdering(), preset.dmaBufSupported(), preset.ccMajor(),
            preset.ccMinor(), config.memBytes(), preset.bar1Bytes(), "simulated preset " + preset.label(),
            MpsState.NOT_APPLICABLE, "simulated GPU: no CUDA context, so MPS (attribute 133) does not apply");
        // each GPU draws its own delays, and adding a GPU does not change the others' draws
        this.queue = new PostedWriteQueue(preset.writesOrdering(), config, config.seed() * 0x9E3779B97F4A7C15L + ordinal,
            arena);
        this.nextAddress = new AtomicLong(0x7f00_0000_0000L + ((long) ordinal << 36));
        final AtomicInteger smIds = new AtomicInteger();
        this.sms = Executors.newFixedThreadPool(config.smWorkers(), r -> Thread.ofPlatform().daemon(true)
            .name("sim-gpu" + ordinal + "-sm" + smIds.getAndIncrement()).unstarted(r));
        this.defaultStream = new SimStream(this, streamIds.getAndIncrement());
    }

    /** A single simulated GPU in its own system; closing the GPU closes the system. */
    public static SimGpu create(final SimPreset preset, final SimGpuConfig config) {
        final SimGpu g = SimGpuSystem.create(config, preset).gpu(0);
        g.ownsSystem = true;
        return g;
    }

    public SimGpuSystem system() {
        return system;
    }

    public SimPreset preset() {
        return preset;
    }

    /** The posted-write queue of this GPU's memory: tests step it in deterministic mode. */
    public PostedWriteQueue postedWrites() {
        return queue;
    }

    /** The live buffer of this GPU whose range holds device address {@code address}, or null. */
    SimDeviceBuffer bufferAt(final long address) {
        final Map.Entry<Long, SimDeviceBuffer> e = buffers.floorEntry(address);
        return e != null && address - e.getKey() < e.getValue().size() ? e.getValue() : null;
    }

    boolean isClosing() {
        return closing;
    }

    @Override
    public int ordinal() {
        return ordinal;
    }

    @Override
    public boolean isSimulated() {
        return true;
    }

    /** The simulated driver reports CUDA 13.0 ({@link SimGpuSystem#DRIVER_VERSION}). */
    @Override
    public int driverVersion() {
        return SimGpuSystem.DRIVER_VERSION;
    }

    @Override
    public GpuAttributes attributes() {
        return attributes;
    }

    @Override
    public String describe() {
        final GpuAttributes a = attributes;
        return "GPU " + ordinal + " [SIMULATED] " + a.name() + ": cc " + a.computeCapability()
            + ", GPUDirect RDMA (116) " + a.gpuDirectRdmaSupported() + ", flush options (117) "
            + a.flushWritesOptions() + ", writes ordering (118) " + a.writesOrdering() + "("
            + a.writesOrdering().value() + "), DMA-BUF (124) " + a.dmaBufSupported() + ", BAR1 "
            + (a.bar1Bytes() >> 20) + " MiB, memory " + (a.totalMemBytes() >> 20) + " MiB";
    }

    // ---------------------------------------------------------------- memory

    @Override
    public DeviceBuffer alloc(final long bytes) {
        checkOpen();
        if (bytes <= 0) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "allocation of " + bytes + " bytes");
        }
        if (memUsed.addAndGet(bytes) > config.memBytes()) {
            memUsed.addAndGet(-bytes);
            throw new GpuException("CUDA_ERROR_OUT_OF_MEMORY", 2, "simulated GPU " + ordinal + " has "
                + config.memBytes() + " bytes, " + memUsed.get() + " in use, asked for " + bytes);
        }
        final long span = (bytes + ADDRESS_ALIGN - 1) / ADDRESS_ALIGN * ADDRESS_ALIGN;
        final SimDeviceBuffer b = new SimDeviceBuffer(this, nextAddress.getAndAdd(span), bytes);
        buffers.put(b.address(), b);
        return b;
    }

    @Override
    public void free(final DeviceBuffer buffer) {
        final SimDeviceBuffer b = own(buffer);
        b.checkLive();
        // cuMemFree synchronizes: a copy still held for this buffer lands before the memory goes
        landDeferredCopies();
        queue.quiesce(b);
        buffers.remove(b.address());
        memUsed.addAndGet(-b.size());
        b.release();
    }

    @Override
    public MemorySegment allocHost(final long bytes) {
        checkOpen();
        final Arena a = Arena.ofShared();
        final MemorySegment s = a.allocate(bytes, 4096);
        hostAllocs.put(s.address(), a);
        return s;
    }

    @Override
    public long mapHost(final MemorySegment host) {
        return host.address(); // Java kernels reach host memory directly
    }

    @Override
    public void freeHost(final MemorySegment host) {
        final Arena a = hostAllocs.remove(host.address());
        if (a == null) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "0x" + Long.toHexString(host.address())
                + " is not pinned host memory of simulated GPU " + ordinal);
        }
        a.close();
    }

    // ---------------------------------------------------------------- copies

    // Synchronous copies run on the caller's thread once the default stream is idle, as the legacy default stream
    // orders them; so host memory of any arena, confined ones too, can take part.

    @Override
    public void copyHtoD(final DeviceBuffer dst, final long dstOffset, final MemorySegment src, final long srcOffset,
                         final long len) {
        final SimDeviceBuffer d = any(dst);
        d.checkRange(dstOffset, len);
        syncCopyPrologue("copyHtoD");
        if (config.deferUnsyncedCopies() && d.gpu() == this && d.nicMapped() && !d.syncMemops()) {
            // the source may be reused or freed once the call returns: the bytes are taken now, landed later
            // (native memory the GC frees: a copy may be larger than a Java array)
            final MemorySegment bytes = Arena.ofAuto().allocate(Math.max(len, 1));
            MemorySegment.copy(src, srcOffset, bytes, 0, len);
            synchronized (deferred) {
                deferred.add(new DeferredCopy(d, dstOffset, bytes, len));
                anyDeferred = true;
            }
        } else {
            MemorySegment.copy(src, srcOffset, d.memory(), dstOffset, len);
        }
    }

    /** A synchronous copy that returned before landing (no SYNC_MEMOPS on a NIC-mapped buffer). */
    private record DeferredCopy(SimDeviceBuffer dst, long offset, MemorySegment bytes, long len) { }

    /**
     * Lands every synchronous copy held back for lack of {@code SYNC_MEMOPS}, in issue order; this GPU's
     * synchronizing calls do it first. Returns how many landed.
     */
    public int landDeferredCopies() {
        if (!anyDeferred) {
            return 0; // the common case: every call on the GPU comes here, and takes no lock
        }
        synchronized (deferred) {
            int n = 0;
            for (final DeferredCopy c : deferred) {
                if (!c.dst().isFreed()) {
                    MemorySegment.copy(c.bytes(), 0, c.dst().memory(), c.offset(), c.len());
                    n++;
                }
            }
            deferred.clear();
            anyDeferred = false;
            return n;
        }
    }

    @Override
    public void copyDtoH(final MemorySegment dst, final long dstOffset, final DeviceBuffer src, final long srcOffset,
                         final long len) {
        final SimDeviceBuffer s = any(src);
        s.checkRange(srcOffset, len);
        syncCopyPrologue("copyDtoH");
        readAsThisGpu(s, srcOffset, dst, dstOffset, len);
    }

    @Override
    public void copyDtoD(final DeviceBuffer dst, final long dstOffset, final DeviceBuffer src, final long srcOffset,
                         final long len) {
        final SimDeviceBuffer d = any(dst);
        final SimDeviceBuffer s = any(src);
        d.checkRange(dstOffset, len);
        s.checkRange(srcOffset, len);
        syncCopyPrologue("copyDtoD");
        readAsThisGpu(s, srcOffset, d.memory(), dstOffset, len);
    }

    private void syncCopyPrologue(final String what) {
        submitWork(defaultStream);
        defaultStream.await(defaultStream.lastSubmitted(), config.defaultTimeout(), "the default stream before " + what);
    }

    /**
     * Asynchronous copies run on the stream's thread: their host memory must be accessible from other threads
     * (a shared, global or automatic arena, or pinned memory from {@link #allocHost}).
     */
    @Override
    public void copyHtoDAsync(final DeviceBuffer dst, final long dstOffset, final MemorySegment src,
                              final long srcOffset, final long len, final GpuStream stream) {
        final SimDeviceBuffer d = any(dst);
        d.checkRange(dstOffset, len);
        submitWork(stream).submit("copyHtoD " + len + " B",
            () -> MemorySegment.copy(src, srcOffset, d.memory(), dstOffset, len));
    }

    @Override
    public void copyDtoHAsync(final MemorySegment dst, final long dstOffset, final DeviceBuffer src,
                              final long srcOffset, final long len, final GpuStream stream) {
        final SimDeviceBuffer s = any(src);
        s.checkRange(srcOffset, len);
        submitWork(stream).submit("copyDtoH " + len + " B", () -> readAsThisGpu(s, srcOffset, dst, dstOffset, len));
    }

    @Override
    public void copyDtoDAsync(final DeviceBuffer dst, final long dstOffset, final DeviceBuffer src,
                              final long srcOffset, final long len, final GpuStream stream) {
        final SimDeviceBuffer d = any(dst);
        final SimDeviceBuffer s = any(src);
        d.checkRange(dstOffset, len);
        s.checkRange(srcOffset, len);
        submitWork(stream).submit("copyDtoD " + len + " B",
            () -> readAsThisGpu(s, srcOffset, d.memory(), dstOffset, len));
    }

    /** This GPU's copy engine reading {@code src}: directly if it owns it, through the owner's model if not. */
    private void readAsThisGpu(final SimDeviceBuffer src, final long off, final MemorySegment dst, final long dstOff,
                               final long len) {
        if (src.gpu() == this) {
            MemorySegment.copy(src.memory(), off, dst, dstOff, len);
        } else {
            src.gpu().postedWrites().peerRead(src, off, dst, dstOff, len);
        }
    }

    // ---------------------------------------------------------------- streams and events

    @Override
    public GpuStream createStream() {
        checkOpen();
        final SimStream s = new SimStream(this, streamIds.getAndIncrement());
        streams.put(s, Boolean.TRUE);
        return s;
    }

    /** The legacy default stream (stream 0), used by the synchronous copies. */
    public GpuStream defaultStream() {
        return defaultStream;
    }

    @Override
    public void destroyStream(final GpuStream stream) {
        final SimStream s = stream(stream);
        if (s == defaultStream) {
            throw new GpuException("CUDA_ERROR_INVALID_HANDLE", 400, "the default stream cannot be destroyed");
        }
        streams.remove(s);
        s.stop();
    }

    @Override
    public void synchronize(final GpuStream stream, final Duration timeout) {
        final SimStream s = stream(stream);
        landDeferredCopies();
        queue.landAll();
        s.await(s.lastSubmitted(), timeout, "stream synchronize");
    }

    @Override
    public boolean isComplete(final GpuStream stream) {
        final SimStream s = stream(stream);
        return s.isComplete(s.lastSubmitted());
    }

    @Override
    public GpuEvent createEvent() {
        return new SimEvent(this);
    }

    @Override
    public void destroyEvent(final GpuEvent event) {
        event(event);
    }

    @Override
    public void record(final GpuEvent event, final GpuStream stream) {
        final SimEvent e = event(event);
        final SimStream s = stream(stream);
        e.stampNanos = -1;
        e.stream = s;
        e.seq = s.submit("event record", () -> e.stampNanos = config.clock().nanoTime());
    }

    @Override
    public void synchronize(final GpuEvent event, final Duration timeout) {
        final SimEvent e = event(event);
        landDeferredCopies();
        queue.landAll();
        final SimStream s = e.stream;
        if (s != null) {
            s.await(e.seq, timeout, "event");
        }
    }

    @Override
    public float elapsedMillis(final GpuEvent start, final GpuEvent end) {
        final SimEvent a = event(start);
        final SimEvent b = event(end);
        if (a.stream == null || b.stream == null) {
            throw new GpuException("CUDA_ERROR_INVALID_HANDLE", 400, "event was never recorded");
        }
        if (!a.stream.isComplete(a.seq) || !b.stream.isComplete(b.seq)) {
            throw new GpuException("CUDA_ERROR_NOT_READY", 600, "event not yet completed");
        }
        return (b.stampNanos - a.stampNanos) / 1e6f;
    }

    // ---------------------------------------------------------------- kernels

    /** Makes a Java kernel available to {@link #function} under its name. */
    public void register(final SimFunction function) {
        functions.put(function.name(), function);
    }

    @Override
    public GpuFunction function(final String module, final String name) {
        final SimFunction f = functions.get(name);
        if (f == null) {
            throw new GpuException("CUDA_ERROR_NOT_FOUND", 500, "no kernel '" + name + "' in module '" + module
                + "' of simulated GPU " + ordinal + " (have " + functions.keySet() + ")");
        }
        return f;
    }

    @Override
    public void launch(final GpuFunction function, final Dim3 grid, final Dim3 block, final GpuStream stream,
                       final KernelArgs args) {
        if (!(function instanceof SimFunction f)) {
            throw new GpuException("CUDA_ERROR_INVALID_HANDLE", 400, function + " is not a simulated kernel");
        }
        if (block.count() > 1024) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "block of " + block.count() + " threads > 1024");
        }
        final SimStream s = submitWork(stream);
        final KernelArgs captured = new KernelArgs(Math.max(args.count(), 1));
        captured.copyFrom(args);
        s.submit("kernel " + f.name(), () -> runKernel(f, grid, block, captured));
    }

    private void runKernel(final SimFunction f, final Dim3 grid, final Dim3 block, final KernelArgs args) {
        final int blocks = Math.toIntExact(grid.count());
        final CountDownLatch done = new CountDownLatch(blocks);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        try (Arena launchArena = Arena.ofShared()) {
            for (int b = 0; b < blocks; b++) {
                final KernelContext ctx = new KernelContext(this, b, grid, block, args, launchArena);
                sms.execute(() -> {
                    try {
                        f.kernel().run(ctx);
                    } catch (final Throwable t) {
                        failure.compareAndSet(null, t);
                    } finally {
                        done.countDown();
                    }
                });
            }
            // the stream waits for its kernel; host-side waits have the timeouts. Stop waiting only on close.
            while (!done.await(100, TimeUnit.MILLISECONDS)) {
                if (closing) {
                    throw new GpuException("CUDA_ERROR_LAUNCH_FAILED", 719, "kernel " + f.name()
                        + " still running while simulated GPU " + ordinal + " closed");
                }
            }
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GpuException("CUDA_ERROR_LAUNCH_FAILED", 719, "interrupted running kernel " + f.name());
        }
        final Throwable t = failure.get();
        if (t instanceof GpuException g) {
            throw g;
        }
        if (t != null) {
            throw new GpuException("CUDA_ERROR_LAUNCH_FAILED", 719, "kernel " + f.name() + " failed on simulated GPU "
                + ordinal + ": " + t);
        }
    }

    // ---------------------------------------------------------------- pointer attributes, DMA-BUF, flush

    @Override
    public boolean syncMemops(final DeviceBuffer buffer) {
        final SimDeviceBuffer b = own(buffer);
        b.checkLive();
        return b.syncMemops();
    }

    @Override
    public void setSyncMemops(final DeviceBuffer buffer, final boolean enabled) {
        final SimDeviceBuffer b = own(buffer);
        b.checkLive();
        b.syncMemops(enabled);
    }

    @Override
    public DmaBufExport exportDmaBuf(final DeviceBuffer buffer) {
        final SimDeviceBuffer b = own(buffer);
        b.checkLive();
        if (attributes.dmaBufSupported() == 0) {
            return new DmaBufExport(false, -1, "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (124) = 0 on " + attributes.name()
                + ": cuMemGetHandleForAddressRange would fail with CUDA_ERROR_NOT_SUPPORTED (simulated)");
        }
        if (b.address() % 4096 != 0 || b.size() % 4096 != 0) {
            return new DmaBufExport(false, -1, "address 0x" + Long.toHexString(b.address()) + " / size " + b.size()
                + " not aligned to the 4096-byte host page: CUDA_ERROR_INVALID_VALUE (simulated)");
        }
        // a name of its own per export, so the fd's /proc/self/fd identity tells this export from any other
        final int fd = MemFd.create("gdrkit-sim-dmabuf-gpu" + ordinal + "-" + DMABUF_EXPORTS.incrementAndGet(),
            b.size());
        if (fd < 0) {
            return new DmaBufExport(false, -1, "attribute 124 = 1 but memfd_create failed (simulated exporter)");
        }
        DmaBuf.publish(fd, new DmaBufExporter(b));
        return new DmaBufExport(true, fd, "attribute 124 = 1; simulated export: fd " + fd
            + " is a memfd of " + b.size() + " bytes standing in for a dma-buf; a software NIC imports it "
            + "(ibv_reg_dmabuf_mr) and reaches the buffer through BAR1 (no real exporter)");
    }

    /** What an importing NIC attaches to: the buffer mapped into BAR1, as the GPU driver's dma-buf exporter does. */
    private final class DmaBufExporter implements DmaBuf.Exporter {
        private final SimDeviceBuffer buffer;

        DmaBufExporter(final SimDeviceBuffer buffer) {
            this.buffer = buffer;
        }

        @Override
        public long size() {
            return buffer.size();
        }

        @Override
        public DmaMemory attach() {
            return new GpuDmaMemory(SimGpu.this, buffer);
        }

        @Override
        public void detach(final DmaMemory attachment) {
            ((GpuDmaMemory) attachment).close();
        }

        @Override
        public String describe() {
            return "GPU " + ordinal + " buffer 0x" + Long.toHexString(buffer.address()) + " (" + buffer.size()
                + " bytes, simulated " + attributes.name() + ")";
        }
    }

    @Override
    public FlushResult flushGpuDirectRdmaWrites(final FlushScope scope) {
        if ((attributes.flushWritesOptions() & GpuAttributes.FLUSH_OPTION_HOST) == 0) {
            throw new GpuException("CUDA_ERROR_NOT_SUPPORTED", 801, "flush options (117) = "
                + attributes.flushWritesOptions() + " lacks HOST on simulated GPU " + ordinal);
        }
        final WritesOrdering ordering = attributes.writesOrdering();
        if (ordering.covers(scope)) {
            return new FlushResult(scope, true, 0, "writes ordering (118) " + ordering + "(" + ordering.value()
                + ") >= scope " + scope + "(" + scope.value() + "): cuFlushGPUDirectRDMAWrites is a no-op (simulated)");
        }
        final int n = scope == FlushScope.TO_OWNER ? queue.landAll() : queue.retireAll();
        return new FlushResult(scope, false, n, "writes ordering (118) " + ordering + "(" + ordering.value()
            + ") < scope " + scope + "(" + scope.value() + "): " + n + " posted chunk(s) made visible (simulated)");
    }

    // ---------------------------------------------------------------- NIC side

    @Override
    public GpuDmaTarget dmaTarget() {
        return this;
    }

    @Override
    public NicMapping mapForNic(final DeviceBuffer buffer) {
        final SimDeviceBuffer b = own(buffer);
        b.checkLive();
        if (attributes.gpuDirectRdmaSupported() == 0) {
            throw new GpuException("CUDA_ERROR_NOT_SUPPORTED", 801, "GPUDirect RDMA (116) = 0 on " + attributes.name());
        }
        final long need = (b.size() + BAR1_PAGE - 1) / BAR1_PAGE * BAR1_PAGE;
        final long after = bar1Mapped.addAndGet(need);
        if (after > attributes.bar1Bytes()) {
            bar1Mapped.addAndGet(-need);
            throw new Bar1ExhaustedException("mapping " + b.size() + " bytes (" + need + " B of aperture) of GPU "
                + ordinal + " (simulated " + attributes.name() + ") for a NIC: BAR1 aperture of "
                + attributes.bar1Bytes() + " bytes has " + (attributes.bar1Bytes() - (after - need))
                + " bytes free (" + (after - need) + " mapped)");
        }
        b.nicMapped(true);
        return new NicMapping(this, b, need, () -> {
            bar1Mapped.addAndGet(-need);
            b.nicMapped(false);
        });
    }

    @Override
    public void nicWrite(final NicMapping mapping, final long offset, final MemorySegment src, final long srcOffset,
                         final long len) {
        mapping.checkAccess(offset, len);
        queue.post((SimDeviceBuffer) mapping.buffer(), offset, src, srcOffset, len);
    }

    @Override
    public void nicRead(final NicMapping mapping, final long offset, final MemorySegment dst, final long dstOffset,
                        final long len) {
        mapping.checkAccess(offset, len);
        // a PCIe read does not pass posted writes on the same path: they land first
        queue.landAll();
        MemorySegment.copy(((SimDeviceBuffer) mapping.buffer()).memory(), offset, dst, dstOffset, len);
    }

    /** Device memory is native memory here: a NIC thread reads it directly after {@link #nicReadFence}. */
    @Override
    public MemorySegment nicCpuView(final NicMapping mapping) {
        return ((SimDeviceBuffer) mapping.buffer()).memory();
    }

    /** {@link #nicRead} without its copy: the posted writes land first, so a read of the view sees them. */
    @Override
    public boolean nicReadFence(final NicMapping mapping) {
        if (!mapping.isOpen()) {
            return false;
        }
        queue.landAll();
        return true;
    }

    @Override
    public void nicCompletionFence() {
        if (attributes.writesOrdering() != WritesOrdering.NONE) {
            queue.landAll();
        }
    }

    @Override
    public long bar1MappedBytes() {
        return bar1Mapped.get();
    }

    // ---------------------------------------------------------------- lifecycle and helpers

    @Override
    public void close() {
        if (ownsSystem) {
            system.close();
        } else {
            shutdown();
        }
    }

    synchronized void shutdown() {
        if (closing) {
            return;
        }
        closing = true;
        for (final SimStream s : streams.keySet()) {
            s.stop();
        }
        defaultStream.stop();
        sms.shutdownNow();
        for (final SimDeviceBuffer b : buffers.values()) {
            b.release();
        }
        for (final Arena a : hostAllocs.values()) {
            a.close();
        }
        hostAllocs.clear();
    }

    /** Frees the staging memory; only after the drain agent has stopped. */
    void releaseArena() {
        arena.close();
    }

    private SimStream submitWork(final GpuStream stream) {
        checkOpen();
        final SimStream s = stream(stream);
        // a copy that returned early is complete in stream order: the CPU's next call on this GPU lands it
        landDeferredCopies();
        // work submitted by the CPU after it saw a completion sees the writes behind that completion
        queue.landAll();
        return s;
    }

    private SimStream stream(final GpuStream stream) {
        if (stream == null) {
            return defaultStream;
        }
        if (!(stream instanceof SimStream s) || s.device() != this) {
            throw new GpuException("CUDA_ERROR_INVALID_HANDLE", 400, stream + " is not a stream of simulated GPU "
                + ordinal);
        }
        return s;
    }

    private SimEvent event(final GpuEvent event) {
        if (!(event instanceof SimEvent e) || e.device() != this) {
            throw new GpuException("CUDA_ERROR_INVALID_HANDLE", 400, event + " is not an event of simulated GPU "
                + ordinal);
        }
        return e;
    }

    private SimDeviceBuffer own(final DeviceBuffer buffer) {
        final SimDeviceBuffer b = any(buffer);
        if (b.gpu() != this) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, b + " belongs to GPU " + b.gpu().ordinal()
                + ", not " + ordinal);
        }
        return b;
    }

    private static SimDeviceBuffer any(final DeviceBuffer buffer) {
        if (!(buffer instanceof SimDeviceBuffer b)) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, buffer + " is not simulated device memory");
        }
        return b;
    }

    private void checkOpen() {
        if (closing) {
            throw new GpuException("CUDA_ERROR_DEINITIALIZED", 4, "simulated GPU " + ordinal + " is closed");
        }
    }

    @Override
    public String toString() {
        return describe();
    }
}
