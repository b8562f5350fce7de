/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.config;

import io.gdrkit.core.agent.IdleStrategy;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsCatalogue;
import io.gdrkit.softnic.fabric.CopyEngines;
import java.util.List;
import java.util.Locale;

/**
 * The softnic module's settings: the software NIC's {@code gdrkit.nic.*} (read by
 * {@link io.gdrkit.softnic.SoftNicContext}) and the TCP
 * fabric's {@code gdrkit.tcp.*} (read by {@link io.gdrkit.softnic.fabric.TcpFabricContext}). Each is a system property
 * read at the Context's {@code conclude()}; a setter wins and is recorded as a flag. The Contexts' javadoc says more
 * about each value.
 */
public final class SoftNicConfiguration {
    /** The most QPs a software device holds: QP numbers 16..65535 (the default and the limit of {@link #MAX_QP}). */
    public static final int MAX_QP_LIMIT = (1 << 16) - 16;
    /** {@link #DMABUF}'s name as a compile-time constant (option descriptions quote it). */
    public static final String DMABUF_NAME = "gdrkit.nic.dmabuf";
    /** {@link #PEERMEM}'s name as a compile-time constant (option descriptions quote it). */
    public static final String PEERMEM_NAME = "gdrkit.nic.peermem";
    /** The progress modes by name ({@link io.gdrkit.softnic.SoftNicContext.ProgressMode}'s constants). */
    private static final List<String> PROGRESS_MODES = List.of("invoker", "own_device", "dedicated", "deterministic");
    /**
     * Who moves the NICs: the name of a {@link io.gdrkit.softnic.SoftNicContext.ProgressMode} in lower case (parsed
     * case-insensitively, {@code -} read as {@code _}); a lab may give its own default ({@code defaultProgress}).
     */
    public static final SettingDef<String> PROGRESS = SettingDef.of("gdrkit.nic.progress", "invoker",
        String.join(", ", PROGRESS_MODES), "who moves the NICs: the thread that polls (invoker, own_device), a "
            + "thread per NIC (dedicated) or a test's runner (deterministic)", s -> {
            final String v = s.trim().toLowerCase(Locale.ROOT).replace('-', '_');
            if (!PROGRESS_MODES.contains(v)) {
                throw new IllegalArgumentException("gdrkit.nic.progress=" + s + " is not one of "
                    + PROGRESS_MODES.stream().map(m -> m.toUpperCase(Locale.ROOT)).toList());
            }
            return v;
        }).readBy("SoftNicContext");
    /** The idle strategy of dedicated NIC threads. */
    public static final SettingDef<String> IDLE = SettingDef.of("gdrkit.nic.idle", "backoff",
        "spin, yield, backoff, sleep:<micros>", "idle strategy of dedicated NIC threads", s -> {
            final String spec = s.trim();
            try {
                IdleStrategy.parse(spec);
            } catch (final IllegalArgumentException e) {
                throw new IllegalArgumentException("gdrkit.nic.idle=" + s + " is not spin, yield, backoff or "
                    + "sleep:<micros>");
            }
            return spec;
        }).readBy("SoftNicContext");
    /** With own_device, a backstop thread per NIC steps it once per period (0: off). */
    public static final SettingDef<Integer> BACKSTOP_US = SettingDef.integer("gdrkit.nic.backstop.us", 0, 0,
        1_000_000, "with own_device, a thread per NIC steps it once per period in microseconds (0: off; coll sets 200)")
        .defaultText("0 (off)").readBy("SoftNicContext");
    /** Bytes of ring per directed link. */
    public static final SettingDef<Integer> LINK_CAPACITY = SettingDef.of("gdrkit.nic.link.capacity", 4 << 20,
        "power of two, 64 KiB..1 GiB", "bytes of ring per directed link", s -> {
            final String want = "a power of two from 64 KiB to 1 GiB";
            final int v;
            try {
                v = Integer.parseInt(s.trim());
            } catch (final NumberFormatException e) {
                throw new IllegalArgumentException("gdrkit.nic.link.capacity=" + s + " is not " + want);
            }
            if (v < 64 * 1024 || Integer.bitCount(v) != 1 || v > (1 << 30)) {
                throw new IllegalArgumentException("gdrkit.nic.link.capacity=" + s + " is not " + want);
            }
            return v;
        }).readBy("SoftNicContext");
    /** Multiplier on the IB retransmit timeout 4.096 us x 2^timeout. */
    public static final SettingDef<Double> RETRANSMIT_FACTOR = SettingDef.of("gdrkit.nic.retransmit.factor", 1.0,
        "> 0 and <= 1e6", "multiplier on the IB retransmit timeout 4.096 us x 2^timeout", s -> {
            final double v;
            try {
                v = Double.parseDouble(s.trim());
            } catch (final NumberFormatException e) {
                throw new IllegalArgumentException("gdrkit.nic.retransmit.factor=" + s + " is not a number > 0 and "
                    + "<= 1e6");
            }
            if (!(v > 0) || v > 1e6) {
                throw new IllegalArgumentException("gdrkit.nic.retransmit.factor=" + s + " is not a number > 0 and "
                    + "<= 1e6");
            }
            return v;
        }).readBy("SoftNicContext");
    /** Most doublings of the retransmit timeout after consecutive timeouts without progress. */
    public static final SettingDef<Integer> RETRANSMIT_BACKOFF = SettingDef.integer("gdrkit.nic.retransmit.backoff",
        2, 0, 2, "most doublings of the retransmit timeout after consecutive "
            + "timeouts without progress (0: a fixed timeout; at most 2, the IBA's 4x bound per expiry)")
        .readBy("SoftNicContext");
    /** Packets after which the requester sets AckReq even inside a message. */
    public static final SettingDef<Integer> ACK_REQ_INTERVAL = SettingDef.integer("gdrkit.nic.ackreq.interval", 64, 1,
        Integer.MAX_VALUE, "packets after which the requester sets AckReq even inside a message").valid(">= 1")
        .readBy("SoftNicContext");
    /** Most PSNs a QP may have unacknowledged. */
    public static final SettingDef<Integer> WINDOW = SettingDef.integer("gdrkit.nic.window", 512, 1, 1 << 22,
        "most unacknowledged PSNs per QP (bounds what go-back-N resends after a loss)").readBy("SoftNicContext");
    /** Packets one agent handles per duty cycle. */
    public static final SettingDef<Integer> BURST = SettingDef.integer("gdrkit.nic.burst", 32, 1, Integer.MAX_VALUE,
        "packets one agent handles per duty cycle, per QP or link").valid(">= 1").readBy("SoftNicContext");
    /** Every packet carries a CRC32C checked on receipt. */
    public static final SettingDef<Boolean> LINK_CRC = SettingDef.flag("gdrkit.nic.link.crc", false,
        "every packet carries a CRC32C checked on receipt; must be on when fault injection corrupts packets")
        .readBy("SoftNicContext");
    /** The provider registers DMA-BUF file descriptors. */
    public static final SettingDef<Boolean> DMABUF = SettingDef.flag(DMABUF_NAME, true,
        "the provider registers DMA-BUF fds (off: EOPNOTSUPP, as a provider without DMA-BUF)").readBy("SoftNicContext");
    /** The provider registers GPU memory by pointer (the nvidia-peermem analogue). */
    public static final SettingDef<Boolean> PEERMEM = SettingDef.flag(PEERMEM_NAME, true,
        "the provider registers GPU memory by pointer (off: EFAULT, as without nvidia-peermem)")
        .readBy("SoftNicContext");
    /** The in-JVM single-copy path where safe. */
    public static final SettingDef<Boolean> ONE_COPY = SettingDef.flag("gdrkit.nic.onecopy", true,
        "SEND/WRITE packets from registered host memory carry a reference, copied once by the responder, where safe")
        .readBy("SoftNicContext");
    /** A requester's packets out of GPU memory reference the NIC's pinned ring. */
    public static final SettingDef<Boolean> SOURCE_RING = SettingDef.flag("gdrkit.nic.source.ring", true,
        "with gdrkit.nic.onecopy, SEND/WRITE packets out of memory read by bulk copies (a CUDA GPU) are read into a "
            + "pinned ring the NIC owns and reference it, for a receiver in this process: its copy engine reads them "
            + "there, no CPU copy (false: the bytes are copied into the packets)").readBy("SoftNicContext");
    /** The source ring reads the next span ahead. */
    public static final SettingDef<Boolean> SOURCE_AHEAD = SettingDef.flag("gdrkit.nic.source.ahead", true,
        "with gdrkit.nic.source.ring, the requester starts reading the next span of a request (or the next posted "
            + "request) into the ring while the packets of the current one go out (false: each span is read when its "
            + "first packet needs it)").readBy("SoftNicContext");
    /** Smallest message whose payload travels as a reference. */
    public static final SettingDef<Integer> ONE_COPY_MIN = SettingDef.integer("gdrkit.nic.onecopy.min",
        1024, 1, 1 << 30, "smallest message (bytes) whose payload travels as a "
            + "reference; smaller ones are copied into the packet").readBy("SoftNicContext");
    /** Idle QPs leave the engines' scan. */
    public static final SettingDef<Boolean> SCAN_PARK = SettingDef.flag("gdrkit.nic.scan.park", true,
        "idle QPs leave the engines' scan until work comes back (a full fence per post)").readBy("SoftNicContext");
    /** Smallest UD send that travels as a reference. */
    public static final SettingDef<Integer> UD_ONE_COPY_MIN = SettingDef.integer("gdrkit.nic.ud.onecopy.min",
        2048, 1, 4096, "smallest UD send (bytes) that travels as a "
            + "reference on the in-JVM single-copy path; smaller ones are copied").readBy("SoftNicContext");
    /** How long a referenced UD datagram nobody released may hold its send back. */
    public static final SettingDef<Integer> UD_REFERENCE_TIMEOUT_MS = SettingDef.integer(
        "gdrkit.nic.ud.reference.timeout.ms", 1000, 1, 3_600_000,
        "milliseconds a referenced UD datagram nobody claimed or released holds its send back before it is given up")
        .readBy("SoftNicContext");
    /** Packets per segment-offload record. */
    public static final SettingDef<Integer> BATCH = SettingDef.integer("gdrkit.nic.batch", 16, 1, 1024,
        "packets per segment-offload record where the bytes travel in it (the TCP fabric, the shm fabric without "
            + "process_vm_readv), across processes (cma references, with gdrkit.nic.shm.batch) and from a CUDA GPU's "
            + "source ring (1: off); within one process gdrkit.nic.ref.batch").readBy("SoftNicContext");
    /** Packets per reference span within one process. */
    public static final SettingDef<Integer> REF_BATCH = SettingDef.integer("gdrkit.nic.ref.batch", 256, 1, 1024,
        "packets per reference record within one process (the in-JVM fabric's single copy from the sender's host "
            + "memory: the bytes stay where they are, so one record may stand for many packets and the receiver "
            + "copies them in one piece; a CUDA GPU's memory, read into the NIC's pinned source ring, keeps "
            + "gdrkit.nic.batch)").readBy("SoftNicContext");
    /** Cross-process payload pulls with process_vm_readv on the shm fabric. */
    public static final SettingDef<Boolean> SHM_CMA = SettingDef.flag("gdrkit.nic.shm.cma", true,
        "on the shm fabric, WRITE/SEND payloads travel as references the receiver pulls with process_vm_readv (needs "
            + "onecopy and a peer whose probe passed); off: this process neither sends nor grants references")
        .readBy("SoftNicContext");
    /** Smallest payload sent as a cross-process reference. */
    public static final SettingDef<Integer> SHM_CMA_THRESHOLD = SettingDef.integer("gdrkit.nic.shm.cma.threshold",
        4096, 1, 1 << 30, "smallest packet payload (bytes) sent as a cross-process reference").readBy("SoftNicContext");
    /** Segment offload across processes on granted cma links. */
    public static final SettingDef<Boolean> SHM_BATCH = SettingDef.flag("gdrkit.nic.shm.batch", false,
        "segment offload across processes on granted cma links (opt-in: not faster than a record per packet, "
            + "docs/PERFORMANCE.md)").readBy("SoftNicContext");
    /** Copy engines per NIC on the shm fabric ({@code auto}: {@link #defaultCopyEngines}). */
    public static final SettingDef<Integer> COPY_ENGINES = SettingDef.of("gdrkit.nic.copy.engines", 1,
        "auto, or 1.." + CopyEngines.MAX_ENGINES, "copy engines per NIC on the shm fabric: a cma pull of at least "
            + "copy.threshold bytes is split over the NIC thread and N-1 copy threads (1: off; auto: 1 below 8 "
            + "processors, else min(4, processors/4))", s -> {
            if (s.trim().equalsIgnoreCase("auto")) {
                return defaultCopyEngines(Runtime.getRuntime().availableProcessors());
            }
            final String want = "auto or an integer in [1, " + CopyEngines.MAX_ENGINES + "]";
            final int v;
            try {
                v = Integer.parseInt(s.trim());
            } catch (final NumberFormatException e) {
                throw new IllegalArgumentException("gdrkit.nic.copy.engines=" + s + " is not " + want);
            }
            if (v < 1 || v > CopyEngines.MAX_ENGINES) {
                throw new IllegalArgumentException("gdrkit.nic.copy.engines=" + s + " is not " + want);
            }
            return v;
        }).readBy("SoftNicContext");
    /** Smallest cma pull split over the copy engines. */
    public static final SettingDef<Integer> COPY_THRESHOLD = SettingDef.integer("gdrkit.nic.copy.threshold",
        256 * 1024, 4096, 1 << 30, "smallest cma pull (bytes) split over the copy engines").readBy("SoftNicContext");
    /** Most QPs per device. */
    public static final SettingDef<Integer> MAX_QP = SettingDef.integer("gdrkit.nic.max.qp",
        MAX_QP_LIMIT, 1, MAX_QP_LIMIT,
        "most QPs one device holds at a time (ibv_device_attr.max_qp); one more fails with ENOMEM")
        .readBy("SoftNicContext");

