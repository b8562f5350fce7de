/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.net;

import io.gdrkit.gdr.gate.FlushPolicy;
import io.gdrkit.gdr.gate.GdrDecision;
import io.gdrkit.gdr.gate.GdrGate;
import io.gdrkit.gdr.gate.GdrSettings;
import io.gdrkit.gdr.gate.RdmaReadFlush;
import io.gdrkit.gdr.reg.BufferPlacement;
import io.gdrkit.gdr.reg.GpuMrRegistrar;
import io.gdrkit.gdr.reg.NetMrCache;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.verbs.MemoryRegion;
import java.lang.foreign.MemorySegment;

/**
 * One end's buffers: the GPU buffer holding the application's data and, when the NIC may not touch it, the pinned
 * host staging buffer the NIC uses instead (the host bounce). With GDR the GPU buffer is registered through the
 * NIC's MR cache by the decided mechanism, and a receive side that needs a flush gets its loopback flush QP.
 */
final class ConnectorSide implements AutoCloseable {
    final NetEndpoint end;
    final boolean send;
    final DeviceBuffer gpuBuffer;
    final GdrDecision gdr;
    final BufferPlacement placement;
    final FlushPolicy.Decision flush;
    /** The MR the NIC reads (send) or writes (receive): over GPU memory with GDR, over the staging otherwise. */
    final MemoryRegion mr;
    /** Pinned host staging, or null with GDR. */
    final MemorySegment staging;
    /** The flush QP, or null when no flush is needed. */
    final RdmaReadFlush flusher;
    private final NetMrCache cache;
    private final GpuMrRegistrar registrar;
    private final Object cachedMr;

    private ConnectorSide(final NetEndpoint end, final boolean send, final DeviceBuffer gpuBuffer,
                          final GdrDecision gdr, final FlushPolicy.Decision flush, final MemoryRegion mr,
                          final MemorySegment staging, final RdmaReadFlush flusher, final NetMrCache cache,
                          final GpuMrRegistrar registrar, final Object cachedMr) {
        this.end = end;
        this.send = send;
        this.gpuBuffer = gpuBuffer;
        this.gdr = gdr;
        this.placement = BufferPlacement.decide(gdr.enabled(), false, false);
        this.flush = flush;
        this.mr = mr;
        this.staging = staging;
        this.flusher = flusher;
        this.cache = cache;
        this.registrar = registrar;
        this.cachedMr = cachedMr;
    }

    /**
     * Allocates and registers one end's buffers of {@code bytes} (whole pages). A GDR step that fails turns GDR off
     * through {@link GdrGate#afterConnect} and the end bounces through host memory; a failure of the bounce itself
     * is thrown, after releasing what was made.
     */
    static ConnectorSide open(final NetEndpoint end, final boolean send, final GdrDecision gates, final long bytes,
                              final GdrSettings settings) {
        final GpuDevice gpu = end.gpu();
        final DeviceBuffer gpuBuffer = gpu.alloc(bytes);
        GdrDecision gdr = gates;
        if (gdr.enabled()) {
            final Direct direct = direct(end, send, gpuBuffer, gdr, settings);
            if (direct.side != null) {
                return direct.side;
            }
            gdr = GdrGate.afterConnect(gdr, false, direct.failure);
        }
        MemorySegment staging = null;
        try {
            staging = gpu.allocHost(bytes);
            final MemoryRegion mr = end.nic().pd().registerMr(staging, NetNic.MR_ACCESS);
            final FlushPolicy.Decision flush = send ? null : FlushPolicy.decide(end.caps(), gdr, settings);
            return new ConnectorSide(end, send, gpuBuffer, gdr, flush, mr, staging, null, null, null, null);
        } catch (final RuntimeException e) {
            if (staging != null) {
                gpu.freeHost(staging);
            }
            gpu.free(gpuBuffer);
            throw e;
        }
    }

    /** The GDR attempt: the side, or why it failed (and nothing left behind). */
    private record Direct(ConnectorSide side, String failure) {
    }

    private static Direct direct(final NetEndpoint end, final boolean send, final DeviceBuffer gpuBuffer,
                                 final GdrDecision gdr, final GdrSettings settings) {
        final NetNic nic = end.nic();
        final GpuMrRegistrar registrar = nic.registrar(end.gpu(), gdr.mechanism());
        final NetMrCache cache = nic.cache(end.gpu(), gdr.mechanism());
        registrar.track(gpuBuffer);
        final Object cached;
        try {
            cached = cache.register(gpuBuffer.address(), gpuBuffer.size());
        } catch (final RuntimeException e) {
            registrar.untrack(gpuBuffer);
            return new Direct(null, "registration (" + gdr.mechanism().label() + ") of GPU " + end.gpu().ordinal()
                + " memory on " + nic.caps().name() + " failed: " + e.getMessage());
        }
        final MemoryRegion mr = ((GpuMrRegistrar.GpuMr) cached).mr();
        final FlushPolicy.Decision flush = send ? null : FlushPolicy.decide(end.caps(), gdr, settings);
        RdmaReadFlush flusher = null;
        if (flush != null && flush.flush()) {
            try {
                flusher = new RdmaReadFlush(nic.context(), nic.pd());
            } catch (final RuntimeException e) {
                cache.deregister(cached);
                registrar.untrack(gpuBuffer);
                return new Direct(null, "connect: the flush QP (1-byte RDMA READ loopback) on " + nic.caps().name()
                    + " could not be made: " + e.getMessage());
            }
        }
        return new Direct(new ConnectorSide(end, send, gpuBuffer, gdr, flush, mr, null, flusher, cache, registrar,
            cached), null);
    }

    /** Releases the MR (through the cache), the flush QP and the buffers. */
    @Override
    public void close() {
        if (flusher != null) {
            flusher.close();
        }
        if (cachedMr != null) {
            cache.deregister(cachedMr);
            registrar.untrack(gpuBuffer);
        } else {
            mr.deregister();
            end.gpu().freeHost(staging);
        }
        end.gpu().free(gpuBuffer);
    }
}
