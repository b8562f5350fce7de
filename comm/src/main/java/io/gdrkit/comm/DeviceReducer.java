/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuFunction;
import io.gdrkit.gpu.GpuStream;
import io.gdrkit.gpu.KernelArgs;
import io.gdrkit.gpu.ReduceKernel;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * Reductions on the GPU for collectives whose buffers live there ({@code --mem gpu}): the device half of a
 * {@link RegisteredBuffer} holds the data, the host half is the bounce buffer the NIC reads and writes. For each
 * received chunk: copy it and the destination range to the device, run {@link ReduceKernel#NAME} (a kernel on CUDA, SM
 * workers on a simulated GPU), copy the result back to the host half, which the next step sends on. The host half
 * stays the authoritative copy during a call; {@link #toDevice}/{@link #toHost} move a whole buffer at the call's
 * edges. Not thread-safe: one communicator, one thread.
 */
public final class DeviceReducer implements AutoCloseable {
    private final GpuDevice gpu;
    private final GpuFunction kernel;
    private final GpuStream stream;
    private final DeviceBuffer staging;
    private final KernelArgs args = new KernelArgs(7);
    private final Duration timeout;
    private final Dim3 block = new Dim3(256, 1, 1);
    private final int maxBlocks;
    private long launches;
    private long bounced;

    /**
     * Creates a reducer that runs reduction kernels on {@code gpu}, with a device staging buffer for received chunks.
     *
     * @param gpu          the GPU the buffers live on
     * @param stagingBytes the largest chunk a reduction receives (the communicator's chunk size)
     * @param timeout      the longest to wait for a kernel or a copy
     */
    public DeviceReducer(final GpuDevice gpu, final long stagingBytes, final Duration timeout) {
        this.gpu = gpu;
        this.kernel = gpu.function(ReduceKernel.MODULE, ReduceKernel.NAME);
        this.stream = gpu.createStream();
        this.staging = gpu.alloc(Math.max(64, stagingBytes));
        this.timeout = timeout;
        this.maxBlocks = gpu.isSimulated() ? 4 : 1024;
    }

    /** {@return the GPU this reducer runs on} */
    public GpuDevice gpu() {
        return gpu;
    }

    /** {@return kernel launches so far (a test's proof that the device reduced)} */
    public long launches() {
        return launches;
    }

    /**
     * Bytes copied between a buffer's device half and host memory on the data path so far (the bounce: each
     * call's edges and each reduced chunk's three copies); 0 on the GDR path. Filling and checking are not counted.
     *
     * @return the bytes copied so far
     */
    public long bouncedBytes() {
        return bounced;
    }

    /**
     * {@code dst[dstOff..] = op(dst, src[srcOff..])} for {@code count} elements, both in device memory: the GDR
     * path, where the NIC wrote the received chunk into {@code src} itself. One launch, no copy.
     *
     * @param dst    the destination, reduced in place
     * @param dstOff the destination's byte offset
     * @param src    the received chunk
     * @param srcOff the chunk's byte offset
     * @param count  the number of elements
     * @param type   the elements' type
     * @param op     the reduction operator
     */
    public void reduceOnDevice(final DeviceBuffer dst, final long dstOff, final DeviceBuffer src, final long srcOff,
                               final long count, final DataType type, final RedOp op) {
        if (count == 0) {
            return;
        }
        final int blocks = (int) Math.max(1, Math.min(maxBlocks, (count + block.x() - 1) / block.x()));
        gpu.launch(kernel, new Dim3(blocks, 1, 1), block, stream, ReduceKernel.args(args, dst, dstOff, src, srcOff,
            count, code(type), code(op)));
        gpu.synchronize(stream, timeout);
        launches++;
    }

    /**
     * Receive-side GDR with sends bouncing: the range about to be sent, from the device half up to the same offset
     * of the host half (counted).
     *
     * @param b     the buffer
     * @param off   the range's byte offset
     * @param bytes the range's length in bytes
     */
    public void bounceSend(final RegisteredBuffer b, final long off, final long bytes) {
        gpu.copyDtoH(b.seg(), off, b.dev(), b.devOff() + off, bytes);
        bounced += bytes;
    }

    /**
     * The bounce at a call's start: the device half's first {@code bytes} up to the host half (counted).
     *
     * @param b     the buffer
     * @param bytes the number of bytes to copy
     */
    public void bounceUp(final RegisteredBuffer b, final long bytes) {
        toHost(b, bytes);
        bounced += Math.max(0, bytes);
    }

    /**
     * The bounce at a call's end: the host half's first {@code bytes} down to the device half (counted).
     *
     * @param b     the buffer
     * @param bytes the number of bytes to copy
     */
    public void bounceDown(final RegisteredBuffer b, final long bytes) {
        toDevice(b, bytes);
        bounced += Math.max(0, bytes);
    }

    /**
     * {@code dst = op(dst, src)} for {@code count} elements: dst is the buffer's range at {@code dstOff} (host half
     * authoritative, device half updated), src {@code count} elements of host memory at {@code srcOff}.
     *
     * @param dst    the destination buffer, reduced in place
     * @param dstOff the destination's byte offset
     * @param src    the received chunk, in host memory
     * @param srcOff the chunk's byte offset
     * @param count  the number of elements
     * @param type   the elements' type
     * @param op     the reduction operator
     */
    public void reduce(final RegisteredBuffer dst, final long dstOff, final MemorySegment src, final long srcOff,
                       final long count, final DataType type, final RedOp op) {
        final long bytes = count * type.size();
        if (bytes == 0) {
            return;
        }
        gpu.copyHtoD(staging, 0, src, srcOff, bytes);
        gpu.copyHtoD(dst.dev(), dstOff, dst.seg(), dstOff, bytes);
        reduceOnDevice(dst.dev(), dstOff, staging, 0, count, type, op);
        gpu.copyDtoH(dst.seg(), dstOff, dst.dev(), dstOff, bytes);
        bounced += 3 * bytes;
    }

    /**
     * The host half's first {@code bytes} to the device half.
     *
     * @param b     the buffer
     * @param bytes the number of bytes to copy
     */
    public void toDevice(final RegisteredBuffer b, final long bytes) {
        if (bytes > 0) {
            gpu.copyHtoD(b.dev(), 0, b.seg(), 0, bytes);
        }
    }

    /**
     * The device half's first {@code bytes} to the host half.
     *
     * @param b     the buffer
     * @param bytes the number of bytes to copy
     */
    public void toHost(final RegisteredBuffer b, final long bytes) {
        if (bytes > 0) {
            gpu.copyDtoH(b.seg(), 0, b.dev(), 0, bytes);
        }
    }

    static int code(final DataType t) {
        return switch (t) {
            case INT8 -> ReduceKernel.INT8;
            case INT32 -> ReduceKernel.INT32;
            case INT64 -> ReduceKernel.INT64;
            case FLOAT16 -> ReduceKernel.FLOAT16;
            case BFLOAT16 -> ReduceKernel.BFLOAT16;
            case FLOAT32 -> ReduceKernel.FLOAT32;
            case FLOAT64 -> ReduceKernel.FLOAT64;
        };
    }

    static int code(final RedOp op) {
        return switch (op) {
            case SUM -> ReduceKernel.SUM;
            case PROD -> ReduceKernel.PROD;
            case MIN -> ReduceKernel.MIN;
            case MAX -> ReduceKernel.MAX;
        };
    }

    @Override
    public void close() {
        gpu.free(staging);
        gpu.destroyStream(stream);
    }
}
