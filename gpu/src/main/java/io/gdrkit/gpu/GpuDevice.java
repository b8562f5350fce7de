/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * One GPU: simulated ({@code io.gdrkit.gpu.sim.SimGpu}) or real through the CUDA driver API
 * ({@code io.gdrkit.gpu.cuda.CudaGpu}). Methods mirror the CUDA driver API; failures throw {@link GpuException}
 * carrying CUDA's error name. Blocking calls take a timeout and name what they waited for when it expires.
 */
public interface GpuDevice extends AutoCloseable {
    /** Device ordinal within its system (CUDA: the {@code CUdevice}). */
    int ordinal();

    /** True for a simulated GPU; everything that prints about one must say so. */
    boolean isSimulated();

    /**
     * {@code cuDriverGetVersion}: the driver's CUDA version as 1000 * major + 10 * minor (13000 for 13.0). A simulated
     * GPU answers for its simulated driver.
     */
    int driverVersion();

    GpuAttributes attributes();

    /**
     * The device's PCI bus id ({@code cuDeviceGetPCIBusId}, e.g. {@code 0000:00:06.0}): with the host, what tells
     * whether two processes use the same GPU. Null on a simulated GPU, which is no PCI device.
     */
    default String pciBusId() {
        return null;
    }

    /** One line naming the device, its kind (simulated or CUDA) and its GPUDirect attributes. */
    String describe();

    // ---- memory
    DeviceBuffer alloc(long bytes);

    void free(DeviceBuffer buffer);

    /** Page-locked host memory ({@code cuMemAllocHost}); the NIC and the copy engines can use it directly. */
    MemorySegment allocHost(long bytes);

    void freeHost(MemorySegment host);

    /**
     * Pins existing host memory for the GPU ({@code cuMemHostRegister}, flags 0): the page-locking a host-bounce
     * buffer gets. Timed by {@code gdrkit regtiming}.
     *
     * @throws GpuException on failure, and from a device that has no such call (a simulated GPU)
     */
    default void hostRegister(final MemorySegment host) {
        throw new GpuException("CUDA_ERROR_NOT_SUPPORTED", 801, describe() + ": cuMemHostRegister is not "
            + "available on this device" + (isSimulated() ? " (simulated GPU: nothing to pin)" : ""));
    }

    /** Unpins memory pinned by {@link #hostRegister(MemorySegment)} ({@code cuMemHostUnregister}). */
    default void hostUnregister(final MemorySegment host) {
        throw new GpuException("CUDA_ERROR_NOT_SUPPORTED", 801, describe() + ": cuMemHostUnregister is not "
            + "available on this device" + (isSimulated() ? " (simulated GPU)" : ""));
    }

    /**
     * Makes host memory that someone else allocated (a NIC's queue rings) reachable by this GPU's kernels and returns
     * its device address: {@code cuMemHostRegister(DEVICEMAP)} of the pages it spans plus
     * {@code cuMemHostGetDevicePointer} on CUDA; on the simulated GPU (whose kernels are Java) its address.
     * The pages stay registered until the device closes.
     */
    default long mapHost(final MemorySegment host) {
        throw new GpuException("CUDA_ERROR_NOT_SUPPORTED", 801, "this GPU cannot map host memory");
    }

    // ---- synchronous copies (complete when the call returns)
    void copyHtoD(DeviceBuffer dst, long dstOffset, MemorySegment src, long srcOffset, long len);

    void copyDtoH(MemorySegment dst, long dstOffset, DeviceBuffer src, long srcOffset, long len);

    void copyDtoD(DeviceBuffer dst, long dstOffset, DeviceBuffer src, long srcOffset, long len);

    // ---- streams, copies on streams
    GpuStream createStream();

    /**
     * A stream that the synchronous copies (the legacy default stream) neither wait for nor are ordered with
     * ({@code CU_STREAM_NON_BLOCKING}): for a persistent kernel that runs while the host keeps copying. On the
     * simulated GPU every stream already behaves so.
     */
    default GpuStream createNonBlockingStream() {
        return createStream();
    }

    void destroyStream(GpuStream stream);

    void copyHtoDAsync(DeviceBuffer dst, long dstOffset, MemorySegment src, long srcOffset, long len, GpuStream stream);

    void copyDtoHAsync(MemorySegment dst, long dstOffset, DeviceBuffer src, long srcOffset, long len, GpuStream stream);

    void copyDtoDAsync(DeviceBuffer dst, long dstOffset, DeviceBuffer src, long srcOffset, long len, GpuStream stream);

    /**
     * {@code cuStreamQuery}: true when all work on {@code stream} has completed. Does not wait, and is not a
     * synchronization: on the simulated GPU it makes no posted NIC write visible.
     */
    boolean isComplete(GpuStream stream);

    /** Waits until all work on {@code stream} has completed; rethrows a kernel failure as a {@link GpuException}. */
    void synchronize(GpuStream stream, Duration timeout);

    // ---- events
    GpuEvent createEvent();

    void destroyEvent(GpuEvent event);

    void record(GpuEvent event, GpuStream stream);

    void synchronize(GpuEvent event, Duration timeout);

    /** Milliseconds between two recorded, completed events. */
    float elapsedMillis(GpuEvent start, GpuEvent end);

    // ---- kernels
    /**
     * A kernel by module and name. The simulated GPU maps names to Java kernels; CUDA loads
     * {@code io/gdrkit/gpu/cuda/<module>.ptx} from the class path.
     */
    GpuFunction function(String module, String name);

    void launch(GpuFunction function, Dim3 grid, Dim3 block, GpuStream stream, KernelArgs args);

    // ---- pointer attributes
    /** {@code CU_POINTER_ATTRIBUTE_SYNC_MEMOPS} (6) of the buffer's range. */
    boolean syncMemops(DeviceBuffer buffer);

    void setSyncMemops(DeviceBuffer buffer, boolean enabled);

    // ---- GPUDirect
    /** Exports the buffer as a DMA-BUF fd, or says why it cannot. Never throws for "not supported". */
    DmaBufExport exportDmaBuf(DeviceBuffer buffer);

    /**
     * {@code cuFlushGPUDirectRDMAWrites(CURRENT_CTX, scope)}: blocks until earlier NIC writes are visible to
     * {@code scope}; a no-op when the device's writes ordering already covers the scope.
     */
    FlushResult flushGpuDirectRdmaWrites(FlushScope scope);

    /** The NIC's view of this GPU's memory. */
    GpuDmaTarget dmaTarget();

    @Override
    void close();
}
