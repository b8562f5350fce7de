/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.config;

import io.gdrkit.comm.CollContext;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsCatalogue;
import java.util.List;
import java.util.Locale;

/**
 * The comm module's own settings: the collectives' {@code gdrkit.coll.*} ({@link CollContext}), IbTransport's
 * {@code gdrkit.ib.software.mtu} ({@link io.gdrkit.comm.transport.IbTransportContext}) and the bootstrap's launcher
 * environment and timeout ({@link io.gdrkit.comm.bootstrap.BootstrapContext}). The {@code NCCL_*} variables these
 * Contexts read are in {@link io.gdrkit.gdr.config.GdrConfiguration}; the launcher's token is
 * {@link io.gdrkit.core.config.CoreConfiguration#TOKEN_ENV}.
 */
public final class CommConfiguration {
    private static final String COLL = "CollContext";
    private static final String BOOT = "BootstrapContext";
    private static final String WORLD = "WorldEnvironment";
    /** The most ranks of a run (BootstrapWire.MAX_RANKS). */
    private static final int MAX_RANKS = 4096;

    /** Software NICs per rank with IbTransport (0: auto). */
    public static final SettingDef<Integer> COLL_NICS = autoOr("gdrkit.coll.nics", 16, "software NICs per rank with "
        + "IbTransport, channel c on NIC c mod k (auto: 2 on shm, 4 on tcp where each NIC gets a thread, else 1; said "
        + "as nics)");
    /** The longest any collective waits for a peer. */
    public static final SettingDef<Long> COLL_TIMEOUT_MS = SettingDef.longValue("gdrkit.coll.timeout.ms", 60_000, 1,
        86_400_000, "the longest any collective waits for a peer, in ms (coll --timeout-ms sets it as a flag)")
        .readBy(COLL);
    /** The eager head of every exchange. */
    public static final SettingDef<Integer> COLL_EAGER_BYTES = SettingDef.integer("gdrkit.coll.eager.bytes",
        CollContext.DEFAULT_EAGER, 0, 1 << 20, "bytes of each exchange's head sent eagerly into receives posted "
            + "ahead (at most one chunk; 0: off)").valid("0..1048576, a multiple of 8").readBy(COLL);
    /** Collectives up to this size run as one direct round. */
    public static final SettingDef<Integer> COLL_DIRECT_BYTES = SettingDef.integer("gdrkit.coll.direct.bytes",
        CollContext.DEFAULT_DIRECT, 0, 1 << 20, "collectives of at most this many bytes run as one direct round (over "
            + "the NIC capped at the eager head less 8; through shared memory the default is 262144 / (ranks - 1), "
            + "at least 65536; 0: off)").defaultText("4096 (NIC), 262144 / (ranks - 1) >= 65536 (shm)").readBy(COLL);
    /** Direct rounds through shared memory when every rank is on one host. */
    public static final SettingDef<Boolean> COLL_SHM_DIRECT = SettingDef.flag("gdrkit.coll.shm.direct", true,
        "when every rank is on this host, every collective of host buffers goes through shared memory (the shm "
            + "path) and the direct rounds too; with ranks on several hosts and as many on each, allreduce, allgather, "
            + "reduce-scatter and broadcast share memory within each host (the hierarchical path, shm+net); false "
            + "keeps them on the transport (every rank must want it)")
        .readBy(COLL);
    /** Single-copy rounds through process_vm_readv (CMA) on the shm path. */
    public static final SettingDef<Integer> COLL_CMA_BYTES = SettingDef.integer("gdrkit.coll.cma.bytes", 16384, 0,
        1 << 30, "on the shm path, allgather, broadcast, sendrecv and alltoall rounds of at least this many bytes per "
            + "block move with one copy: each reader pulls the writer's native buffer with process_vm_readv (CMA), "
            + "as Open MPI's vader does; every rank must give the same value and be able to read its peers (ptrace "
            + "permission), else none does (0: off)").readBy(COLL);
    /** Reduce by a binomial tree on the shm path up to this size. */
    public static final SettingDef<Integer> COLL_SHM_TREE_BYTES = SettingDef.integer("gdrkit.coll.shm.tree.bytes",
        16384, 0, 1 << 20, "on the shm path with 4 or more ranks, reduce up to this many bytes goes up a binomial "
            + "tree (each rank reads its children's partial results, the root log2(ranks) of them, as Open MPI's small "
            + "reduce does) instead of the root reading every rank's input; every rank must give the same value (0: "
            + "off)").readBy(COLL);
    /** Idle polls before a waiting rank yields. */
    public static final SettingDef<Integer> COLL_SPIN_ROUNDS = SettingDef.integer("gdrkit.coll.spin.rounds",
        CollContext.DEFAULT_SPINS, 0, 10_000_000, "polls that moved nothing before a waiting rank yields its CPU")
        .readBy(COLL);
    /** Whether an idle poll ends with Thread.onSpinWait(). */
    public static final SettingDef<Boolean> COLL_SPIN_PAUSE = SettingDef.flag("gdrkit.coll.spin.pause", false,
        "each idle poll ends with a PAUSE (spares hyperthread siblings; adds latency)").readBy(COLL);
    /** Where a rank's collectives thread runs: a {@link CollContext.Bind} by name in lower case. */
    public static final SettingDef<String> COLL_BIND = SettingDef.of("gdrkit.coll.bind", "auto", "auto, none, core",
        "core pins each rank's collectives thread to its local rank's CPU; auto does so for a launched rank process "
            + "when every rank of the host gets a CPU of its own (said as binding)",
        s -> switch (s.trim().toLowerCase(Locale.ROOT)) {
            case "auto" -> "auto";
            case "none" -> "none";
            case "core" -> "core";
            default -> throw new IllegalArgumentException("gdrkit.coll.bind=" + s + " is not auto, none or core");
        }).readBy(COLL);
    /** Whether a real CUDA GPU may take the GDR path. */
    public static final SettingDef<Boolean> COLL_CUDA_GDR = SettingDef.flag("gdrkit.coll.cuda.gdr", true,
        "the gates decide GDR on a real CUDA GPU; false holds it back and the data bounces through host memory")
        .readBy(COLL);
    /** Threads per large host reduction (0: auto). */
    public static final SettingDef<Integer> COLL_REDUCE_THREADS = autoOr("gdrkit.coll.reduce.threads", 64,
        "threads, the rank's included, per host reduction of at least reduce.parallel.bytes (1: off; auto from the "
            + "processors per rank; said as reduce_threads)");
    /** Host reductions from this size are split over the reduce threads. */
    public static final SettingDef<Integer> COLL_PARALLEL_BYTES = SettingDef.integer(
        "gdrkit.coll.reduce.parallel.bytes", CollContext.DEFAULT_PARALLEL_BYTES, 1024, 1 << 30,
        "host reductions of at least this many bytes are split over the reduce threads").readBy(COLL);
    /** The QPs' software MTU. */
    public static final SettingDef<Integer> IB_SOFTWARE_MTU = SettingDef.of("gdrkit.ib.software.mtu", 0,
        "0, or a power of two 256..1048576", "IbTransport QPs' software MTU for software NICs (0: the path MTU; coll "
            + "on the shm fabric makes 65536 the default, said as nic_mtu); both ends must agree", s -> {
            final String want = "0 or a power of two from 256 to 1048576";
            final int v;
            try {
                v = Integer.parseInt(s.trim());
            } catch (final NumberFormatException e) {
                throw new IllegalArgumentException("gdrkit.ib.software.mtu=" + s + " is not " + want);
            }
            if (v != 0 && (v < 256 || v > 1 << 20 || Integer.bitCount(v) != 1)) {
                throw new IllegalArgumentException("gdrkit.ib.software.mtu=" + s + " is not " + want);
            }
            return v;
        }).readBy("IbTransportContext");
    /** The host this rank counts as, where the kernel's boot id would be wrong (network namespaces, containers). */
    public static final SettingDef<String> HOST_ID = SettingDef.of("GDRKIT_HOST_ID", "", "1..64 of A-Z a-z 0-9 . _ -",
        "the host this rank counts as when the collectives group ranks by host (shared memory within a host, the "
            + "network between hosts); unset: the kernel's boot id, else the host name. Ranks in network namespaces "
            + "or containers of one machine that should act as hosts of their own set it",
        s -> {
            final String v = s.trim();
            if (!v.isEmpty() && !v.matches("[A-Za-z0-9._-]{1,64}")) {
                throw new IllegalArgumentException("GDRKIT_HOST_ID=" + s + " is not 1..64 of A-Z a-z 0-9 . _ -");
            }
            return v;
        }).defaultText("the kernel's boot id").readBy("CollWorld");
    /** The unique id of a launched run. */
    public static final SettingDef<String> BOOTSTRAP_ID = SettingDef.text("GDRKIT_ID", "",
        "the run's unique id host:port/runIdHex, set by gdrkit launch for each rank (required for a launched rank)")
        .valid("host:port/runIdHex").readBy(BOOT);
    /** This rank. */
    public static final SettingDef<Integer> BOOTSTRAP_RANK = SettingDef.integer("GDRKIT_RANK", 0, 0, MAX_RANKS - 1,
        "this rank, 0-based, below GDRKIT_NRANKS (required for a launched rank)").defaultText("unset")
        .valid("0..GDRKIT_NRANKS-1").readBy(BOOT);
    /** The number of ranks. */
    public static final SettingDef<Integer> BOOTSTRAP_NRANKS = SettingDef.integer("GDRKIT_NRANKS", 1, 1, MAX_RANKS,
        "the number of ranks of the run (required for a launched rank)").defaultText("unset").readBy(BOOT);
    /** The rank's index among its host's ranks. */
    public static final SettingDef<Integer> BOOTSTRAP_LOCAL_RANK = SettingDef.integer("GDRKIT_LOCAL_RANK", 0, 0,
        MAX_RANKS - 1, "the rank's index among the ranks of its host (which GPU and CPU it takes)")
        .valid("0..GDRKIT_NRANKS-1").readBy(BOOT);
    /** Where a joining launcher finds the id of the run it joins. */
    public static final SettingDef<String> LAUNCH_ROOT_ID = SettingDef.text("GDRKIT_ROOT_ID", "",
        "the run's id a joining gdrkit launch (another host's ranks) joins instead of starting a root")
        .valid("host:port/runIdHex").readBy("LaunchCommand (cli)");
    /** The bootstrap root's host for worlds from torchrun or Slurm variables. */
    public static final SettingDef<String> WORLD_MASTER_ADDR = SettingDef.text("GDRKIT_MASTER_ADDR", "",
        "the host of rank 0, where the bootstrap root of a torchrun or Slurm world listens; wins over MASTER_ADDR")
        .defaultText("MASTER_ADDR").valid("a host name or address").readBy(WORLD);
    /** The bootstrap root's port for worlds from torchrun or Slurm variables. */
    public static final SettingDef<Integer> WORLD_MASTER_PORT = SettingDef.integer("GDRKIT_MASTER_PORT", 0, 0, 65535,
        "the TCP port rank 0's bootstrap root of a torchrun or Slurm world listens on; wins over MASTER_PORT")
        .defaultText("MASTER_PORT").valid("1..65535").readBy(WORLD);
    /** Where rank 0 of a world from the environment listens for the bootstrap root. */
    public static final SettingDef<String> WORLD_BOOTSTRAP_BIND = SettingDef.text("GDRKIT_BOOTSTRAP_BIND", "",
        "the address rank 0 listens on for the bootstrap root of a world from the environment (and, under PMIx, "
        + "tells the others)").defaultText("MASTER_ADDR if this host's, else every interface (torchrun, Slurm); "
        + "loopback on one host, else this host's address (PMIx)").valid("an address of this host").readBy(WORLD);
    /** The PMIx client library. */
    public static final SettingDef<String> PMIX_LIBRARY = SettingDef.text("gdrkit.pmix.library", "libpmix.so.2",
        "the PMIx client library loaded through FFM for worlds a PMIx launcher started (mpirun, srun --mpi=pmix)")
        .valid("a library name or path").readBy("Pmix");
    /** The timeout of every bootstrap wait. */
    public static final SettingDef<Long> BOOTSTRAP_TIMEOUT_MS = SettingDef.longValue("gdrkit.bootstrap.timeout.ms",
        60_000, 1, 86_400_000, "the timeout of every bootstrap wait, in ms").readBy(BOOT);

