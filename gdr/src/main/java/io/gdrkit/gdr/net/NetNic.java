/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.net;

import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.reg.GpuMrRegistrar;
import io.gdrkit.gdr.reg.NetMrCache;
import io.gdrkit.gdr.reg.RegMechanism;
import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.ProtectionDomain;
import io.gdrkit.verbs.VerbsContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One NET device as connectors use it: its context, one PD for every connection on it (as NCCL's IB transport
 * shares one PD per device), what it offers ({@link NetCaps}, probed), and its MR caches for GPU memory.
 * There is one cache per GPU and mechanism, because a simulated GPU's addresses are only unique within its system.
 */
public final class NetNic implements AutoCloseable {
    /** The access NCCL registers every NET buffer with: LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ. */
    public static final int MR_ACCESS = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_READ;

    private final int netDev;
    private final VerbsContext ctx;
    private final ProtectionDomain pd;
    private final NetCaps caps;
    private final List<Cache> caches = new ArrayList<>();

    private record Cache(GpuDevice gpu, GpuMrRegistrar registrar, NetMrCache cache) {
    }

    /**
     * @param netDev the device index log lines name (NET/IB/&lt;netDev&gt;)
     * @param ctx    an open context; the caller keeps owning it
     * @param caps   what the device offers, normally {@link NetCaps#probe}
     */
    public NetNic(final int netDev, final VerbsContext ctx, final NetCaps caps) {
        this.netDev = netDev;
        this.ctx = Objects.requireNonNull(ctx, "ctx");
        this.caps = Objects.requireNonNull(caps, "caps");
        this.pd = ctx.allocPd();
    }

    public int netDev() {
        return netDev;
    }

    public VerbsContext context() {
        return ctx;
    }

    public ProtectionDomain pd() {
        return pd;
    }

    public NetCaps caps() {
        return caps;
    }

    /** The registrar of {@code gpu}'s memory by {@code mechanism} on this NIC, created on first use. */
    synchronized GpuMrRegistrar registrar(final GpuDevice gpu, final RegMechanism mechanism) {
        return entry(gpu, mechanism).registrar;
    }

    /** The MR cache in front of {@link #registrar}. */
    synchronized NetMrCache cache(final GpuDevice gpu, final RegMechanism mechanism) {
        return entry(gpu, mechanism).cache;
    }

    private Cache entry(final GpuDevice gpu, final RegMechanism mechanism) {
        for (final Cache c : caches) {
            if (c.gpu == gpu && c.registrar.mechanism() == mechanism) {
                return c;
            }
        }
        final GpuMrRegistrar registrar = new GpuMrRegistrar(gpu, pd, mechanism, MR_ACCESS);
        final Cache c = new Cache(gpu, registrar, new NetMrCache(registrar));
        caches.add(c);
        return c;
    }

    /** Releases the PD; every connection on this NIC must be closed first. */
    @Override
    public void close() {
        pd.close();
    }

    @Override
    public String toString() {
        return "NET/IB/" + netDev + " (" + caps.name() + ")";
    }
}
