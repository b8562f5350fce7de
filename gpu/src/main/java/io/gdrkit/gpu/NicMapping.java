/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

import java.lang.foreign.MemorySegment;

/**
 * A device buffer mapped for NIC access, holding {@link #apertureBytes()} of BAR1 until closed. Hot-path calls
 * delegate to the owning {@link GpuDmaTarget} without lookups.
 */
public final class NicMapping implements AutoCloseable {
    private final GpuDmaTarget target;
    private final DeviceBuffer buffer;
    private final long apertureBytes;
    private final Runnable release;
    private volatile boolean open = true;

    public NicMapping(final GpuDmaTarget target, final DeviceBuffer buffer, final long apertureBytes,
                      final Runnable release) {
        this.target = target;
        this.buffer = buffer;
        this.apertureBytes = apertureBytes;
        this.release = release;
    }

    public DeviceBuffer buffer() {
        return buffer;
    }

    /** BAR1 bytes this mapping holds (the buffer size rounded up to the aperture's page size). */
    public long apertureBytes() {
        return apertureBytes;
    }

    public boolean isOpen() {
        return open;
    }

    /** Same as {@link GpuDmaTarget#nicWrite}. */
    public void write(final long offset, final MemorySegment src, final long srcOffset, final long len) {
        target.nicWrite(this, offset, src, srcOffset, len);
    }

    /** Same as {@link GpuDmaTarget#nicRead}. */
    public void read(final long offset, final MemorySegment dst, final long dstOffset, final long len) {
        target.nicRead(this, offset, dst, dstOffset, len);
    }

    /** Same as {@link GpuDmaTarget#nicReadSourceStart}. */
    public long readSourceStart(final long offset, final MemorySegment dst, final long dstOffset, final long len) {
        return target.nicReadSourceStart(this, offset, dst, dstOffset, len);
    }

    /** Checks that the mapping is open and {@code [offset, offset+len)} lies inside the buffer. */
    public void checkAccess(final long offset, final long len) {
        if (!open) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "NIC mapping of buffer 0x"
                + Long.toHexString(buffer.address()) + " is closed");
        }
        if (offset < 0 || len < 0 || offset + len > buffer.size()) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "NIC access [" + offset + ", " + (offset + len)
                + ") outside buffer of " + buffer.size() + " bytes");
        }
    }

    @Override
    public void close() {
        if (open) {
            open = false;
            release.run();
        }
    }
}