    /** Every setting of this module, in documentation order. */
    public static final List<SettingDef<?>> ALL = List.of(COLL_NICS, COLL_TIMEOUT_MS, COLL_EAGER_BYTES,
        COLL_DIRECT_BYTES, COLL_SHM_DIRECT, COLL_CMA_BYTES, COLL_SHM_TREE_BYTES, COLL_SPIN_ROUNDS, COLL_SPIN_PAUSE, COLL_BIND, COLL_CUDA_GDR,
        COLL_REDUCE_THREADS, COLL_PARALLEL_BYTES, IB_SOFTWARE_MTU, HOST_ID, BOOTSTRAP_ID, BOOTSTRAP_RANK, BOOTSTRAP_NRANKS,
        BOOTSTRAP_LOCAL_RANK, BOOTSTRAP_TIMEOUT_MS, LAUNCH_ROOT_ID, WORLD_MASTER_ADDR, WORLD_MASTER_PORT,
        WORLD_BOOTSTRAP_BIND, PMIX_LIBRARY);

    private CommConfiguration() {
    }

    /** {@code auto} (read as 0, the default) or an integer in [1, max]. */
    private static SettingDef<Integer> autoOr(final String name, final int max, final String doc) {
        return SettingDef.of(name, 0, "auto, or 1.." + max, doc, s -> {
            final String t = s.trim().toLowerCase(Locale.ROOT);
            if (t.equals("auto")) {
                return 0;
            }
            try {
                final int v = Integer.parseInt(t);
                if (v >= 1 && v <= max) {
                    return v;
                }
            } catch (final NumberFormatException e) {
                // named below
            }
            throw new IllegalArgumentException(name + "=" + s + " is not auto or an integer in [1, " + max + "]");
        }).format(v -> v == 0 ? "auto" : String.valueOf(v)).defaultText("auto").readBy(COLL);
    }

