/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/** The owner GPU's view: device memory as it is, racing with NIC writes landing. */
final class OwnerView implements DeviceView {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INT_VH = ValueLayout.JAVA_INT.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN).varHandle();
    private static final VarHandle LONG_VH = ValueLayout.JAVA_LONG.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN).varHandle();

    private final SimDeviceBuffer buffer;
    private final MemorySegment mem;

    OwnerView(final SimDeviceBuffer buffer) {
        this.buffer = buffer;
        this.mem = buffer.memory();
    }

    @Override
    public long size() {
        return buffer.size();
    }

    @Override
    public byte getByte(final long offset) {
        return mem.get(ValueLayout.JAVA_BYTE, offset);
    }

    @Override
    public int getInt(final long offset) {
        return mem.get(INT, offset);
    }

    @Override
    public long getLong(final long offset) {
        return mem.get(LONG, offset);
    }

    @Override
    public int getIntAcquire(final long offset) {
        return (int) INT_VH.getAcquire(mem, offset);
    }

    @Override
    public long getLongAcquire(final long offset) {
        return (long) LONG_VH.getAcquire(mem, offset);
    }

    @Override
    public void putByte(final long offset, final byte value) {
        mem.set(ValueLayout.JAVA_BYTE, offset, value);
    }

    @Override
    public void putInt(final long offset, final int value) {
        mem.set(INT, offset, value);
    }

    @Override
    public void putLong(final long offset, final long value) {
        mem.set(LONG, offset, value);
    }

    @Override
    public void putIntRelease(final long offset, final int value) {
        INT_VH.setRelease(mem, offset, value);
    }

    @Override
    public void putLongRelease(final long offset, final long value) {
        LONG_VH.setRelease(mem, offset, value);
    }

    @Override
    public void read(final long offset, final MemorySegment dst, final long dstOffset, final long len) {
        MemorySegment.copy(mem, offset, dst, dstOffset, len);
    }
}
