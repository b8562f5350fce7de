/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.DmaBufExport;
import io.gdrkit.gpu.FlushResult;
import io.gdrkit.gpu.FlushScope;
import io.gdrkit.gpu.GpuAttributes;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaTarget;
import io.gdrkit.gpu.GpuEvent;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.GpuFunction;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.MpsState;
import io.gdrkit.gpu.NicMapping;
import io.gdrkit.gpu.WritesOrdering;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A real NVIDIA GPU through the CUDA driver API, called with FFM. Uses the device's primary context and makes it
 * current on the calling thread before each call, so any thread may use the device.
 *
 * <p>NIC access ({@link GpuDmaTarget}): no verbs device reaches this GPU from gdrkit's software NIC, so the NIC's
 * writes and reads are done by the GPU's copy engine ({@code cuMemcpyHtoDAsync/DtoHAsync} on a private
 * non-blocking stream, batched through pinned staging: {@link NicStaging}); writes are posted and land by the NIC's
 * completion fence, reads are complete on return, and neither waits for kernels. {@link #describe()} says so.
 * The BAR1 limit is taken from NVML when available.
 */
// native access is this class's purpose; the JVM must run with --enable-native-access=ALL-UNNAMED
@SuppressWarnings("restricted")
public final class CudaGpu implements GpuDevice, GpuDmaTarget {
    /** {@code CU_POINTER_ATTRIBUTE_SYNC_MEMOPS}. */
    public static final int POINTER_ATTRIBUTE_SYNC_MEMOPS = 6;
    /** {@code CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD}. */
    public static final int MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1;
    /** {@code CU_STREAM_NON_BLOCKING}: the stream does not synchronize with the legacy NULL stream. */
    public static final int STREAM_NON_BLOCKING = 0x1;
    /** {@code CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED}. */
    public static final int ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;
    private static final int MAX_PARAMS = 16;
    private static final String RESOURCE_DIR = "/io/gdrkit/gpu/cuda/";

    private final CudaDriver d;
    private final int ordinal;
    private final int device;
    private final MemorySegment ctx;
    private final GpuAttributes attributes;
    private final String pciBusId;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment paramValues;
    private final MemorySegment paramPtrs;
    private final ReentrantLock launchLock = new ReentrantLock();
    private final Map<String, MemorySegment> modules = new ConcurrentHashMap<>();
    private final Map<String, String> moduleSources = new ConcurrentHashMap<>();
    /** Functions already resolved, by "module/name": a second {@link #function} call reaches no driver. */
    private final Map<String, CudaFunction> functions = new ConcurrentHashMap<>();
    /** Live {@link #allocHost} allocations, base address to bytes: the one record of what is pinned. */
    private final ConcurrentSkipListMap<Long, Long> hostAllocs = new ConcurrentSkipListMap<>();
    /**
     * Host memory pinned for the NIC ({@link #nicPinHost}, {@code cuMemHostRegister}), base address to bytes: part of
     * the record {@link #isPinned} asks. Unregistered by the pin's release, or on close.
     */
    private final ConcurrentSkipListMap<Long, Long> nicPinned = new ConcurrentSkipListMap<>();
    /** Pages registered by {@link #mapHost}, unregistered on close. */
    private final java.util.Set<Long> registeredPages = ConcurrentHashMap.newKeySet();
    private final AtomicLong bar1Mapped = new AtomicLong();
    private final CudaStream defaultStream;
    /** The NIC stand-in's copies (see {@link #nicWrite}); non-blocking, so it never waits for a running kernel. */
    private final MemorySegment nicStream;
    /** The NIC's reads of request sources ({@link #nicReadSource}), beside {@link #nicStream}'s writes. */
    private final MemorySegment nicReadStream;
    /** What the NIC stand-in writes, staged and batched (see {@link NicStaging}). */
    private final NicStaging nicStaging;
    private volatile boolean closed;

    private CudaGpu(final CudaDriver d, final int ordinal) {
        this.d = d;
        this.ordinal = ordinal;
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(8, 8);
            d.check((int) d.cuDeviceGet.invokeExact(out, ordinal), "cuDeviceGet(" + ordinal + ")");
            this.device = out.get(ValueLayout.JAVA_INT, 0);
            d.check((int) d.cuDevicePrimaryCtxRetain.invokeExact(out, device), "cuDevicePrimaryCtxRetain");
            this.ctx = out.get(ValueLayout.ADDRESS, 0);
            final MemorySegment bus = a.allocate(64);
            d.check((int) d.cuDeviceGetPCIBusId.invokeExact(bus, 64, device), "cuDeviceGetPCIBusId");
            this.pciBusId = bus.getString(0);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("opening CUDA device " + ordinal, t);
        }
        makeCurrent();
        final Nvml.Bar1 bar1 = Nvml.bar1(pciBusId);
        final String[] mpsEvidence = new String[1];
        final MpsState mps = mps(mpsEvidence);
        this.attributes = new GpuAttributes(name(), attr(GpuAttributes.ATTR_GPU_DIRECT_RDMA_SUPPORTED),
            attr(GpuAttributes.ATTR_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS),
            WritesOrdering.of(attr(GpuAttributes.ATTR_GPU_DIRECT_RDMA_WRITES_ORDERING)),
            attr(GpuAttributes.ATTR_DMA_BUF_SUPPORTED), attr(GpuAttributes.ATTR_COMPUTE_CAPABILITY_MAJOR),
            attr(GpuAttributes.ATTR_COMPUTE_CAPABILITY_MINOR), totalMem(), bar1.totalBytes(), bar1.evidence(), mps,
            mpsEvidence[0]);
        this.paramValues = arena.allocate(8L * MAX_PARAMS, 8);
        this.paramPtrs = arena.allocate(ValueLayout.ADDRESS, MAX_PARAMS);
        for (int i = 0; i < MAX_PARAMS; i++) {
            paramPtrs.setAtIndex(ValueLayout.ADDRESS, i, paramValues.asSlice(8L * i, 8));
        }
        this.defaultStream = new CudaStream(this, MemorySegment.NULL);
        this.nicStream = newStream(STREAM_NON_BLOCKING);
        this.nicReadStream = newStream(STREAM_NON_BLOCKING);
        this.nicStaging = new NicStaging(this, d, nicStream, nicReadStream);
    }

    /**
     * Looks for the CUDA driver and its devices. Never throws and never invents a device: when nothing is found the
     * result says what was looked for and what failed.
     */
    public static CudaProbe probe() {
        final var driver = CudaDriver.load();
        if (driver.isEmpty()) {
            return new CudaProbe(false, CudaDriver.library(), -1, 0, List.of(), CudaDriver.loadFailure());
        }
        final CudaDriver d = driver.get();
        try (Arena a = Arena.ofConfined()) {
            int rc = (int) d.cuInit.invokeExact(0);
            if (rc != 0) {
                return new CudaProbe(false, CudaDriver.library(), -1, 0, List.of(), CudaDriver.library()
                    + " loaded; cuInit(0) = " + d.errorName(rc) + " (" + rc + ")");
            }
            final MemorySegment out = a.allocate(ValueLayout.JAVA_INT);
            d.check((int) d.cuDriverGetVersion.invokeExact(out), "cuDriverGetVersion");
            final int version = out.get(ValueLayout.JAVA_INT, 0);
            d.check((int) d.cuDeviceGetCount.invokeExact(out), "cuDeviceGetCount");
            final int count = out.get(ValueLayout.JAVA_INT, 0);
            final List<String> names = new ArrayList<>();
            final MemorySegment name = a.allocate(256);
            for (int i = 0; i < count; i++) {
                d.check((int) d.cuDeviceGet.invokeExact(out, i), "cuDeviceGet");
                d.check((int) d.cuDeviceGetName.invokeExact(name, 256, out.get(ValueLayout.JAVA_INT, 0)),
                    "cuDeviceGetName");
                names.add(name.getString(0));
            }
            final String ev = CudaDriver.library() + " loaded; cuInit(0) = CUDA_SUCCESS; driver version " + version
                + " (" + version / 1000 + "." + version % 1000 / 10 + "); cuDeviceGetCount = " + count
                + (names.isEmpty() ? "" : "; devices " + names);
            return new CudaProbe(count > 0, CudaDriver.library(), version, count, List.copyOf(names), ev);
        } catch (final Throwable t) {
            return new CudaProbe(false, CudaDriver.library(), -1, 0, List.of(), "probing failed: " + t);
        }
    }

    /**
     * Opens CUDA device {@code ordinal}.
     *
     * @throws GpuException named {@code GDRKIT_CUDA_NOT_FOUND} when the driver or the device is missing
     */
    public static CudaGpu open(final int ordinal) {
        final CudaProbe p = probe();
        if (!p.found()) {
            throw new GpuException("GDRKIT_CUDA_NOT_FOUND", -1, p.evidence());
        }
        if (ordinal < 0 || ordinal >= p.deviceCount()) {
            throw new GpuException("CUDA_ERROR_INVALID_DEVICE", 101, "device " + ordinal + " of " + p.deviceCount());
        }
        return new CudaGpu(CudaDriver.load().orElseThrow(), ordinal);
    }

    /** The driver bindings (for measurements that need the raw calls). */
    public CudaDriver driver() {
        return d;
    }

    @Override
    public String pciBusId() {
        return pciBusId;
    }

    /**
     * The device whose context this thread last made current, so hot paths skip a driver call when it is already
     * ours. Keyed by instance, not handle: a reopened device gets the same primary-context handle back, but must set
     * it current again.
     */
    private static final ThreadLocal<CudaGpu> CURRENT = new ThreadLocal<>();

    private void makeCurrent() {
        if (CURRENT.get() == this) {
            return;
        }
        setCurrent();
        CURRENT.set(this);
    }

    private void setCurrent() {
        try {
            d.check((int) d.cuCtxSetCurrent.invokeExact(ctx), "cuCtxSetCurrent");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuCtxSetCurrent", t);
        }
    }

    private int attr(final int attribute) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.JAVA_INT);
            d.check((int) d.cuDeviceGetAttribute.invokeExact(out, attribute, device),
                "cuDeviceGetAttribute(" + attribute + ")");
            return out.get(ValueLayout.JAVA_INT, 0);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuDeviceGetAttribute(" + attribute + ")", t);
        }
    }

    /** Any device attribute ({@code CUdevice_attribute} value). */
    public int attribute(final int attribute) {
        return attr(attribute);
    }

    /**
     * Attribute 133 (MPS_ENABLED), with how it was learnt in {@code evidence[0]}. A driver older than the attribute
     * answers CUDA_ERROR_INVALID_VALUE: that, and any other failure or a value other than 0 or 1, is
     * {@link MpsState#UNKNOWN} with the driver's answer, never a guess and never a failed open.
     */
    private MpsState mps(final String[] evidence) {
        final String call = "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MPS_ENABLED = "
            + GpuAttributes.ATTR_MPS_ENABLED + ")";
        try {
            final int v = attr(GpuAttributes.ATTR_MPS_ENABLED);
            final MpsState s = MpsState.of(v);
            evidence[0] = call + " = " + v + (s == MpsState.UNKNOWN ? " (neither 0 nor 1: unknown)" : "");
            return s;
        } catch (final GpuException e) {
            evidence[0] = call + " = " + e.errorName() + (e.code() == 1 ? " (this driver does not know the "
                + "attribute)" : "") + ": unknown";
            return MpsState.UNKNOWN;
        }
    }

    private String name() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(256);
            d.check((int) d.cuDeviceGetName.invokeExact(out, 256, device), "cuDeviceGetName");
            return out.getString(0);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuDeviceGetName", t);
        }
    }

    private long totalMem() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.JAVA_LONG);
            d.check((int) d.cuDeviceTotalMem.invokeExact(out, device), "cuDeviceTotalMem_v2");
            return out.get(ValueLayout.JAVA_LONG, 0);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuDeviceTotalMem_v2", t);
        }
    }

    @Override
    public int ordinal() {
        return ordinal;
    }

    @Override
    public boolean isSimulated() {
        return false;
    }

    @Override
    public int driverVersion() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.JAVA_INT);
            d.check((int) d.cuDriverGetVersion.invokeExact(out), "cuDriverGetVersion");
            return out.get(ValueLayout.JAVA_INT, 0);
        } catch (final GpuException e) {
            throw e;
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuDriverGetVersion", t);
        }
    }

    @Override
    public GpuAttributes attributes() {
        return attributes;
    }

    @Override
    public String describe() {
        final GpuAttributes a = attributes;
        return "GPU " + ordinal + " [CUDA] " + a.name() + " (" + pciBusId + "): cc " + a.computeCapability()
            + ", GPUDirect RDMA (116) " + a.gpuDirectRdmaSupported() + ", flush options (117) "
            + a.flushWritesOptions() + ", writes ordering (118) " + a.writesOrdering() + "("
            + a.writesOrdering().value() + "), DMA-BUF (124) " + a.dmaBufSupported() + ", MPS (133) "
            + a.mpsEnabled().attributeText() + ", BAR1 "
            + (a.bar1Bytes() < 0 ? a.bar1Evidence() : (a.bar1Bytes() >> 20) + " MiB") + ", memory "
            + (a.totalMemBytes() >> 20) + " MiB; NIC access through the copy engine (no verbs device reaches it)";
    }

    // ---------------------------------------------------------------- memory

    @Override
    public DeviceBuffer alloc(final long bytes) {
        // CUDA lists device and page-locked allocations among the calls that may serialize with running work: the
        // agent kernel pauses around them (they are set-up calls, not per message)
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            makeCurrent();
            try (Arena a = Arena.ofConfined()) {
                final MemorySegment out = a.allocate(ValueLayout.JAVA_LONG);
                d.check((int) d.cuMemAlloc.invokeExact(out, bytes), "cuMemAlloc_v2(" + bytes + ")");
                return new CudaBuffer(this, out.get(ValueLayout.JAVA_LONG, 0), bytes);
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuMemAlloc_v2", t);
            }
        }
    }

    @Override
    public void free(final DeviceBuffer buffer) {
        final CudaBuffer b = own(buffer);
        makeCurrent();
        nicStaging.fence(); // NIC writes still staged for this buffer land before it goes, never after
        // cuMemFree may wait for every running kernel: no agent may be one
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            try {
                d.check((int) d.cuMemFree.invokeExact(b.address()),
                    "cuMemFree_v2(0x" + Long.toHexString(b.address()) + ")");
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuMemFree_v2", t);
            }
        }
    }

    @Override
    public MemorySegment allocHost(final long bytes) {
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            makeCurrent();
            try (Arena a = Arena.ofConfined()) {
                final MemorySegment out = a.allocate(ValueLayout.ADDRESS);
                d.check((int) d.cuMemAllocHost.invokeExact(out, bytes), "cuMemAllocHost_v2(" + bytes + ")");
                final MemorySegment p = out.get(ValueLayout.ADDRESS, 0).reinterpret(bytes);
                hostAllocs.put(p.address(), bytes);
                return p;
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuMemAllocHost_v2", t);
            }
        }
    }

    /**
     * Whether {@code [address, address + length)} lies wholly inside one live {@link #allocHost} allocation of this
     * device, or one range pinned for the NIC ({@link #nicPinHost}): pinned, so the copy engine reads and writes it
     * directly. A range that only partly overlaps one, or spans two, is not; a freed allocation or an unpinned range
     * is forgotten. Any thread.
     */
    public boolean isPinned(final long address, final long length) {
        return length >= 0 && (inside(hostAllocs, address, length) || inside(nicPinned, address, length));
    }

    /**
     * As {@link #isPinned}; where it is, {@code range} gets the pinned range that holds it ({@code range[0]} its start,
     * {@code range[1]} its end), and is left alone where it is not: the NIC remembers the range, since each lookup
     * allocates (a boxed key, a snapshot entry) and a message's packets come from one range.
     */
    boolean pinnedRange(final long address, final long length, final long[] range) {
        return length >= 0 && (within(hostAllocs, address, length, range) || within(nicPinned, address, length, range));
    }

    private static boolean inside(final ConcurrentSkipListMap<Long, Long> ranges, final long address,
                                  final long length) {
        return within(ranges, address, length, null);
    }

    /** Whether one range of {@code ranges} holds [address, address + length); {@code range} (may be null) gets it. */
    private static boolean within(final ConcurrentSkipListMap<Long, Long> ranges, final long address, final long length,
                                  final long[] range) {
        final Map.Entry<Long, Long> e = ranges.floorEntry(address);
        // length <= end - address: no overflow for any length a caller passes
        if (e == null || length > e.getKey() + e.getValue() - address) {
            return false;
        }
        if (range != null) {
            range[0] = e.getKey();
            range[1] = e.getKey() + e.getValue();
        }
        return true;
    }

    /**
     * {@inheritDoc} {@code cuMemHostRegister_v2(host, size, PORTABLE | DEVICEMAP)}, as a GPUDirect-capable stack pins
     * the host memory a NIC registers; the range joins {@link #isPinned}'s record, so the NIC's writes from it into
     * this GPU ({@link #nicWriteHeldSource}) are one copy-engine read and no CPU copy. The release takes the range
     * out of the record after a fence (no copy from it is in flight or issued after), then unregisters it. A refusal
     * (no such call in the driver, memory already pinned in part, the driver's error) returns null and is counted,
     * with its reason, in {@link #nicStats}: the NIC then stages the bytes as before.
     */
    @Override
    public Runnable nicPinHost(final MemorySegment host) {
        final long address = host.address();
        final long bytes = host.byteSize();
        final String call = "cuMemHostRegister_v2(0x" + Long.toHexString(address) + ", " + bytes
            + ", PORTABLE|DEVICEMAP)";
        if (closed || !host.isNative() || bytes <= 0) {
            nicStaging.notePin(false, call + " not made: " + (closed ? "the device is closed" : "not native memory"));
            return null;
        }
        if (d.cuMemHostRegister.isEmpty() || d.cuMemHostUnregister.isEmpty()) {
            nicStaging.notePin(false, "the driver has no cuMemHostRegister_v2/cuMemHostUnregister");
            return null;
        }
        if (isPinned(address, bytes)) {
            // cuMemAllocHost memory or a range pinned already: registering it again would fail, and it needs nothing
            nicStaging.notePin(true, "");
            return () -> { };
        }
        // registering host memory may wait for every running kernel
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            makeCurrent();
            final int rc;
            try {
                rc = (int) d.cuMemHostRegister.get().invokeExact(host, bytes, 0x3);
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuMemHostRegister_v2", t);
            }
            if (rc != CudaDriver.CUDA_SUCCESS) {
                nicStaging.notePin(false, call + " = " + d.errorName(rc) + " (" + rc + ")");
                return null;
            }
            nicPinned.put(address, bytes);
            nicStaging.notePin(true, "");
            return () -> nicUnpinHost(address, bytes);
        }
    }

    /** The release of {@link #nicPinHost}: out of the record behind a fence, then {@code cuMemHostUnregister}. */
    private void nicUnpinHost(final long address, final long bytes) {
        if (closed) {
            return; // the context went first and took its registrations with it
        }
        makeCurrent();
        try {
            nicStaging.retirePinned(() -> nicPinned.remove(address, bytes));
        } catch (final GpuException e) {
            // the fence failed (the device is broken): a copy may still read the memory, so it stays pinned; say so
            nicPinned.remove(address, bytes);
            nicStaging.notePin(false, "0x" + Long.toHexString(address) + " left pinned: the fence before "
                + "cuMemHostUnregister failed: " + e.getMessage());
            return;
        }
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            try {
                final int rc = (int) d.cuMemHostUnregister.get().invokeExact(MemorySegment.ofAddress(address));
                if (rc != CudaDriver.CUDA_SUCCESS) {
                    nicStaging.notePin(false, "cuMemHostUnregister(0x" + Long.toHexString(address) + ") = "
                        + d.errorName(rc) + " (" + rc + ")");
                }
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuMemHostUnregister", t);
            }
        }
    }

    @Override
    public void freeHost(final MemorySegment host) {
        // out of the record under the NIC's lock, behind any direct copy still reading it
        final boolean[] known = new boolean[1];
        nicStaging.retirePinned(() -> known[0] = hostAllocs.remove(host.address()) != null);
        if (!known[0]) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "0x" + Long.toHexString(host.address())
                + " was not allocated by cuMemAllocHost on this device");
        }
        // cuMemFreeHost may wait for every running kernel
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            makeCurrent();
            try {
                d.check((int) d.cuMemFreeHost.invokeExact(host), "cuMemFreeHost");
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuMemFreeHost", t);
            }
        }
    }

    /**
     * The device address of pinned host memory from {@link #allocHost} ({@code cuMemHostGetDevicePointer_v2}), for
     * kernel parameters ({@code KernelArgs.u64}). Under unified addressing (every 64-bit CUDA platform) it is the host
     * address itself; asking the driver checks that instead of assuming it.
     */
    public long devicePointer(final MemorySegment pinned) {
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.JAVA_LONG);
            d.check((int) d.cuMemHostGetDevicePointer.invokeExact(out, pinned, 0), "cuMemHostGetDevicePointer_v2(0x"
                + Long.toHexString(pinned.address()) + ")");
            return out.get(ValueLayout.JAVA_LONG, 0);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemHostGetDevicePointer_v2", t);
        }
    }

    /**
     * {@inheritDoc} Registers page by page (4 KiB), so that rings sharing a page with memory registered before are
     * fine; each page once ({@code CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED} is success for a page someone else
     * registered).
     */
    @Override
    public synchronized long mapHost(final MemorySegment host) {
        // memory from cuMemAllocHost is pinned and mapped already: registering it again fails with
        // CUDA_ERROR_INVALID_VALUE, so ask for its device address directly
        if (isPinned(host.address(), host.byteSize())) {
            return devicePointer(host);
        }
        final java.lang.invoke.MethodHandle reg = d.cuMemHostRegister.orElseThrow(() -> new GpuException(
            "CUDA_ERROR_NOT_SUPPORTED", 801, "the driver has no cuMemHostRegister_v2"));
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            makeCurrent();
            final long first = host.address() & ~4095L;
            final long end = (host.address() + Math.max(1, host.byteSize()) + 4095) & ~4095L;
            for (long page = first; page < end; page += 4096) {
                if (registeredPages.contains(page)) {
                    continue;
                }
                try {
                    // CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP
                    final int rc = (int) reg.invokeExact(MemorySegment.ofAddress(page), 4096L, 0x3);
                    if (rc != 0 && rc != 712) {
                        d.check(rc, "cuMemHostRegister_v2(0x" + Long.toHexString(page) + ", 4096, PORTABLE|DEVICEMAP)");
                    }
                    if (rc == 0) {
                        registeredPages.add(page);
                    }
                } catch (final Throwable t) {
                    throw CudaDriver.linkage("cuMemHostRegister_v2", t);
                }
            }
            return devicePointer(host);
        }
    }

    // ---------------------------------------------------------------- peer access

    /** {@code cuDeviceCanAccessPeer}: whether kernels on this GPU can be given access to {@code peer}'s memory. */
    public boolean canAccessPeer(final CudaGpu peer) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.JAVA_INT);
            d.check((int) d.cuDeviceCanAccessPeer.invokeExact(out, device, peer.device), "cuDeviceCanAccessPeer("
                + ordinal + ", " + peer.ordinal + ")");
            return out.get(ValueLayout.JAVA_INT, 0) != 0;
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuDeviceCanAccessPeer", t);
        }
    }

    /**
     * {@code cuCtxEnablePeerAccess(peer's primary context, 0)} with this GPU's context current: kernels (and copies)
     * on this GPU may then dereference {@code peer}'s device addresses, e.g. a consumer on GPU 1 reading a buffer the
     * NIC wrote into GPU 0. One direction only, like {@code SimGpuSystem.enablePeerAccess(from, to)}.
     *
     * @return false when it was already enabled ({@code CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED})
     * @throws GpuException {@code CUDA_ERROR_PEER_ACCESS_UNSUPPORTED} etc. when the driver refuses
     */
    public boolean enablePeerAccess(final CudaGpu peer) {
        if (peer == this || peer.device == device) {
            throw new GpuException("CUDA_ERROR_INVALID_DEVICE", 101, "peer access from CUDA device " + ordinal
                + " to itself");
        }
        makeCurrent();
        try {
            final int rc = (int) d.cuCtxEnablePeerAccess.invokeExact(peer.ctx, 0);
            if (rc == ERROR_PEER_ACCESS_ALREADY_ENABLED) {
                return false;
            }
            d.check(rc, "cuCtxEnablePeerAccess(device " + ordinal + " -> " + peer.ordinal + ")");
            return true;
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuCtxEnablePeerAccess", t);
        }
    }

    // ---------------------------------------------------------------- copies

    @Override
    public void copyHtoD(final DeviceBuffer dst, final long dstOffset, final MemorySegment src, final long srcOffset,
                         final long len) {
        final long dptr = devPtr(dst, dstOffset, len);
        final MemorySegment h = host(src, srcOffset, len);
        makeCurrent();
        try {
            d.check((int) d.cuMemcpyHtoD.invokeExact(dptr, h, len), "cuMemcpyHtoD_v2");
            // from pageable memory cuMemcpyHtoD may return before its DMA has landed; this interface promises
            // the copy complete, and the NIC's stream (non-blocking) is not ordered behind the legacy stream
            landLegacyStream("cuMemcpyHtoD_v2");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemcpyHtoD_v2", t);
        }
    }

    /**
     * {@code cuStreamSynchronize(NULL)}: waits for the legacy stream, where the "synchronous" copies run. CUDA does
     * not wait for a device-to-device copy (nor always for a pageable host-to-device one) before returning, and
     * work on a non-blocking stream (the NIC's copy engine path) is not ordered behind it: without this wait the
     * NIC can read a collective's output before its input has been copied there, whenever the Java side runs fast
     * enough to overtake the copy (docs/TRANSPORT.md, "GDR on a real GPU").
     */
    private void landLegacyStream(final String after) {
        awaitQuery(d.cuStreamQuery, MemorySegment.NULL, LEGACY_COPY_TIMEOUT, "cuStreamQuery(legacy)",
            "the legacy stream after " + after + ":");
    }

    /** How long a synchronous copy may take to land: far beyond any copy; a kernel that never ends is the case. */
    private static final Duration LEGACY_COPY_TIMEOUT = Duration.ofSeconds(60);

    @Override
    public void copyDtoH(final MemorySegment dst, final long dstOffset, final DeviceBuffer src, final long srcOffset,
                         final long len) {
        final long sptr = devPtr(src, srcOffset, len);
        final MemorySegment h = host(dst, dstOffset, len);
        makeCurrent();
        try {
            d.check((int) d.cuMemcpyDtoH.invokeExact(h, sptr, len), "cuMemcpyDtoH_v2");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemcpyDtoH_v2", t);
        }
    }

    @Override
    public void copyDtoD(final DeviceBuffer dst, final long dstOffset, final DeviceBuffer src, final long srcOffset,
                         final long len) {
        final long dptr = devPtr(dst, dstOffset, len);
        final long sptr = devPtr(src, srcOffset, len);
        makeCurrent();
        try {
            d.check((int) d.cuMemcpyDtoD.invokeExact(dptr, sptr, len), "cuMemcpyDtoD_v2");
            landLegacyStream("cuMemcpyDtoD_v2"); // CUDA returns before a device-to-device copy has run
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemcpyDtoD_v2", t);
        }
    }

    @Override
    public void copyHtoDAsync(final DeviceBuffer dst, final long dstOffset, final MemorySegment src,
                              final long srcOffset, final long len, final GpuStream stream) {
        final long dptr = devPtr(dst, dstOffset, len);
        final MemorySegment h = host(src, srcOffset, len);
        final MemorySegment s = stream(stream).handle();
        makeCurrent();
        try {
            d.check((int) d.cuMemcpyHtoDAsync.invokeExact(dptr, h, len, s), "cuMemcpyHtoDAsync_v2");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemcpyHtoDAsync_v2", t);
        }
    }

    @Override
    public void copyDtoHAsync(final MemorySegment dst, final long dstOffset, final DeviceBuffer src,
                              final long srcOffset, final long len, final GpuStream stream) {
        final long sptr = devPtr(src, srcOffset, len);
        final MemorySegment h = host(dst, dstOffset, len);
        final MemorySegment s = stream(stream).handle();
        makeCurrent();
        try {
            d.check((int) d.cuMemcpyDtoHAsync.invokeExact(h, sptr, len, s), "cuMemcpyDtoHAsync_v2");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemcpyDtoHAsync_v2", t);
        }
    }

    @Override
    public void copyDtoDAsync(final DeviceBuffer dst, final long dstOffset, final DeviceBuffer src,
                              final long srcOffset, final long len, final GpuStream stream) {
        final long dptr = devPtr(dst, dstOffset, len);
        final long sptr = devPtr(src, srcOffset, len);
        final MemorySegment s = stream(stream).handle();
        makeCurrent();
        try {
            d.check((int) d.cuMemcpyDtoDAsync.invokeExact(dptr, sptr, len, s), "cuMemcpyDtoDAsync_v2");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemcpyDtoDAsync_v2", t);
        }
    }

    // ---------------------------------------------------------------- streams and events

    /**
     * {@code cuStreamCreate(flags 0)}: a blocking stream, which the legacy NULL stream waits for. The synchronous
     * copies ({@link #copyHtoD} etc.) run on the legacy stream, so while a persistent kernel runs on such a stream
     * they block until it ends; use {@link #createNonBlockingStream} for one. The NIC path does not care: it has its
     * own stream.
     */
    @Override
    public GpuStream createStream() {
        return new CudaStream(this, newStream(0));
    }

    /**
     * {@code cuStreamCreate(CU_STREAM_NON_BLOCKING)}: a stream the legacy NULL stream neither waits for nor orders.
     * For a persistent kernel that must keep running while the host makes synchronous copies. The price: work on it is
     * not ordered after a synchronous {@code cuMemcpyHtoD} from pageable memory, which may return before its DMA has
     * landed (CUDA's documented behaviour; SYNC_MEMOPS makes such copies synchronize).
     */
    @Override
    public GpuStream createNonBlockingStream() {
        return new CudaStream(this, newStream(STREAM_NON_BLOCKING));
    }

    private MemorySegment newStream(final int flags) {
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.ADDRESS);
            d.check((int) d.cuStreamCreate.invokeExact(out, flags), "cuStreamCreate(flags " + flags + ")");
            return out.get(ValueLayout.ADDRESS, 0);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuStreamCreate", t);
        }
    }

    /** The legacy default stream. */
    public GpuStream defaultStream() {
        return defaultStream;
    }

    @Override
    public void destroyStream(final GpuStream stream) {
        final CudaStream s = stream(stream);
        makeCurrent();
        try {
            d.check((int) d.cuStreamDestroy.invokeExact(s.handle()), "cuStreamDestroy_v2");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuStreamDestroy_v2", t);
        }
    }

    /** Polls {@code cuStreamQuery} until done or the timeout: cuStreamSynchronize itself cannot time out. */
    @Override
    public void synchronize(final GpuStream stream, final Duration timeout) {
        final CudaStream s = stream(stream);
        makeCurrent();
        awaitQuery(d.cuStreamQuery, s.handle(), timeout, "cuStreamQuery", "stream");
    }

    @Override
    public boolean isComplete(final GpuStream stream) {
        final CudaStream s = stream(stream);
        makeCurrent();
        try {
            final int rc = (int) d.cuStreamQuery.invokeExact(s.handle());
            if (rc == CudaDriver.CUDA_ERROR_NOT_READY) {
                return false;
            }
            d.check(rc, "cuStreamQuery");
            return true;
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuStreamQuery", t);
        }
    }

    @Override
    public GpuEvent createEvent() {
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.ADDRESS);
            d.check((int) d.cuEventCreate.invokeExact(out, 0), "cuEventCreate");
            return new CudaEvent(this, out.get(ValueLayout.ADDRESS, 0));
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventCreate", t);
        }
    }

    @Override
    public void destroyEvent(final GpuEvent event) {
        final CudaEvent e = event(event);
        makeCurrent();
        try {
            d.check((int) d.cuEventDestroy.invokeExact(e.handle()), "cuEventDestroy_v2");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventDestroy_v2", t);
        }
    }

    @Override
    public void record(final GpuEvent event, final GpuStream stream) {
        final CudaEvent e = event(event);
        final CudaStream s = stream(stream);
        makeCurrent();
        try {
            d.check((int) d.cuEventRecord.invokeExact(e.handle(), s.handle()), "cuEventRecord");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventRecord", t);
        }
    }

    @Override
    public void synchronize(final GpuEvent event, final Duration timeout) {
        final CudaEvent e = event(event);
        makeCurrent();
        awaitQuery(d.cuEventQuery, e.handle(), timeout, "cuEventQuery", "event");
    }

    @Override
    public float elapsedMillis(final GpuEvent start, final GpuEvent end) {
        final CudaEvent a = event(start);
        final CudaEvent b = event(end);
        makeCurrent();
        try (Arena ar = Arena.ofConfined()) {
            final MemorySegment out = ar.allocate(ValueLayout.JAVA_FLOAT);
            d.check((int) d.cuEventElapsedTime.invokeExact(out, a.handle(), b.handle()), "cuEventElapsedTime");
            return out.get(ValueLayout.JAVA_FLOAT, 0);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuEventElapsedTime", t);
        }
    }

    private void awaitQuery(final MethodHandle query, final MemorySegment handle, final Duration timeout,
                            final String call, final String what) {
        final long deadline = System.nanoTime() + timeout.toNanos();
        long spins = 0;
        try {
            while (true) {
                final int rc = (int) query.invokeExact(handle);
                if (rc == CudaDriver.CUDA_SUCCESS) {
                    return;
                }
                if (rc != CudaDriver.CUDA_ERROR_NOT_READY) {
                    d.check(rc, call);
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new GpuException("GDRKIT_TIMEOUT", -1, "timed out after " + timeout + " waiting for " + what
                        + " " + handle + " on CUDA device " + ordinal + " (" + call + " still CUDA_ERROR_NOT_READY)");
                }
                // spin briefly for short copies, then park so that a long kernel does not burn a core
                if (++spins < 10_000) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(20_000);
                }
            }
        } catch (final Throwable t) {
            throw CudaDriver.linkage(call, t);
        }
    }

    // ---------------------------------------------------------------- kernels

    /**
     * Loads {@code io/gdrkit/gpu/cuda/<module>.ptx}; if the driver refuses its PTX ISA or target, falls back to
     * {@code <module>_sm75.ptx} (PTX ISA 7.0), and remembers which one loaded ({@link #moduleSource}).
     */
    @Override
    public GpuFunction function(final String module, final String name) {
        // Resolve every kernel before launching one that waits for another (docs/SHMEM.md, "H200"): loading a module
        // waits for every running kernel (cuModuleLoadData blocks until a spinning kernel ends; the CUDA guide names
        // the hazard under lazy loading). A PE loading its module while its peer's kernel spins waiting
        // for it deadlocks until that kernel's timeout.
        final CudaFunction known = functions.get(module + "/" + name);
        if (known != null) {
            return known;
        }
        final CudaFunction f = resolve(module, name);
        functions.put(module + "/" + name, f);
        return f;
    }

    private CudaFunction resolve(final String module, final String name) {
        // loading a module or a function waits for every running kernel (see function): the agent pauses meanwhile
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            final MemorySegment mod = modules.computeIfAbsent(module, this::loadModule);
            makeCurrent();
            try (Arena a = Arena.ofConfined()) {
                final MemorySegment out = a.allocate(ValueLayout.ADDRESS);
                d.check((int) d.cuModuleGetFunction.invokeExact(out, mod, a.allocateFrom(name)),
                    "cuModuleGetFunction(" + module + ", " + name + ")");
                return new CudaFunction(name, moduleSources.get(module), out.get(ValueLayout.ADDRESS, 0));
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuModuleGetFunction", t);
            }
        }
    }

    /** Which PTX resource a loaded module came from, and why a fallback was used if it was. */
    public String moduleSource(final String module) {
        return moduleSources.get(module);
    }

    private MemorySegment loadModule(final String module) {
        final String primary = RESOURCE_DIR + module + ".ptx";
        final String compat = RESOURCE_DIR + module + "_sm75.ptx";
        try {
            final MemorySegment m = loadPtx(primary);
            moduleSources.put(module, primary);
            return m;
        } catch (final GpuException e) {
            // 222 UNSUPPORTED_PTX_VERSION, 218 INVALID_PTX, 209 NO_BINARY_FOR_GPU, 200 INVALID_IMAGE
            if (e.code() != 222 && e.code() != 218 && e.code() != 209 && e.code() != 200) {
                throw e;
            }
            final MemorySegment m = loadPtx(compat);
            moduleSources.put(module, compat + " (" + primary + " refused: " + e.errorName() + ")");
            return m;
        }
    }

    private MemorySegment loadPtx(final String resource) {
        final byte[] ptx;
        try (InputStream in = CudaGpu.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new GpuException("CUDA_ERROR_FILE_NOT_FOUND", 301, "PTX resource " + resource + " not on the class path");
            }
            ptx = in.readAllBytes();
        } catch (final IOException e) {
            throw new GpuException("CUDA_ERROR_FILE_NOT_FOUND", 301, "reading " + resource + ": " + e);
        }
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment image = a.allocate(ptx.length + 1L); // cuModuleLoadData wants NUL-terminated PTX
            MemorySegment.copy(ptx, 0, image, ValueLayout.JAVA_BYTE, 0, ptx.length);
            final MemorySegment out = a.allocate(ValueLayout.ADDRESS);
            d.check((int) d.cuModuleLoadData.invokeExact(out, image), "cuModuleLoadData(" + resource + ")");
            return out.get(ValueLayout.ADDRESS, 0);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuModuleLoadData", t);
        }
    }

    @Override
    public void launch(final GpuFunction function, final Dim3 grid, final Dim3 block, final GpuStream stream,
                       final KernelArgs args) {
        if (!(function instanceof CudaFunction f)) {
            throw new GpuException("CUDA_ERROR_INVALID_HANDLE", 400, function + " is not a CUDA function");
        }
        if (args.count() > MAX_PARAMS) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, args.count() + " parameters > " + MAX_PARAMS);
        }
        final CudaStream s = stream(stream);
        launchLock.lock();
        try {
            // the parameter block is reused: cuLaunchKernel copies the values before it returns
            for (int i = 0; i < args.count(); i++) {
                if (args.kind(i) == KernelArgs.Kind.U32) {
                    paramValues.set(ValueLayout.JAVA_INT, 8L * i, (int) args.value(i));
                } else {
                    paramValues.set(ValueLayout.JAVA_LONG, 8L * i, args.value(i));
                }
            }
            makeCurrent();
            d.check((int) d.cuLaunchKernel.invokeExact(f.handle(), grid.x(), grid.y(), grid.z(), block.x(), block.y(),
                block.z(), 0, s.handle(), paramPtrs, MemorySegment.NULL), "cuLaunchKernel(" + f.name() + ")");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuLaunchKernel", t);
        } finally {
            launchLock.unlock();
        }
    }

    // ---------------------------------------------------------------- pointer attributes, DMA-BUF, flush

    @Override
    public boolean syncMemops(final DeviceBuffer buffer) {
        final CudaBuffer b = own(buffer);
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.JAVA_INT);
            d.check((int) d.cuPointerGetAttribute.invokeExact(out, POINTER_ATTRIBUTE_SYNC_MEMOPS, b.address()),
                "cuPointerGetAttribute(SYNC_MEMOPS)");
            return out.get(ValueLayout.JAVA_INT, 0) != 0;
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuPointerGetAttribute", t);
        }
    }

    @Override
    public void setSyncMemops(final DeviceBuffer buffer, final boolean enabled) {
        final CudaBuffer b = own(buffer);
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment value = a.allocate(ValueLayout.JAVA_INT);
            value.set(ValueLayout.JAVA_INT, 0, enabled ? 1 : 0);
            d.check((int) d.cuPointerSetAttribute.invokeExact(value, POINTER_ATTRIBUTE_SYNC_MEMOPS, b.address()),
                "cuPointerSetAttribute(SYNC_MEMOPS, " + enabled + ")");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuPointerSetAttribute", t);
        }
    }

    @Override
    public void hostRegister(final MemorySegment host) {
        if (d.cuMemHostRegister.isEmpty()) {
            GpuDevice.super.hostRegister(host);
        }
        // registering host memory may wait for every running kernel
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            makeCurrent();
            try {
                d.check((int) d.cuMemHostRegister.get().invokeExact(host, host.byteSize(), 0),
                    "cuMemHostRegister_v2(0x" + Long.toHexString(host.address()) + ", " + host.byteSize() + ", 0)");
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuMemHostRegister_v2", t);
            }
        }
    }

    @Override
    public void hostUnregister(final MemorySegment host) {
        if (d.cuMemHostUnregister.isEmpty()) {
            GpuDevice.super.hostUnregister(host);
        }
        try (AgentGate.Hold _ = nicStaging.holdAgents()) {
            makeCurrent();
            try {
                d.check((int) d.cuMemHostUnregister.get().invokeExact(host),
                    "cuMemHostUnregister(0x" + Long.toHexString(host.address()) + ")");
            } catch (final Throwable t) {
                throw CudaDriver.linkage("cuMemHostUnregister", t);
            }
        }
    }

    @Override
    public DmaBufExport exportDmaBuf(final DeviceBuffer buffer) {
        final CudaBuffer b = own(buffer);
        final String attr = "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (124) = " + attributes.dmaBufSupported();
        if (d.cuMemGetHandleForAddressRange.isEmpty()) {
            return new DmaBufExport(false, -1, attr + "; cuMemGetHandleForAddressRange not exported by "
                + CudaDriver.library() + " (driver older than CUDA 11.7)");
        }
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment out = a.allocate(ValueLayout.JAVA_INT);
            out.set(ValueLayout.JAVA_INT, 0, -1);
            final int rc = (int) d.cuMemGetHandleForAddressRange.get().invokeExact(out, b.address(), b.size(),
                MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0L);
            final String call = "cuMemGetHandleForAddressRange(0x" + Long.toHexString(b.address()) + ", " + b.size()
                + ", DMA_BUF_FD, 0)";
            if (rc != CudaDriver.CUDA_SUCCESS) {
                return new DmaBufExport(false, -1, attr + "; " + call + " = " + d.errorName(rc) + " (" + rc + ")");
            }
            final int fd = out.get(ValueLayout.JAVA_INT, 0);
            if (fd >= 0) {
                // a kernel importer (a real HCA's ibv_reg_dmabuf_mr) takes the fd as it is; an in-process importer
                // (the software NIC) finds the buffer behind it here and reaches it through the copy engine
                io.gdrkit.core.mem.DmaBuf.publish(fd, new CopyEngineDmaBuf(b));
            }
            return new DmaBufExport(fd >= 0, fd, attr + "; " + call + " = CUDA_SUCCESS, fd " + fd);
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuMemGetHandleForAddressRange", t);
        }
    }

    /**
     * What the software NIC attaches to when it imports this GPU's DMA-BUF in-process: the buffer mapped for the
     * NIC ({@link io.gdrkit.gpu.GpuDmaMemory}: posted copy-engine writes, reads behind them), as for a peermem
     * registration. A real HCA imports the fd through the kernel and never sees this.
     */
    private final class CopyEngineDmaBuf implements io.gdrkit.core.mem.DmaBuf.Exporter {
        private final CudaBuffer buffer;

        CopyEngineDmaBuf(final CudaBuffer buffer) {
            this.buffer = buffer;
        }

        @Override
        public long size() {
            return buffer.size();
        }

        @Override
        public io.gdrkit.core.mem.DmaMemory attach() {
            return new io.gdrkit.gpu.GpuDmaMemory(CudaGpu.this, buffer);
        }

        @Override
        public void detach(final io.gdrkit.core.mem.DmaMemory attachment) {
            ((io.gdrkit.gpu.GpuDmaMemory) attachment).close();
        }

        @Override
        public String describe() {
            return "CUDA device " + ordinal + " buffer 0x" + Long.toHexString(buffer.address()) + " (" + buffer.size()
                + " bytes; the software NIC reaches it through the copy engine)";
        }
    }

    @Override
    public FlushResult flushGpuDirectRdmaWrites(final FlushScope scope) {
        final WritesOrdering ordering = attributes.writesOrdering();
        final String rule = "writes ordering (118) " + ordering + "(" + ordering.value() + ") "
            + (ordering.covers(scope) ? ">=" : "<") + " scope " + scope + "(" + scope.value() + ")";
        if (d.cuFlushGPUDirectRDMAWrites.isEmpty()) {
            throw new GpuException("CUDA_ERROR_NOT_SUPPORTED", 801, "cuFlushGPUDirectRDMAWrites not exported by "
                + CudaDriver.library() + " (driver older than CUDA 11.3)");
        }
        makeCurrent();
        try {
            final long t0 = System.nanoTime();
            final int rc = (int) d.cuFlushGPUDirectRDMAWrites.get().invokeExact(FlushScope.TARGET_CURRENT_CTX,
                scope.value());
            final long ns = System.nanoTime() - t0;
            d.check(rc, "cuFlushGPUDirectRDMAWrites(CURRENT_CTX, " + scope + ")");
            // CUDA does not say whether it did anything; the no-op rule from its documentation decides
            return new FlushResult(scope, ordering.covers(scope), 0, rule + "; cuFlushGPUDirectRDMAWrites(0, "
                + scope.value() + ") = CUDA_SUCCESS in " + ns + " ns");
        } catch (final Throwable t) {
            throw CudaDriver.linkage("cuFlushGPUDirectRDMAWrites", t);
        }
    }

    // ---------------------------------------------------------------- NIC side: the copy engine stands in

    @Override
    public GpuDmaTarget dmaTarget() {
        return this;
    }

    @Override
    public NicMapping mapForNic(final DeviceBuffer buffer) {
        final CudaBuffer b = own(buffer);
        final long need = (b.size() + 65535) / 65536 * 65536;
        final long after = bar1Mapped.addAndGet(need);
        if (attributes.bar1Bytes() > 0 && after > attributes.bar1Bytes()) {
            bar1Mapped.addAndGet(-need);
            throw new io.gdrkit.gpu.Bar1ExhaustedException("mapping " + b.size() + " bytes of CUDA device " + ordinal
                + " would exceed BAR1 of " + attributes.bar1Bytes() + " bytes (" + (after - need) + " mapped; "
                + attributes.bar1Evidence() + ")");
        }
        return new NicMapping(this, b, need, () -> bar1Mapped.addAndGet(-need));
    }

    // The stand-in NIC copies on its own non-blocking stream rather than on the legacy NULL stream, because a NIC's
    // DMA is not part of CUDA's stream order: the legacy stream waits for every blocking stream, so a persistent
    // kernel launched on one (the visibility experiment's consumer, which polls for data that these very writes
    // deliver) would deadlock the NIC. Writes go through pinned staging (NicStaging): a plain memory copy per
    // packet, one cuMemcpyHtoDAsync per contiguous span, no wait per packet; the completion fence waits for (or,
    // non-blocking, asks) an event recorded behind them. Pinned staging also makes "landed" mean landed: a
    // cuMemcpyHtoDAsync from pageable memory may return once the bytes are staged by the driver.

    /** A posted copy-engine write into the mapped buffer: visible to the owner GPU after the next fence. */
    @Override
    public void nicWrite(final NicMapping mapping, final long offset, final MemorySegment src, final long srcOffset,
                         final long len) {
        mapping.checkAccess(offset, len);
        final long dptr = devPtr(mapping.buffer(), offset, len);
        if (!src.isNative()) {
            host(src, srcOffset, len); // throws the named error
        }
        makeCurrent();
        nicStaging.write(((CudaBuffer) mapping.buffer()).address(), dptr, src, srcOffset, len, false);
    }

    /**
     * {@link #nicWrite} from a source the NIC holds until the fence: where it is pinned ({@link #isPinned}), the copy
     * engine reads it directly instead of after a CPU copy into staging.
     */
    @Override
    public void nicWriteHeldSource(final NicMapping mapping, final long offset, final MemorySegment src,
                                   final long srcOffset, final long len) {
        mapping.checkAccess(offset, len);
        final long dptr = devPtr(mapping.buffer(), offset, len);
        if (!src.isNative()) {
            host(src, srcOffset, len); // throws the named error
        }
        makeCurrent();
        nicStaging.write(((CudaBuffer) mapping.buffer()).address(), dptr, src, srcOffset, len, true);
    }

    /**
     * The device address a NIC read of {@code len} bytes at {@code offset} of the mapping starts at, after the checks
     * every read makes (an open mapping, the range inside it, native host memory to land in), this GPU's context
     * current.
     */
    private long readFrom(final NicMapping mapping, final long offset, final MemorySegment dst, final long dstOffset,
                          final long len) {
        mapping.checkAccess(offset, len);
        final long sptr = devPtr(mapping.buffer(), offset, len);
        if (!dst.isNative()) {
            host(dst, dstOffset, len); // throws the named error
        }
        makeCurrent();
        return sptr;
    }

    /** A copy-engine read of the mapped buffer, behind every earlier NIC write; complete when it returns. */
    @Override
    public void nicRead(final NicMapping mapping, final long offset, final MemorySegment dst, final long dstOffset,
                        final long len) {
        final long sptr = readFrom(mapping, offset, dst, dstOffset, len);
        nicStaging.read(sptr, dst, dstOffset, len);
    }

    /**
     * A read of a request's source on the NIC's read stream, an event behind it (the token of that event): not behind
     * the NIC's writes in flight, so a GPU-to-GPU transfer's device-to-host reads overlap the host-to-device copies of
     * what was read before (two copy engines).
     */
    @Override
    public long nicReadSourceStart(final NicMapping mapping, final long offset, final MemorySegment dst,
                                   final long dstOffset, final long len) {
        final long sptr = readFrom(mapping, offset, dst, dstOffset, len);
        return nicStaging.readSourceStart(sptr, dst, dstOffset, len);
    }

    @Override
    public void nicReadAwait(final long token) {
        if (token != 0) {
            makeCurrent();
            nicStaging.awaitSourceRead(token);
        }
    }

    /** Each read waits for a copy-engine round trip: the NIC should read a span at once. */
    @Override
    public boolean nicPrefersBulkReads() {
        return true;
    }

    /** The NIC stand-in's counters: reads straight into pinned memory ({@link #isPinned}), reads through staging. */
    public String nicStats() {
        return nicStaging.stats();
    }

    @Override
    public io.gdrkit.gpu.NicWriteCounters nicWriteCounters() {
        final long[] c = nicStaging.counters();
        return new io.gdrkit.gpu.NicWriteCounters(c[0], c[1], c[2], c[3], c[4], nicStaging.pinNote());
    }

    /** Pinned memory that NIC reads land in directly (see {@link NicStaging#readBuffer}). */
    @Override
    public MemorySegment nicReadBuffer(final long bytes) {
        makeCurrent();
        return nicStaging.readBuffer(bytes);
    }

    /** Waits until every NIC write issued before it has landed in device memory. */
    @Override
    public void nicCompletionFence() {
        makeCurrent();
        nicStaging.fence();
    }

    @Override
    public long nicFenceStart() {
        makeCurrent();
        return nicStaging.fenceStart();
    }

    @Override
    public boolean nicFenceDone(final long token) {
        makeCurrent();
        return nicStaging.fenceDone(token);
    }

    @Override
    public long bar1MappedBytes() {
        return bar1Mapped.get();
    }

    // ---------------------------------------------------------------- lifecycle and helpers

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            makeCurrent();
            nicStaging.close(); // first: it stops the agent kernel, which unloading its module would wait for
            for (final MemorySegment m : modules.values()) {
                final int ignored = (int) d.cuModuleUnload.invokeExact(m);
            }
            if (d.cuMemHostUnregister.isPresent()) {
                for (final long base : nicPinned.keySet()) {
                    final int ignoredPin = (int) d.cuMemHostUnregister.get().invokeExact(MemorySegment.ofAddress(base));
                }
                for (final long page : registeredPages) {
                    final int ignoredUnreg = (int) d.cuMemHostUnregister.get().invokeExact(MemorySegment.ofAddress(page));
                }
            }
            final int ignoredStream = (int) d.cuStreamDestroy.invokeExact(nicStream);
            final int ignoredReadStream = (int) d.cuStreamDestroy.invokeExact(nicReadStream);
            final int ignored = (int) d.cuDevicePrimaryCtxRelease.invokeExact(device);
            CURRENT.remove();
        } catch (final Throwable t) {
            // closing is best effort; the process is usually exiting
        }
        arena.close();
    }

    /** Whether {@link #close} has run (its primary context released). */
    boolean isClosed() {
        return closed;
    }

    private CudaBuffer own(final DeviceBuffer buffer) {
        if (!(buffer instanceof CudaBuffer b) || b.gpu() != this) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, buffer + " is not memory of CUDA device " + ordinal);
        }
        return b;
    }

    private static long devPtr(final DeviceBuffer buffer, final long offset, final long len) {
        if (!(buffer instanceof CudaBuffer b)) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, buffer + " is not CUDA device memory");
        }
        if (offset < 0 || len < 0 || offset + len > b.size()) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "range [" + offset + ", " + (offset + len)
                + ") outside " + b);
        }
        return b.address() + offset;
    }

    private static MemorySegment host(final MemorySegment seg, final long offset, final long len) {
        if (!seg.isNative()) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "host memory for CUDA copies must be native"
                + " (a heap segment cannot be handed to the driver)");
        }
        return seg.asSlice(offset, len);
    }

    private CudaStream stream(final GpuStream stream) {
        if (stream == null) {
            return defaultStream;
        }
        if (!(stream instanceof CudaStream s) || s.gpu() != this) {
            throw new GpuException("CUDA_ERROR_INVALID_HANDLE", 400, stream + " is not a stream of CUDA device " + ordinal);
        }
        return s;
    }

    private CudaEvent event(final GpuEvent event) {
        if (!(event instanceof CudaEvent e) || e.gpu() != this) {
            throw new GpuException("CUDA_ERROR_INVALID_HANDLE", 400, event + " is not an event of CUDA device " + ordinal);
        }
        return e;
    }

    @Override
    public String toString() {
        return describe();
    }
}