    /** SO_SNDBUF of each TCP fabric connection. */
    public static final SettingDef<Integer> TCP_SEND_BUFFER = SettingDef.integer("gdrkit.tcp.sndbuf", 0, 0, 1 << 30,
        "SO_SNDBUF of each TCP fabric connection in bytes (0: the kernel's, autotuned)")
        .defaultText("4194304 where net.core.wmem_max allows it, else 0").readBy("TcpFabricContext");
    /** SO_RCVBUF of each TCP fabric connection. */
    public static final SettingDef<Integer> TCP_RECEIVE_BUFFER = SettingDef.integer("gdrkit.tcp.rcvbuf", 0, 0,
        1 << 30, "SO_RCVBUF of each TCP fabric connection in bytes, set before connect/listen (0: the kernel's)")
        .defaultText("4194304 where net.core.rmem_max allows it, else 0").readBy("TcpFabricContext");
    /** Longest selector wait per idle duty cycle. */
    public static final SettingDef<Integer> TCP_PARK_MS = SettingDef.integer("gdrkit.tcp.park.ms", 0, 0, 1000,
        "after spin.us of idle cycles a TCP port waits up to this many ms in a selector on its sockets (0: busy-poll; "
            + "perf --fabric tcp makes 1 the default)").defaultText("0 (off)").readBy("TcpFabricContext");
    /** Microseconds of idle duty cycles before parking. */
    public static final SettingDef<Integer> TCP_SPIN_US = SettingDef.integer("gdrkit.tcp.spin.us", 50, 0, 1_000_000,
        "microseconds of consecutive idle cycles before a TCP port parks").readBy("TcpFabricContext");
    /** Smallest WRITE frame whose payload a TCP port reads straight into its MR. */
    public static final SettingDef<Integer> TCP_DIRECT_MIN = SettingDef.integer("gdrkit.tcp.direct.min", 16 * 1024,
        0, 1 << 30, "smallest RDMA WRITE frame (bytes) whose payload a TCP port reads from the socket straight into the "
            + "MR once its headers are judged, where the link has no CRC; 0: none (every payload arrives in the receive "
            + "buffer first and is copied)").readBy("TcpFabricContext");