    /** This module's catalogue, for {@link io.gdrkit.core.config.Catalogues}. */
    public static final class Catalogue implements SettingsCatalogue {
        /** For {@link java.util.ServiceLoader}. */
        public Catalogue() {
        }

        @Override
        public String module() {
            return "comm";
        }

        @Override
        public Class<?> configurationClass() {
            return CommConfiguration.class;
        }

        @Override
        public int order() {
            return 50;
        }

        @Override
        public List<SettingDef<?>> settings() {
            return ALL;
        }

        @Override
        public String description() {
            return """
                `CollContext`, `IbTransportContext` and `SocketTransportContext` read their settings once in \
                `conclude()` through a `SettingsReader` given with `settings(reader)` (default the process's); a \
                setter wins and is recorded as `FLAG`; `recorded()` lists every value with its source. \
                `CollContext.copyOf(concluded)` gives each rank of `coll --fabric injvm` its own concluded context \
                with every value and its source unchanged. `BootstrapContext.fromEnvironment` reads the launcher's \
                environment (recorded as `ENVIRONMENT`; the token's value is never shown) and the timeout property. \
                The collectives' `NCCL_*` variables are listed with the gdr module's; docs/TRANSPORT.md and \
                docs/PERFORMANCE.md say why each default is what it is.""";
        }
    }
}
