/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.GpuException;

import java.lang.foreign.MemorySegment;

/** A window of another view: what a kernel sees through a pointer into the middle of a buffer. */
final class SliceView implements DeviceView {
    private final DeviceView base;
    private final long offset;
    private final long size;

    SliceView(final DeviceView base, final long offset, final long size) {
        this.base = base;
        this.offset = offset;
        this.size = size;
    }

    private long at(final long off, final long len) {
        if (off < 0 || len > size - off) {
            throw new GpuException("CUDA_ERROR_ILLEGAL_ADDRESS", 700, "access [" + off + ", +" + len + ") outside a "
                + size + "-byte window of device memory (simulated)");
        }
        return offset + off;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public byte getByte(final long off) {
        return base.getByte(at(off, 1));
    }

    @Override
    public int getInt(final long off) {
        return base.getInt(at(off, 4));
    }

    @Override
    public long getLong(final long off) {
        return base.getLong(at(off, 8));
    }

    @Override
    public int getIntAcquire(final long off) {
        return base.getIntAcquire(at(off, 4));
    }

    @Override
    public void putByte(final long off, final byte value) {
        base.putByte(at(off, 1), value);
    }

    @Override
    public void putInt(final long off, final int value) {
        base.putInt(at(off, 4), value);
    }

    @Override
    public void putLong(final long off, final long value) {
        base.putLong(at(off, 8), value);
    }

    @Override
    public void putIntRelease(final long off, final int value) {
        base.putIntRelease(at(off, 4), value);
    }

    @Override
    public void putLongRelease(final long off, final long value) {
        base.putLongRelease(at(off, 8), value);
    }

    @Override
    public void read(final long off, final MemorySegment dst, final long dstOffset, final long len) {
        base.read(at(off, len), dst, dstOffset, len);
    }
}
