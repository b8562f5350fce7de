/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.transport.NetTransport;
import java.lang.foreign.MemorySegment;

/**
 * A registered buffer: its host memory, its registration (null when there is no peer), and for GPU collectives
 * its device half (null in host memory; see {@link DeviceReducer}) from {@code devOff} on. Without GDR
 * ({@code direct} false) the NIC reads and writes the host half (the bounce buffer); with GDR the registration
 * covers the device half, the NIC moves the data in GPU memory, and the host half only serves filling and checking.
 *
 * @param seg    the host memory (the host half)
 * @param mr     the registration the NIC uses, or null when there is no peer
 * @param dev    the device half, or null in host memory
 * @param devOff where the buffer starts in {@code dev}, in bytes
 * @param direct true with GDR: the registration covers the device half
 * @param hostMr the host half's registration for sends when only receives use GDR, else null
 */
public record RegisteredBuffer(MemorySegment seg, NetTransport.MrHandle mr, io.gdrkit.gpu.DeviceBuffer dev, long devOff,
                     boolean direct, NetTransport.MrHandle hostMr) {
    /**
     * A buffer in host memory.
     *
     * @param seg the host memory
     * @param mr  its registration, or null when there is no peer
     */
    public RegisteredBuffer(final MemorySegment seg, final NetTransport.MrHandle mr) {
        this(seg, mr, null, 0, false, null);
    }

    /**
     * A buffer with a device half, without GDR: the NIC uses the host half.
     *
     * @param seg the host memory (the host half)
     * @param mr  the host half's registration, or null when there is no peer
     * @param dev the device half
     */
    public RegisteredBuffer(final MemorySegment seg, final NetTransport.MrHandle mr, final io.gdrkit.gpu.DeviceBuffer dev) {
        this(seg, mr, dev, 0, false, null);
    }

    /**
     * The address the NIC writes at offset 0: the device half's with GDR, else the host half's.
     *
     * @return the address
     */
    public long nicBase() {
        return direct ? dev.address() + devOff : seg.address();
    }

    /**
     * With receive-side GDR only ({@code hostMr} set: the send gate said no), sends go from the host half, copied
     * from the device right before; {@link #nicBase()} and {@link #mr()} are then the receive side's.
     *
     * @return true when sends go from the host half
     */
    public boolean sendBounces() {
        return hostMr != null;
    }

    /**
     * Copies {@code bytes} within this rank (the part of a collective that stays local): in GPU memory between GDR
     * buffers (where the data is), else between host halves.
     *
     * @param src    the source buffer
     * @param srcOff the source's byte offset
     * @param dst    the destination buffer
     * @param dstOff the destination's byte offset
     * @param bytes  the number of bytes to copy
     * @throws IllegalStateException if one buffer is a GDR buffer and the other a host-bounce one
     */
    public static void copy(final RegisteredBuffer src, final long srcOff, final RegisteredBuffer dst,
                            final long dstOff,
                            final long bytes) {
        if (src.direct() != dst.direct()) {
            throw new IllegalStateException("a local copy between a GDR buffer and a host-bounce buffer");
        }
        if (src.direct()) {
            if (bytes > 0 && src.nicBase() + srcOff != dst.nicBase() + dstOff) {
                src.dev().device().copyDtoD(dst.dev(), dst.devOff() + dstOff, src.dev(), src.devOff() + srcOff, bytes);
            }
            return;
        }
        if (bytes > 0 && (src.seg() != dst.seg() || srcOff != dstOff)) {
            MemorySegment.copy(src.seg(), srcOff, dst.seg(), dstOff, bytes);
        }
    }
}
