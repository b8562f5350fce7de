/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * Kernel parameters in declaration order: device pointers, 64-bit and 32-bit integers. Reusable: {@link #clear()}
 * and refill it for the next launch, so that a launch loop allocates nothing. CUDA copies the values at launch time
 * and the simulated GPU copies them into the launch, so refilling after {@code launch} returns is safe.
 */
public final class KernelArgs {
    /** Parameter kinds, which decide the native size (8 or 4 bytes). */
    public enum Kind { PTR, U64, U32 }

    private final Kind[] kinds;
    private final long[] values;
    private final DeviceBuffer[] buffers;
    private int count;

    public KernelArgs(final int capacity) {
        kinds = new Kind[capacity];
        values = new long[capacity];
        buffers = new DeviceBuffer[capacity];
    }

    public KernelArgs clear() {
        for (int i = 0; i < count; i++) {
            buffers[i] = null;
        }
        count = 0;
        return this;
    }

    /** A pointer to the start of {@code buffer}. */
    public KernelArgs ptr(final DeviceBuffer buffer) {
        return add(Kind.PTR, buffer.address(), buffer);
    }

    public KernelArgs u64(final long value) {
        return add(Kind.U64, value, null);
    }

    public KernelArgs u32(final int value) {
        return add(Kind.U32, value & 0xFFFF_FFFFL, null);
    }

    private KernelArgs add(final Kind kind, final long value, final DeviceBuffer buffer) {
        if (count == kinds.length) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "more than " + kinds.length + " kernel parameters");
        }
        kinds[count] = kind;
        values[count] = value;
        buffers[count] = buffer;
        count++;
        return this;
    }

    public int count() {
        return count;
    }

    public Kind kind(final int i) {
        check(i);
        return kinds[i];
    }

    public long value(final int i) {
        check(i);
        return values[i];
    }

    /** The buffer passed at {@code i} (a {@link Kind#PTR} parameter). */
    public DeviceBuffer buffer(final int i) {
        check(i);
        if (kinds[i] != Kind.PTR) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "kernel parameter " + i + " is " + kinds[i] + ", not PTR");
        }
        return buffers[i];
    }

    /** Copies {@code other} into this (used by the simulated GPU to capture a launch's parameters). */
    public void copyFrom(final KernelArgs other) {
        clear();
        for (int i = 0; i < other.count; i++) {
            add(other.kinds[i], other.values[i], other.buffers[i]);
        }
    }

    private void check(final int i) {
        if (i < 0 || i >= count) {
            throw new GpuException("CUDA_ERROR_INVALID_VALUE", 1, "kernel parameter " + i + " not set (" + count + " set)");
        }
    }
}
