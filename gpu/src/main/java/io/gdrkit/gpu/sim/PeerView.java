/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Another GPU's view of a buffer (over NVLink or PCIe peer access): reads go through the owner's posted-write queue,
 * so NIC writes that have landed for the owner but not retired are still invisible here. Writes go straight to
 * memory.
 */
final class PeerView implements DeviceView {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    private final SimDeviceBuffer buffer;
    private final PostedWriteQueue ownerQueue;
    private final OwnerView direct;
    private final MemorySegment scratch;

    PeerView(final SimDeviceBuffer buffer, final PostedWriteQueue ownerQueue, final Arena arena) {
        this.buffer = buffer;
        this.ownerQueue = ownerQueue;
        this.direct = new OwnerView(buffer);
        this.scratch = arena.allocate(8, 8);
    }

    @Override
    public long size() {
        return buffer.size();
    }

    @Override
    public byte getByte(final long offset) {
        ownerQueue.peerRead(buffer, offset, scratch, 0, 1);
        return scratch.get(ValueLayout.JAVA_BYTE, 0);
    }

    @Override
    public int getInt(final long offset) {
        ownerQueue.peerRead(buffer, offset, scratch, 0, 4);
        return scratch.get(INT, 0);
    }

    @Override
    public long getLong(final long offset) {
        ownerQueue.peerRead(buffer, offset, scratch, 0, 8);
        return scratch.get(LONG, 0);
    }

    @Override
    public int getIntAcquire(final long offset) {
        final int v = getInt(offset); // peerRead takes the queue lock, which orders it
        VarHandle.acquireFence();
        return v;
    }

    @Override
    public void putByte(final long offset, final byte value) {
        direct.putByte(offset, value);
    }

    @Override
    public void putInt(final long offset, final int value) {
        direct.putInt(offset, value);
    }

    @Override
    public void putLong(final long offset, final long value) {
        direct.putLong(offset, value);
    }

    @Override
    public void putIntRelease(final long offset, final int value) {
        direct.putIntRelease(offset, value);
    }

    @Override
    public void putLongRelease(final long offset, final long value) {
        direct.putLongRelease(offset, value);
    }

    @Override
    public void read(final long offset, final MemorySegment dst, final long dstOffset, final long len) {
        ownerQueue.peerRead(buffer, offset, dst, dstOffset, len);
    }
}
