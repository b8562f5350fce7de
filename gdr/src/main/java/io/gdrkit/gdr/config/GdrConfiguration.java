/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.config;

import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsCatalogue;
import io.gdrkit.gdr.gate.GdrSettings;
import io.gdrkit.gdr.topo.GdrLevel;
import io.gdrkit.gdr.topo.IbHcaFilter;
import io.gdrkit.gdr.topo.PathType;
import java.util.List;
import java.util.Locale;

/**
 * Every {@code NCCL_*} environment variable gdrkit reads, under NCCL's names and with NCCL's defaults: the GPUDirect
 * control plane's ({@link io.gdrkit.gdr.gate.NcclSettings}) and those the comm module's Contexts read for the
 * transports and the collectives (IbTransportContext, SocketTransportContext, CollContext). A setter or flag wins and
 * is recorded as a flag. A setting can only narrow what the hardware allows: nothing here turns a capability on.
 */
public final class GdrConfiguration {
    private static final String NCCL = "NcclSettings";
    private static final String IB = "IbTransportContext";
    private static final String SOCKET = "SocketTransportContext";
    private static final String COLL = "CollContext";

    /** {@link #NET_GDR_LEVEL}'s name as a compile-time constant ({@link GdrLevel#ENV}). */
    public static final String NET_GDR_LEVEL_NAME = "NCCL_NET_GDR_LEVEL";
    /** The farthest GPU-NIC path for which GPUDirect RDMA is used. */
    public static final SettingDef<GdrLevel> NET_GDR_LEVEL = SettingDef.of(NET_GDR_LEVEL_NAME, GdrLevel.DEFAULT,
        "LOC, PIX, PXB, P2C, PXN, PHB, SYS, or NCCL's old numbers 0..5", "the farthest GPU-NIC path for which "
            + "GPUDirect RDMA is used (unset: NCCL 2.30's rule, GdrLevel.effective)",
        v -> GdrLevel.parse(v, NET_GDR_LEVEL_NAME)).defaultText("P2C (PXB with NCCL_NET_GDR_C2C=0)").readBy(NCCL);
    /** {@link #NET_GDR_READ}'s name as a compile-time constant (the topology engine's evidence quotes it). */
    public static final String NET_GDR_READ_NAME = "NCCL_NET_GDR_READ";
    /** The GDR read policy: 1 on, 0 off, unset NCCL's rule (compute capability 8.0 and later read). */
    public static final SettingDef<Integer> NET_GDR_READ = SettingDef.of(NET_GDR_READ_NAME,
        GdrSettings.GDR_READ_DEFAULT, "an integer; > 0 on, else off", "whether sends read GPU memory directly (unset: "
            + "GPUs of compute capability 8.0 and later do)", v -> (int) Math.max(Integer.MIN_VALUE,
            Math.min(Integer.MAX_VALUE, ncclInt("NCCL_NET_GDR_READ", v)))).defaultText("unset").readBy(NCCL);
    /** {@link #NET_GDR_C2C}'s name as a compile-time constant (the path engine's evidence quotes it). */
    public static final String NET_GDR_C2C_NAME = "NCCL_NET_GDR_C2C";
    /** GDR through a C2C link (Grace). */
    public static final SettingDef<Boolean> NET_GDR_C2C = ncclFlag(NET_GDR_C2C_NAME, true,
        "the path engine may use GDR over a C2C link").readBy(NCCL);
    /** DMA-BUF registration of GPU memory. */
    public static final SettingDef<Boolean> DMABUF_ENABLE = ncclFlag("NCCL_DMABUF_ENABLE", true,
        "GPU memory may be registered by DMA-BUF fd").readBy(NCCL);
    /** GDRCopy for small host accesses to GPU memory. */
    public static final SettingDef<Boolean> GDRCOPY_ENABLE = ncclFlag("NCCL_GDRCOPY_ENABLE", false,
        "GDRCopy for CPU access to GPU memory (recorded; gdrkit has no GDRCopy path)").readBy(NCCL);
    /** Flush after every GDR receive, whatever the gate decided. */
    public static final SettingDef<Boolean> NET_FORCE_FLUSH = ncclFlag("NCCL_NET_FORCE_FLUSH", false,
        "flush after every GDR receive whatever the flush gate decided").readBy(NCCL);
    /** User buffer registration of a communicator. */
    public static final SettingDef<Boolean> LOCAL_REGISTER = ncclFlag("NCCL_LOCAL_REGISTER", true,
        "a communicator registers user buffers (off: register succeeds with a null handle)").readBy(NCCL);
    /** The IB transport off. */
    public static final SettingDef<Boolean> IB_DISABLE = ncclFlag("NCCL_IB_DISABLE", false,
        "the IB transport is off (NET/Socket carries no GDR)").readBy(NCCL);
    /** The network plugin by name. */
    public static final SettingDef<String> NET = SettingDef.of("NCCL_NET", "", "IB or Socket (case-insensitive)",
        "the network by name; unset: IB first, Socket when IB has no device", GdrConfiguration::netName)
        .defaultText("unset").readBy(NCCL);
    /** The farthest GPU-GPU path for P2P. */
    public static final SettingDef<PathType> P2P_LEVEL = SettingDef.<PathType>of("NCCL_P2P_LEVEL", null,
        "LOC, PIX, PXB, PXN, PHB, SYS, or NCCL's old numbers", "the farthest GPU-GPU path for P2P (unset: the "
            + "platform's rule)", v -> GdrLevel.parse(v, "NCCL_P2P_LEVEL").path()).defaultText("unset").readBy(NCCL);

