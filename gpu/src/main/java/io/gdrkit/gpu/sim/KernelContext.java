/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import io.gdrkit.gpu.Dim3;
import io.gdrkit.gpu.GpuException;
import io.gdrkit.gpu.KernelArgs;

import java.lang.foreign.Arena;

/** What one block of a simulated kernel sees: its indices, the launch parameters and views of device memory. */
public final class KernelContext {
    private final SimGpu gpu;
    private final int blockIdx;
    private final Dim3 grid;
    private final Dim3 block;
    private final KernelArgs args;
    private final Arena arena;

    KernelContext(final SimGpu gpu, final int blockIdx, final Dim3 grid, final Dim3 block, final KernelArgs args,
                  final Arena arena) {
        this.gpu = gpu;
        this.blockIdx = blockIdx;
        this.grid = grid;
        this.block = block;
        this.args = args;
        this.arena = arena;
    }

    /** Linear block index in the grid. */
    public int blockIdx() {
        return blockIdx;
    }

    public Dim3 grid() {
        return grid;
    }

    public Dim3 block() {
        return block;
    }

    /** Total threads of the launch, for grid-stride loops. */
    public long totalThreads() {
        return grid.count() * block.count();
    }

    public KernelArgs args() {
        return args;
    }

    public long u64(final int i) {
        return args.value(i);
    }

    public int u32(final int i) {
        return (int) args.value(i);
    }

    /** The GPU running this kernel. */
    public SimGpu gpu() {
        return gpu;
    }

    /**
     * A view of pointer parameter {@code i}: direct for this GPU's memory, through the owner's visibility model for a
     * peer GPU's memory (which needs peer access).
     */
    public DeviceView view(final int i) {
        return view((SimDeviceBuffer) args.buffer(i));
    }

    /**
     * A view of {@code len} bytes at device address {@code address}, a pointer the kernel read from memory (an array
     * of pointers): the address is resolved to the buffer holding it, on this GPU or a peer, with the same rules as
     * {@link #view(int)}. An address outside every live buffer is {@code CUDA_ERROR_ILLEGAL_ADDRESS}, as the access
     * would be on a GPU.
     */
    public DeviceView view(final long address, final long len) {
        final SimDeviceBuffer b = gpu.system().bufferAt(address);
        final long offset = b == null ? 0 : address - b.address();
        if (b == null || len < 0 || len > b.size() - offset) {
            throw new GpuException("CUDA_ERROR_ILLEGAL_ADDRESS", 700, "kernel on GPU " + gpu.ordinal() + " touched ["
                + "0x" + Long.toHexString(address) + ", +" + len + ")" + (b == null ? ", in no live buffer" : ", past "
                + b) + " (simulated)");
        }
        final DeviceView v = view(b);
        return offset == 0 && len == b.size() ? v : new SliceView(v, offset, len);
    }

    private DeviceView view(final SimDeviceBuffer b) {
        b.checkLive();
        if (b.gpu() == gpu) {
            return new OwnerView(b);
        }
        if (!gpu.system().peerAccessEnabled(gpu.ordinal(), b.gpu().ordinal())) {
            throw new GpuException("CUDA_ERROR_ILLEGAL_ADDRESS", 700, "kernel on GPU " + gpu.ordinal()
                + " touched memory of GPU " + b.gpu().ordinal() + " without peer access (simulated)");
        }
        return new PeerView(b, b.gpu().postedWrites(), arena);
    }

    /** True once the GPU is closing: persistent kernels must return. */
    public boolean stopRequested() {
        return gpu.isClosing();
    }
}
