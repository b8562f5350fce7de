/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.gdr.topo.GdrLevel;
import io.gdrkit.gdr.topo.IbHcaFilter;
import java.util.Locale;
import java.util.Map;

/**
 * The settings NCCL reads for GPUDirect RDMA, by their NCCL names (gdrkit accepts the same names as its own
 * options). A setting can only narrow what the hardware allows: see {@link GdrGate}. Read by
 * {@link NcclSettings}, which records each value's source.
 *
 * @param gdrLevel     the GDR level NCCL uses ({@link GdrLevel#effective}: NCCL_NET_GDR_LEVEL, else P2C with
 *                     NCCL_NET_GDR_C2C=1, its default, else PXB)
 * @param gdrRead      NCCL_NET_GDR_READ: 1 on, 0 off, -2 (unset) NCCL's default rule
 * @param dmabufEnable NCCL_DMABUF_ENABLE (default 1)
 * @param forceFlush   NCCL_NET_FORCE_FLUSH (default 0)
 * @param localRegister NCCL_LOCAL_REGISTER (default 1)
 * @param ibHca        NCCL_IB_HCA: which HCAs the IB transport uses (default every one)
 */
public record GdrSettings(GdrLevel gdrLevel, int gdrRead, boolean dmabufEnable, boolean forceFlush,
                          boolean localRegister, IbHcaFilter ibHca) {
    public static final String GDR_READ = io.gdrkit.gdr.config.GdrConfiguration.NET_GDR_READ.name();
    public static final String DMABUF_ENABLE = io.gdrkit.gdr.config.GdrConfiguration.DMABUF_ENABLE.name();
    public static final String FORCE_FLUSH = io.gdrkit.gdr.config.GdrConfiguration.NET_FORCE_FLUSH.name();
    public static final String LOCAL_REGISTER = io.gdrkit.gdr.config.GdrConfiguration.LOCAL_REGISTER.name();
    public static final int GDR_READ_DEFAULT = -2;

    public static final GdrSettings DEFAULTS = new GdrSettings(GdrLevel.NCCL_DEFAULT, GDR_READ_DEFAULT, true, false, true,
        IbHcaFilter.ALL);

    /**
     * Reads the NCCL variables from {@code env} through {@link NcclSettings} (the one place they are parsed); a
     * malformed value is an error naming the variable.
     */
    public static GdrSettings fromEnvironment(final Map<String, String> env) {
        return NcclSettings.ofEnv(env).gdr();
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s=%s %s=%d %s=%d %s=%d %s=%d", GdrLevel.ENV, gdrLevel, GDR_READ, gdrRead,
            DMABUF_ENABLE, dmabufEnable ? 1 : 0, FORCE_FLUSH, forceFlush ? 1 : 0, LOCAL_REGISTER, localRegister ? 1 : 0);
    }
}