    /** Every setting of this module, in documentation order. */
    public static final List<SettingDef<?>> ALL = List.of(PROGRESS, IDLE, BACKSTOP_US, LINK_CAPACITY,
        RETRANSMIT_FACTOR, RETRANSMIT_BACKOFF, ACK_REQ_INTERVAL, WINDOW, BURST, LINK_CRC, DMABUF, PEERMEM, ONE_COPY,
        SOURCE_RING, SOURCE_AHEAD, ONE_COPY_MIN, SCAN_PARK, UD_ONE_COPY_MIN, UD_REFERENCE_TIMEOUT_MS, BATCH, REF_BATCH,
        SHM_CMA, SHM_CMA_THRESHOLD, SHM_BATCH, COPY_ENGINES, COPY_THRESHOLD, MAX_QP, TCP_SEND_BUFFER, TCP_RECEIVE_BUFFER, TCP_PARK_MS,
        TCP_SPIN_US, TCP_DIRECT_MIN);

    private SoftNicConfiguration() {
    }

    /**
     * {@link #COPY_ENGINES}'s auto value on a host with {@code processors}: 1 below 8 processors (two ranks' NIC and
     * rank threads already fill such a host), else min(4, processors / 4).
     */
    public static int defaultCopyEngines(final int processors) {
        return processors < 8 ? 1 : Math.min(4, processors / 4);
    }

