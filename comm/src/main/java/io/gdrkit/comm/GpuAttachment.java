/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.transport.NetTransport;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.GpuDmaMemory;
import java.lang.foreign.MemorySegment;
import java.util.IdentityHashMap;

/**
 * A communicator's GPU side: how its buffers are registered with the NIC (the device memory itself with GDR, by
 * DMA-BUF or peermem as the control plane decided, else the host half that bounces), the channels' device staging
 * with GDR, and the connector gate (a GDR registration that fails before any GPU buffer is registered turns GDR off
 * for this rank and says why). Without a GPU it registers host memory only.
 */
final class GpuAttachment {
    private final NetTransport net;
    /** Any of the communicator's connections: registrations are global to the transport (null with one rank). */
    private final Object anyComm;
    private final int rank;
    private final int n;
    private final int chunk;
    private final int steps;
    // the communicator's host staging, shared: with GDR its landing addresses and registrations point at the device
    private final MemorySegment[] staging;
    private final NetTransport.MrHandle[] stagingMr;
    private final long[] stagingAddr;
    private final NetTransport.MrHandle[][] stagingNicMr;
    /** The GDR decision for this rank's GPU buffers (null in host memory). */
    CollGdr gdr;
    /** Per channel, device staging registered as a GPU MR (null without GDR). */
    DeviceBuffer[] stagingDev;
    private NetTransport.MrHandle[] stagingDevMr;
    /** Mappings made for peermem registrations of GPU memory, closed at deregistration. */
    private final IdentityHashMap<NetTransport.MrHandle, GpuDmaMemory> mappings = new IdentityHashMap<>();
    /** GPU buffers registered as device memory and not yet given back. */
    private int liveDirect;

    GpuAttachment(final NetTransport net, final Object anyComm, final int rank, final int n, final int chunk, final int steps,
                  final MemorySegment[] staging, final NetTransport.MrHandle[] stagingMr, final long[] stagingAddr,
                  final NetTransport.MrHandle[][] stagingNicMr) {
        this.net = net;
        this.anyComm = anyComm;
        this.rank = rank;
        this.n = n;
        this.chunk = chunk;
        this.steps = steps;
        this.staging = staging;
        this.stagingMr = stagingMr;
        this.stagingAddr = stagingAddr;
        this.stagingNicMr = stagingNicMr;
    }

    /** See {@link Communicator#register(MemorySegment, DeviceBuffer)}. */
    RegisteredBuffer register(final MemorySegment seg, final DeviceBuffer dev) {
        if (dev != null && gdr != null && gdr.on()) {
            try {
                final NetTransport.MrHandle g = n > 1 ? regGpu(dev) : null;
                NetTransport.MrHandle h = null;
                if (!gdr.sendOn() && n > 1) {
                    try {
                        h = net.regMr(anyComm, seg); // sends bounce: the NIC reads the host half
                    } catch (final RuntimeException e) {
                        deregGpu(g);
                        throw e;
                    }
                }
                final RegisteredBuffer b = new RegisteredBuffer(seg, g, dev, 0, true, h);
                liveDirect++;
                return b;
            } catch (final RuntimeException e) {
                if (liveDirect > 0) {
                    throw new CollException("rank " + rank + ": registering " + dev.size() + " bytes of GPU memory "
                        + "with the NIC failed after other GPU buffers were registered: " + e.getMessage(), e);
                }
                dropGdr("registration (" + gdr.mechanism().label() + ") of " + dev.size() + " bytes of GPU "
                    + dev.device().ordinal() + " memory failed: " + e.getMessage());
            }
        }
        return new RegisteredBuffer(seg, n > 1 ? net.regMr(anyComm, seg) : null, dev);
    }

    /** Gives back a buffer's registrations. */
    void deregister(final RegisteredBuffer b) {
        if (b.direct()) {
            liveDirect--;
        }
        if (b.mr() != null) {
            deregGpu(b.mr());
        }
        if (b.hostMr() != null) {
            net.deregMr(anyComm, b.hostMr());
        }
    }

    /**
     * Takes the control plane's decision for {@code gpu}: with GDR the channels' staging moves to device memory
     * registered with the NIC; a staging registration that fails is the connector gate.
     */
    void attach(final GpuDevice gpu, final CollGdr decision) {
        gdr = decision;
        if (!gdr.on()) {
            return;
        }
        final int channels = staging.length;
        final long bytes = ((long) chunk * steps + 4095) / 4096 * 4096; // DMA-BUF exports whole pages
        stagingDev = new DeviceBuffer[channels];
        stagingDevMr = new NetTransport.MrHandle[channels];
        try {
            for (int c = 0; c < channels; c++) {
                stagingDev[c] = gpu.alloc(bytes);
                if (n > 1) {
                    stagingDevMr[c] = regGpu(stagingDev[c]);
                }
            }
        } catch (final RuntimeException e) {
            dropGdr("registration (" + gdr.mechanism().label() + ") of the " + bytes + "-byte device staging on GPU "
                + gpu.ordinal() + " failed: " + e.getMessage());
            return;
        }
        for (int c = 0; c < channels; c++) {
            stagingAddr[c] = stagingDev[c].address();
            stagingNicMr[c][0] = stagingDevMr[c];
        }
    }

    /** Registers GPU memory through the seam by the decided mechanism. */
    private NetTransport.MrHandle regGpu(final DeviceBuffer dev) {
        final GpuDevice gpu = dev.device();
        if (gdr.mechanism() == io.gdrkit.gdr.reg.RegMechanism.DMABUF_FD) {
            final io.gdrkit.gpu.DmaBufExport ex = gpu.exportDmaBuf(dev);
            if (!ex.supported()) {
                throw new CollException("DMA-BUF export of GPU " + gpu.ordinal() + " memory: " + ex.evidence());
            }
            try {
                return net.regMrDmaBuf(anyComm, dev.address(), dev.size(), 0, ex.fd());
            } finally {
                io.gdrkit.core.mem.DmaBuf.close(ex.fd()); // the MR keeps the attachment, as NCCL closes its fd
            }
        }
        final GpuDmaMemory m = new GpuDmaMemory(gpu, dev);
        try {
            final NetTransport.MrHandle h = net.regMr(anyComm, m);
            mappings.put(h, m);
            return h;
        } catch (final RuntimeException e) {
            m.close();
            throw e;
        }
    }

    private void deregGpu(final NetTransport.MrHandle h) {
        net.deregMr(anyComm, h);
        final GpuDmaMemory m = mappings.remove(h);
        if (m != null) {
            m.close();
        }
    }

    /** The connector gate failed: back to the host staging, device staging released. */
    private void dropGdr(final String why) {
        gdr = gdr.afterRegistration(why);
        close();
        for (int c = 0; c < staging.length; c++) {
            stagingAddr[c] = staging[c].address();
            stagingNicMr[c][0] = stagingMr[c];
        }
    }

    /** Releases the device staging (at close, or when GDR is dropped). */
    void close() {
        if (stagingDev == null) {
            return;
        }
        for (int c = 0; c < stagingDev.length; c++) {
            if (stagingDevMr[c] != null) {
                deregGpu(stagingDevMr[c]);
            }
            if (stagingDev[c] != null) {
                stagingDev[c].device().free(stagingDev[c]);
            }
        }
        stagingDev = null;
        stagingDevMr = null;
    }
}