    /** {@link #IB_HCA}'s name as a compile-time constant ({@link IbHcaFilter#ENV}, the gate's name). */
    public static final String IB_HCA_NAME = "NCCL_IB_HCA";
    /** The IB devices (and ports) the IB transport uses; empty or unset: every one. */
    public static final SettingDef<IbHcaFilter> IB_HCA = SettingDef.of(IB_HCA_NAME, IbHcaFilter.ALL,
        "[^][=]name[:port],... (^ excludes, = matches names exactly, else by prefix)", "the IB devices and ports the "
            + "IB transport uses; a device left out is no NET device (no GDR, no local GPU, no PXN through it)",
        IbHcaFilter::parse).format(h -> h.raw() == null ? "" : h.raw()).defaultText("empty (every HCA)")
        .readBy(NCCL);

    /** Data QPs per IbTransport connection. */
    public static final SettingDef<Integer> IB_QPS_PER_CONNECTION = SettingDef.integer("NCCL_IB_QPS_PER_CONNECTION",
        1, 1, 16, "data QPs per IbTransport connection").readBy(IB);
    /** Split every message over all QPs of a connection. */
    public static final SettingDef<Boolean> IB_SPLIT_DATA_ON_QPS = SettingDef.flag("NCCL_IB_SPLIT_DATA_ON_QPS",
        false, "1 splits every message over all QPs; 0 sends each message on one QP, round robin").readBy(IB);
    /** Messages above it are followed by a separate 0-byte WRITE_WITH_IMM. */
    public static final SettingDef<Integer> IB_AR_THRESHOLD = SettingDef.integer("NCCL_IB_AR_THRESHOLD", 8192, 0,
        Integer.MAX_VALUE, "messages above it go as WRITEs and a separate 0-byte WRITE_WITH_IMM (adaptive routing)")
        .valid(">= 0").readBy(IB);
    /** The QPs' ACK timeout exponent. */
    public static final SettingDef<Integer> IB_TIMEOUT = SettingDef.integer("NCCL_IB_TIMEOUT", 14, 1, 31,
        "the QPs' ACK timeout exponent (4.096 us x 2^timeout)").readBy(IB);
    /** The QPs' retry count. */
    public static final SettingDef<Integer> IB_RETRY_CNT = SettingDef.integer("NCCL_IB_RETRY_CNT", 7, 0, 7,
        "the QPs' retry count; a dead peer ends requests with RETRY_EXC_ERR").readBy(IB);
    /** Helper threads per SocketTransport connection. */
    public static final SettingDef<Integer> SOCKET_NTHREADS = SettingDef.integer("NCCL_SOCKET_NTHREADS", 1, 1, 16,
        "helper threads per SocketTransport connection; threads x sockets <= 64").readBy(SOCKET);
    /** Data sockets per helper thread. */
    public static final SettingDef<Integer> NSOCKS_PERTHREAD = SettingDef.integer("NCCL_NSOCKS_PERTHREAD", 1, 1, 64,
        "data sockets per helper thread; threads x sockets <= 64").readBy(SOCKET);
    /** The staging buffer of one channel's connection. */
    public static final SettingDef<Integer> BUFFSIZE = SettingDef.integer("NCCL_BUFFSIZE", 4 << 20, 4096, 1 << 30,
        "bytes of one channel's staging buffer; a message moves in chunks of BUFFSIZE / STEPS").readBy(COLL);
    /** Chunks in flight per channel. */
    public static final SettingDef<Integer> STEPS = SettingDef.integer("NCCL_STEPS", 8, 1, 32,
        "chunks in flight per channel (slots of the staging buffer)").readBy(COLL);
    /** Channels opened per peer pair, at least. */
    public static final SettingDef<Integer> MIN_NCHANNELS = SettingDef.integer("NCCL_MIN_NCHANNELS", 1, 1, 32,
        "channels (connections per peer pair) opened; raised to the transport's device count, at most MAX")
        .readBy(COLL);
    /** Channels opened per peer pair, at most. */
    public static final SettingDef<Integer> MAX_NCHANNELS = SettingDef.integer("NCCL_MAX_NCHANNELS", 16, 1, 32,
        "most channels per peer pair; MIN must not exceed it").readBy(COLL);
    /** The collectives' algorithm (auto: the tuning table). */
    public static final SettingDef<String> ALGO = SettingDef.of("NCCL_ALGO", "auto",
        "auto, ring, tree, direct, rsag, hier", "the collectives' algorithm; auto lets the tuning table choose by "
            + "operation, size, ranks and ranks per host; ring or tree take the exchanges over the transport (ring "
            + "keeps its direct rounds), direct or rsag the shared memory of one host, hier the hierarchical path of "
            + "ranks on several hosts (shared memory within each host, the transport between them)",
        v -> switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "auto" -> "auto";
            case "ring" -> "ring";
            case "tree" -> "tree";
            case "direct" -> "direct";
            case "rsag" -> "rsag";
            case "hier" -> "hier";
            default -> throw new IllegalArgumentException("NCCL_ALGO=" + v + " is not one of auto, ring, tree, "
                + "direct, rsag, hier (gdrkit implements those)");
        }).readBy(COLL);
    /** The collectives' protocol (auto: the tuning table). */
    public static final SettingDef<String> PROTO = SettingDef.of("NCCL_PROTO", "auto", "auto, LL, Simple",
        "the collectives' protocol: LL moves rounds of at most 8 KiB (latency), Simple whole slots or chunks "
            + "(bandwidth); auto chooses by size", v -> switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "auto" -> "auto";
            case "ll" -> "ll";
            case "simple" -> "simple";
            default -> throw new IllegalArgumentException("NCCL_PROTO=" + v + " is not one of auto, LL, Simple "
                + "(gdrkit implements those)");
        }).readBy(COLL);

    /** Every setting of this module, in documentation order. */
    public static final List<SettingDef<?>> ALL = List.of(NET_GDR_LEVEL, NET_GDR_READ, NET_GDR_C2C, DMABUF_ENABLE,
        GDRCOPY_ENABLE, NET_FORCE_FLUSH, LOCAL_REGISTER, IB_DISABLE, NET, P2P_LEVEL, IB_HCA, IB_QPS_PER_CONNECTION,
        IB_SPLIT_DATA_ON_QPS, IB_AR_THRESHOLD, IB_TIMEOUT, IB_RETRY_CNT, SOCKET_NTHREADS, NSOCKS_PERTHREAD, BUFFSIZE,
        STEPS, MIN_NCHANNELS, MAX_NCHANNELS, ALGO, PROTO);

    /** The GPUDirect control plane's variables ({@link io.gdrkit.gdr.gate.NcclSettings}), in its order. */
    public static final List<SettingDef<?>> CONTROL_PLANE = List.of(NET_GDR_LEVEL, NET_GDR_READ, NET_GDR_C2C,
        DMABUF_ENABLE, GDRCOPY_ENABLE, NET_FORCE_FLUSH, LOCAL_REGISTER, IB_DISABLE, NET, P2P_LEVEL, IB_HCA);

    private GdrConfiguration() {
    }

    /** An NCCL flag: NCCL reads an integer with strtoll, non-zero is on; gdrkit refuses text that is not one. */
    private static SettingDef<Boolean> ncclFlag(final String name, final boolean dflt, final String doc) {
        return SettingDef.of(name, dflt, "an integer; non-zero on", doc, v -> ncclInt(name, v) != 0)
            .format(b -> b ? "1" : "0").defaultText(dflt ? "1" : "0");
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
        throw new IllegalArgumentException("NCCL_NET=" + v + " names no network gdrkit knows (IB or Socket); NCCL "
            + "would fail its init with 'Could not find network'");
    }

    /** This module's catalogue, for {@link io.gdrkit.core.config.Catalogues}. */
    public static final class Catalogue implements SettingsCatalogue {
        /** For {@link java.util.ServiceLoader}. */
        public Catalogue() {
        }

        @Override
        public String module() {
            return "gdr";
        }

        @Override
        public Class<?> configurationClass() {
            return GdrConfiguration.class;
        }

        @Override
        public int order() {
            return 40;
        }

        @Override
        public List<SettingDef<?>> settings() {
            return ALL;
        }

        @Override
        public String description() {
            return """
                Environment variables under NCCL's names. The control plane's (`NcclSettings`: the gates, the \
                connector, the registration cache, the path engine, the doctor) are read once by \
                `new NcclSettings.Context().conclude()`; `--nccl NAME=VALUE` on the doctor gives one as a flag. The \
                transports' and the collectives' are read in `IbTransportContext`, `SocketTransportContext` and \
                `CollContext` `conclude()` through a `SettingsReader` given with `settings(reader)` (default the \
                process's); `recorded()` lists every value with its source. docs/TRANSPORT.md says what each does \
                to the wire.""";
        }
    }
}
