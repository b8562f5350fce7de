/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.reg.NetMrCache;
import io.gdrkit.gdr.reg.RegSettings;
import io.gdrkit.gdr.topo.GdrLevel;
import io.gdrkit.gdr.topo.IbHcaFilter;
import io.gdrkit.gdr.topo.PathOptions;
import io.gdrkit.gdr.topo.PathType;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The NCCL variables of the GPUDirect control plane, each read in exactly this one place (through
 * {@link SettingsReader}, which records where the value came from: default, environment or flag). Every consumer
 * (the gates, the connector, the registration cache, the path engine, the doctor) takes its view from here:
 * {@link #gdr()}, {@link #reg()}, {@link #pathOptions()}. Built with a {@link Context} and {@code conclude()}, which
 * parses and validates each value once; a malformed value is an {@link IllegalArgumentException} naming the
 * variable. A setting can only narrow what the hardware allows (C11): nothing here turns a capability on.
 */
public final class NcclSettings {
    public static final String NET_GDR_LEVEL = GdrLevel.ENV;
    public static final String NET_GDR_READ = "NCCL_NET_GDR_READ";
    public static final String NET_GDR_C2C = "NCCL_NET_GDR_C2C";
    public static final String DMABUF_ENABLE = "NCCL_DMABUF_ENABLE";
    public static final String GDRCOPY_ENABLE = "NCCL_GDRCOPY_ENABLE";
    public static final String NET_FORCE_FLUSH = "NCCL_NET_FORCE_FLUSH";
    public static final String LOCAL_REGISTER = "NCCL_LOCAL_REGISTER";
    public static final String IB_DISABLE = "NCCL_IB_DISABLE";
    public static final String NET = "NCCL_NET";
    public static final String P2P_LEVEL = "NCCL_P2P_LEVEL";
    public static final String IB_HCA = IbHcaFilter.ENV;

    /** Every variable this component reads, in the order a settings table lists them. */
    public static final List<String> NAMES = List.of(NET_GDR_LEVEL, NET_GDR_READ, NET_GDR_C2C, DMABUF_ENABLE,
        GDRCOPY_ENABLE, NET_FORCE_FLUSH, LOCAL_REGISTER, IB_DISABLE, NET, P2P_LEVEL, IB_HCA);

    /** NCCL's defaults, nothing set. */
    public static final NcclSettings DEFAULTS = new Context().reader(SettingsReader.ofEnv(Map.of())).conclude();

    private final Setting<GdrLevel> gdrLevel;
    private final Setting<Integer> gdrRead;
    private final Setting<Boolean> gdrC2c;
    private final Setting<Boolean> dmabufEnable;
    private final Setting<Boolean> gdrcopyEnable;
    private final Setting<Boolean> forceFlush;
    private final Setting<Boolean> localRegister;
    private final Setting<Boolean> ibDisable;
    private final Setting<String> net;
    private final Setting<PathType> p2pLevel;
    private final Setting<IbHcaFilter> ibHca;
    private final GdrSettings gdr;

    /**
     * Where the values come from: a {@link SettingsReader} (the process's environment by default) and overrides given
     * by flags, which win and are recorded as {@code flag}.
     */
    public static final class Context {
        private SettingsReader reader;
        private final Map<String, String> overrides = new LinkedHashMap<>();

        /** Reads from {@code reader} instead of the process's environment. */
        public Context reader(final SettingsReader reader) {
            this.reader = reader;
            return this;
        }

        /**
         * A value given on the command line ({@code --nccl NAME=VALUE}); recorded with source {@code flag}.
         *
         * @throws IllegalArgumentException when {@code name} is not one of {@link #NAMES}
         */
        public Context override(final String name, final String value) {
            if (!NAMES.contains(name)) {
                throw new IllegalArgumentException(name + " is not a setting gdrkit reads; known: "
                    + String.join(", ", NAMES));
            }
            overrides.put(name, value);
            return this;
        }

        /** Reads and validates every variable once. */
        public NcclSettings conclude() {
            final SettingsReader base = reader != null ? reader : SettingsReader.ofProcess();
            return new NcclSettings(overrides.isEmpty() ? base : base.withOverrides(overrides));
        }
    }

    private NcclSettings(final SettingsReader r) {
        gdrC2c = r.read(NET_GDR_C2C, true, v -> ncclInt(NET_GDR_C2C, v) != 0);
        // NCCL 2.30's rule, in one place (GdrLevel.effective): unset means P2C with NCCL_NET_GDR_C2C, else PXB.
        final boolean c2c = gdrC2c.value();
        gdrLevel = r.read(NET_GDR_LEVEL, GdrLevel.effective(GdrLevel.DEFAULT, c2c),
            v -> GdrLevel.parse(v, NET_GDR_LEVEL, GdrLevel.fallback(c2c)));
        gdrRead = r.read(NET_GDR_READ, GdrSettings.GDR_READ_DEFAULT, v -> (int) Math.max(Integer.MIN_VALUE,
            Math.min(Integer.MAX_VALUE, ncclInt(NET_GDR_READ, v))));
        dmabufEnable = r.read(DMABUF_ENABLE, true, v -> ncclInt(DMABUF_ENABLE, v) != 0);
        gdrcopyEnable = r.read(GDRCOPY_ENABLE, false, v -> ncclInt(GDRCOPY_ENABLE, v) != 0);
        forceFlush = r.read(NET_FORCE_FLUSH, false, v -> ncclInt(NET_FORCE_FLUSH, v) != 0);
        localRegister = r.read(LOCAL_REGISTER, true, v -> ncclInt(LOCAL_REGISTER, v) != 0);
        ibDisable = r.read(IB_DISABLE, false, v -> ncclInt(IB_DISABLE, v) != 0);
        net = r.read(NET, "", NcclSettings::netName);
        p2pLevel = r.read(P2P_LEVEL, null, v -> GdrLevel.parse(v, P2P_LEVEL).path());
        ibHca = r.read(IB_HCA, IbHcaFilter.ALL, IbHcaFilter::parse);
        gdr = new GdrSettings(gdrLevel.value(), gdrRead.value(), dmabufEnable.value(), forceFlush.value(),
            localRegister.value(), ibHca.value());
    }

    /** NCCL reads its integer parameters with strtoll; gdrkit refuses text that is not an integer. */
    private static long ncclInt(final String name, final String v) {
        try {
            return Long.parseLong(v.trim());
        } catch (final NumberFormatException e) {
            throw new IllegalArgumentException(name + "=" + v + " is not an integer");
        }
    }

    /** NCCL compares the plugin name case-insensitively with its built-in "IB" and "Socket" (or a plugin's). */
    private static String netName(final String v) {
        final String t = v.trim();
        if (t.equalsIgnoreCase("IB")) {
            return "IB";
        }
        if (t.equalsIgnoreCase("Socket")) {
            return "Socket";
        }
        throw new IllegalArgumentException(NET + "=" + v + " names no network gdrkit knows (IB or Socket); NCCL "
            + "would fail its init with 'Could not find network'");
    }

    /** Reads the process's environment. */
    public static NcclSettings ofProcess() {
        return new Context().conclude();
    }

    /** Reads {@code env} only (tests, a child's environment, a map of gdrkit options under NCCL names). */
    public static NcclSettings ofEnv(final Map<String, String> env) {
        return new Context().reader(SettingsReader.ofEnv(env)).conclude();
    }

    /** The gates' view: level, read policy, DMA-BUF enable, forced flush, local registration. */
    public GdrSettings gdr() {
        return gdr;
    }

    /** The communicator registration cache's view (NCCL_LOCAL_REGISTER), 4 KiB pages. */
    public RegSettings reg() {
        return new RegSettings(localRegister.value(), NetMrCache.DEFAULT_PAGE_SIZE);
    }

    /** The path engine's view: NCCL_NET_GDR_C2C, the GDR level and the read policy; the rest NCCL's defaults. */
    public PathOptions pathOptions() {
        return PathOptions.DEFAULTS.withNetGdrC2c(gdrC2c.value()).withGdrLevel(gdrLevel.value())
            .withGdrRead(gdrRead.value()).withIbHca(ibHca.value());
    }

    public Setting<GdrLevel> gdrLevel() {
        return gdrLevel;
    }

    public Setting<Integer> gdrRead() {
        return gdrRead;
    }

    public Setting<Boolean> gdrC2c() {
        return gdrC2c;
    }

    public Setting<Boolean> dmabufEnable() {
        return dmabufEnable;
    }

    public Setting<Boolean> gdrcopyEnable() {
        return gdrcopyEnable;
    }

    public Setting<Boolean> forceFlush() {
        return forceFlush;
    }

    public Setting<Boolean> localRegister() {
        return localRegister;
    }

    public Setting<Boolean> ibDisable() {
        return ibDisable;
    }

    /** NCCL_NET: "IB", "Socket", or "" when unset (NCCL then tries IB first, Socket when IB has no device). */
    public Setting<String> net() {
        return net;
    }

    /** NCCL_IB_HCA: the HCAs (and ports) NCCL's IB transport uses; {@link IbHcaFilter#ALL} when unset. */
    public Setting<IbHcaFilter> ibHca() {
        return ibHca;
    }

    /** NCCL_P2P_LEVEL, or a null value when unset (NCCL's platform rule). */
    public Setting<PathType> p2pLevel() {
        return p2pLevel;
    }

    /** True when the IB transport is off (NCCL_IB_DISABLE=1 or NCCL_NET=Socket): NET/Socket carries no GDR. */
    public boolean socketOnly() {
        return ibDisable.value() || net.value().equals("Socket");
    }

    /** Every setting in {@link #NAMES} order. */
    public List<Setting<?>> all() {
        return List.of(gdrLevel, gdrRead, gdrC2c, dmabufEnable, gdrcopyEnable, forceFlush, localRegister, ibDisable,
            net, p2pLevel, ibHca);
    }

    /** The value as NCCL would print it: flags 0/1, the level's name, unset as "unset". */
    public static String display(final Setting<?> s) {
        final Object v = s.value();
        if (v == null || "".equals(v) || v == IbHcaFilter.ALL) {
            return "unset";
        }
        if (v instanceof Boolean b) {
            return b ? "1" : "0";
        }
        if (v instanceof GdrLevel l) {
            return l.path().name();
        }
        if (s.name().equals(NET_GDR_READ) && v.equals(GdrSettings.GDR_READ_DEFAULT)) {
            return "unset (cc >= 8.0 reads)";
        }
        return String.valueOf(v);
    }

    /** {@code NAME=value (source)} with the value as {@link #display} prints it. */
    public static String describe(final Setting<?> s) {
        return s.name() + "=" + display(s) + " (" + source(s) + ")";
    }

    /** The source in lower case: default, environment, flag. */
    public static String source(final Setting<?> s) {
        return s.source().name().toLowerCase(Locale.ROOT);
    }

    @Override
    public String toString() {
        final StringBuilder b = new StringBuilder();
        for (final Setting<?> s : all()) {
            b.append(b.isEmpty() ? "" : " ").append(s.name()).append('=').append(display(s));
        }
        return b.toString();
    }
}
