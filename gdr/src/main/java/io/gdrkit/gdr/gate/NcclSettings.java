/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.gate;

import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.gdr.config.GdrConfiguration;
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
 * variable. A setting can only narrow what the hardware allows: nothing here turns a capability on.
 */
public final class NcclSettings {
    public static final String NET_GDR_LEVEL = GdrConfiguration.NET_GDR_LEVEL.name();
    public static final String NET_GDR_READ = GdrConfiguration.NET_GDR_READ.name();
    public static final String NET_GDR_C2C = GdrConfiguration.NET_GDR_C2C.name();
    public static final String DMABUF_ENABLE = GdrConfiguration.DMABUF_ENABLE.name();
    public static final String GDRCOPY_ENABLE = GdrConfiguration.GDRCOPY_ENABLE.name();
    public static final String NET_FORCE_FLUSH = GdrConfiguration.NET_FORCE_FLUSH.name();
    public static final String LOCAL_REGISTER = GdrConfiguration.LOCAL_REGISTER.name();
    public static final String IB_DISABLE = GdrConfiguration.IB_DISABLE.name();
    public static final String NET = GdrConfiguration.NET.name();
    public static final String P2P_LEVEL = GdrConfiguration.P2P_LEVEL.name();
    public static final String IB_HCA = GdrConfiguration.IB_HCA.name();

    /** Every variable this component reads, in the order a settings table lists them. */
    public static final List<String> NAMES = GdrConfiguration.CONTROL_PLANE.stream().map(SettingDef::name).toList();

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
        private final ContextFreeze freeze = new ContextFreeze("NcclSettings.Context");

        /** Reads from {@code reader} instead of the process's environment. */
        public Context reader(final SettingsReader reader) {
            freeze.set("reader");
            this.reader = reader;
            return this;
        }

        /**
         * A value given on the command line ({@code --nccl NAME=VALUE}); recorded with source {@code flag}.
         *
         * @throws IllegalArgumentException when {@code name} is not one of {@link #NAMES}
         */
        public Context override(final String name, final String value) {
            freeze.set("override");
            if (!NAMES.contains(name)) {
                throw new IllegalArgumentException(name + " is not a setting gdrkit reads; known: "
                    + String.join(", ", NAMES));
            }
            overrides.put(name, value);
            return this;
        }

        /**
         * Reads and validates every variable once; a concluded Context refuses setters and a second conclude().
         */
        public NcclSettings conclude() {
            freeze.checkConclude();
            final SettingsReader base = reader != null ? reader : SettingsReader.ofProcess();
            final NcclSettings s = new NcclSettings(overrides.isEmpty() ? base : base.withOverrides(overrides));
            freeze.concluded();
            return s;
        }

        /** {@return whether {@link #conclude()} ran} */
        public boolean isConcluded() {
            return freeze.isConcluded();
        }
    }

    private NcclSettings(final SettingsReader r) {
        gdrC2c = GdrConfiguration.NET_GDR_C2C.read(r);
        // NCCL 2.30's rule, in one place (GdrLevel.effective): unset means P2C with NCCL_NET_GDR_C2C, else PXB.
        final boolean c2c = gdrC2c.value();
        gdrLevel = readLevel(r, c2c);
        gdrRead = GdrConfiguration.NET_GDR_READ.read(r);
        dmabufEnable = GdrConfiguration.DMABUF_ENABLE.read(r);
        gdrcopyEnable = GdrConfiguration.GDRCOPY_ENABLE.read(r);
        forceFlush = GdrConfiguration.NET_FORCE_FLUSH.read(r);
        localRegister = GdrConfiguration.LOCAL_REGISTER.read(r);
        ibDisable = GdrConfiguration.IB_DISABLE.read(r);
        net = GdrConfiguration.NET.read(r);
        p2pLevel = GdrConfiguration.P2P_LEVEL.read(r);
        ibHca = GdrConfiguration.IB_HCA.read(r);
        gdr = new GdrSettings(gdrLevel.value(), gdrRead.value(), dmabufEnable.value(), forceFlush.value(),
            localRegister.value(), ibHca.value());
    }

    /**
     * NCCL_NET_GDR_LEVEL through its descriptor, unset resolved by {@link GdrLevel#effective} against
     * NCCL_NET_GDR_C2C; a value NCCL would not understand is refused naming the level NCCL would fall back to.
     */
    private static Setting<GdrLevel> readLevel(final SettingsReader r, final boolean c2c) {
        try {
            return GdrConfiguration.NET_GDR_LEVEL.read(r, GdrLevel.effective(GdrLevel.DEFAULT, c2c));
        } catch (final IllegalArgumentException e) {
            final String msg = e.getMessage();
            if (c2c || msg == null || !msg.contains(GdrLevel.fallback(true))) {
                throw e;
            }
            throw new IllegalArgumentException(msg.replace(GdrLevel.fallback(true), GdrLevel.fallback(false)), e);
        }
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
