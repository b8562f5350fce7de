/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/** Simulated device memory: native memory owned by the GPU, known to kernels and NICs by a synthetic address. */
public final class SimDeviceBuffer implements DeviceBuffer {
    private final SimGpu gpu;
    private final long address;
    private final long size;
    private final Arena arena;
    private final MemorySegment memory;
    private volatile boolean syncMemops;
    /** Open NIC mappings: a synchronous copy's early return is observable only while a NIC can reach the buffer. */
    private final AtomicInteger nicMappings = new AtomicInteger();
    private volatile boolean freed;

    SimDeviceBuffer(final SimGpu gpu, final long address, final long size) {
        this.gpu = gpu;
        this.address = address;
        this.size = size;
        this.arena = Arena.ofShared();
        // 256-byte alignment like cudaMalloc's minimum guarantee, so kernels can use aligned loads
        this.memory = arena.allocate(Math.max(size, 1), 256);
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public GpuDevice device() {
        return gpu;
    }

    public SimGpu gpu() {
        return gpu;
    }

    /**
     * The device memory itself: what the owner GPU's SMs see once writes have landed. Tests use it to inspect
     * memory without going through the visibility model.
     */
    public MemorySegment memory() {
        checkLive();
        return memory;
    }

    boolean syncMemops() {
        return syncMemops;
    }

    void syncMemops(final boolean enabled) {
        syncMemops = enabled;
    }

    boolean nicMapped() {
        return nicMappings.get() > 0;
    }

    void nicMapped(final boolean mapped) {
        nicMappings.addAndGet(mapped ? 1 : -1);
    }

    void checkLive() {
        if (freed) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "device buffer 0x" + Long.toHexString(address)
                + " on " + gpu.attributes().name() + " was freed");
        }
    }

    void checkRange(final long offset, final long len) {
        checkLive();
        if (offset < 0 || len < 0 || offset + len > size) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "range [" + offset + ", " + (offset + len)
                + ") outside device buffer 0x" + Long.toHexString(address) + " of " + size + " bytes");
        }
    }

    boolean isFreed() {
        return freed;
    }

    void release() {
        freed = true;
        arena.close();
    }

    @Override
    public String toString() {
        return "SimDeviceBuffer[gpu" + gpu.ordinal() + " 0x" + Long.toHexString(address) + ", " + size + " B, simulated]";
    }
}