    /** This module's catalogue, for {@link io.gdrkit.core.config.Catalogues}. */
    public static final class Catalogue implements SettingsCatalogue {
        /** For {@link java.util.ServiceLoader}. */
        public Catalogue() {
        }

        @Override
        public String module() {
            return "softnic";
        }

        @Override
        public Class<?> configurationClass() {
            return SoftNicConfiguration.class;
        }

        @Override
        public int order() {
            return 10;
        }

        @Override
        public List<SettingDef<?>> settings() {
            return ALL;
        }

        @Override
        public String description() {
            return """
                `gdrkit.nic.*` is read by `SoftNicContext.conclude()` (concluded by `SoftNicDriver.launch(ctx)`; one \
                context per driver) from the JVM's system properties, or from a map given with `properties(map)` \
                (tests); a setter wins and is recorded as `FLAG`, and `settings()` lists every value in effect with \
                its source. `defaultProgress(mode, backstopMicros)` gives a lab its own defaults for \
                `gdrkit.nic.progress` and, while the mode is that default, `gdrkit.nic.backstop.us` (`coll`: \
                `own_device`, 200 us; or `dedicated` with idle `spin` on a host with at least 4 processors per rank, \
                said in every row as `nic_progress`), recorded as `DEFAULT`. `clock(NanoClock)` and \
                `linkHook(LinkHook)` are code-only.

                `gdrkit.tcp.*` is read by `TcpFabricContext.conclude()`; the `TcpFabric` constructors without a \
                context conclude a fresh one, `TcpFabricContext.defaults()` ignores the properties. `perf --fabric \
                tcp` shows the values in effect as `tcp_settings` and the socket buffers the kernel granted its \
                connection as `tcp_buffers_granted`, and turns parking on (`defaultParkMillis(1)`, still \
                overridden by the property). A port with a link hook (fault injection) never parks.""";
        }
    }
}
