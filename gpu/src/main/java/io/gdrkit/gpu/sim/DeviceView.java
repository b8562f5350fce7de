/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import java.lang.foreign.MemorySegment;

/**
 * How a kernel on a simulated GPU sees one device buffer. The owner's view reads device memory directly (so it
 * sees exactly the NIC writes that have landed); a peer GPU's view also hides writes that have landed but not
 * retired. Values are little-endian, like the GPU. Not thread-safe: one view per kernel block.
 */
public interface DeviceView {
    long size();

    byte getByte(long offset);

    int getInt(long offset);

    long getLong(long offset);

    /** An acquire load, for polling a flag: later reads are not satisfied before it. */
    int getIntAcquire(long offset);

    /** An acquire load of a 64-bit word (a signal or a counter). */
    default long getLongAcquire(final long offset) {
        final long v = getLong(offset);
        java.lang.invoke.VarHandle.acquireFence();
        return v;
    }

    void putByte(long offset, byte value);

    void putInt(long offset, int value);

    void putLong(long offset, long value);

    /** A release store, for publishing a flag after data. */
    void putIntRelease(long offset, int value);

    /** A release store of a 64-bit word (8-byte aligned), for publishing a result slot after its other words. */
    void putLongRelease(long offset, long value);

    /** Copies {@code len} bytes at {@code offset} into {@code dst}. */
    void read(long offset, MemorySegment dst, long dstOffset, long len);
}
