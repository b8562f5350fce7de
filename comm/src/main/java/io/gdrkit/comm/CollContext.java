/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.Setting;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.core.config.Source;
import io.gdrkit.gdr.config.GdrConfiguration;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Pipelining settings of the collectives, read once in {@link #conclude()} with their sources:
 * <ul>
 * <li>{@code NCCL_BUFFSIZE} (4 MiB): the staging buffer of one channel's connection; a message moves in chunks
 * of BUFFSIZE / STEPS.</li>
 * <li>{@code NCCL_STEPS} (8, 1..32): chunks in flight per channel (slots of the staging buffer).</li>
 * <li>{@code NCCL_MIN_NCHANNELS} (1) and {@code NCCL_MAX_NCHANNELS} (16): gdrkit opens MIN channels (connections
 * per peer pair; chunk i goes on channel i mod channels), which must not exceed MAX.</li>
 * <li>{@code gdrkit.coll.nics} (auto, or 1..16): software NICs per rank with IbTransport ({@link CollWorld}),
 * each with its own fabric port and, when the NICs get threads, its own thread: the rails of a multi-NIC host.
 * Channel c uses NIC c mod nics, as NCCL spreads its channels over a node's NICs, so at least this many channels
 * are opened (NCCL_MIN_NCHANNELS is raised to it, up to NCCL_MAX_NCHANNELS). Auto chooses by fabric and
 * processors ({@link CollWorld#chooseNics}). Every rank must use the same count.</li>
 * <li>{@code NCCL_ALGO} (auto): the collectives' algorithm: auto ({@link CollTuning}'s table), ring or tree (the
 * network path: exchanges over the transport), direct or rsag (shared memory when every rank is on this host),
 * hier (ranks on several hosts: shared memory within each host, the transport between hosts).</li>
 * <li>{@code NCCL_PROTO} (auto): LL (rounds of at most {@value CollTuning#LL_BYTES} bytes), Simple (whole slots),
 * or auto ({@link CollTuning}).</li>
 * <li>{@code gdrkit.coll.timeout.ms} (60000): the longest any collective waits for a peer.</li>
 * <li>{@code gdrkit.coll.eager.bytes} (8192, 0..1 MiB, a multiple of 8; 0: off): the head of every exchange, up to
 * this many bytes (and at most one chunk), goes over the pair's eager connection into receives posted ahead
 * ({@link Communicator}): a message that fits pays one one-way trip, not a CTS, the data and its ACK.</li>
 * <li>{@code gdrkit.coll.direct.bytes} ({@value #DEFAULT_DIRECT}, 0..1 MiB; 0: off): allreduce (ring algorithm),
 * broadcast, reduce and allgather of at most this many bytes (capped at the eager head less its 8-byte header) run
 * as ONE direct round: every rank sends its input to every rank that needs it over the eager connections, and each
 * receiver reduces (or places) the inputs locally, allreduce in rank order 0..n-1 so every rank holds the same bits
 * ({@link Collectives}). Host memory only. Through shared memory ({@code gdrkit.coll.shm.direct}) the default
 * is {@value #SHM_DIRECT_READ} / (ranks - 1), at least {@value #DEFAULT_SHM_DIRECT} ({@link #shmDirectBytes(int)}:
 * 256 KiB for 2 ranks), and a value given is not capped by the eager head.</li>
 * <li>{@code gdrkit.coll.shm.direct} (true): when every rank is on this host (proven: each maps rank 0's
 * run-private shared file), the direct round goes through shared memory instead of the eager connections: a store
 * and a flag per input, no NIC ({@link ShmDirect}); false keeps it on the NIC. Every rank must want it, else none
 * uses it.</li>
 * <li>{@code gdrkit.coll.cma.bytes} (65536, 0..2^30; 0: off): on the shm path, allgather, broadcast, sendrecv and
 * alltoall rounds of at least this many bytes per block move with one copy, each reader pulling the writer's buffer
 * with process_vm_readv ({@link CmaPull}); every rank must give the same value and be able to read its peers.</li>
 * <li>{@code gdrkit.coll.spin.rounds} ({@value #DEFAULT_SPINS}, 0..10^7): polls that moved nothing before a waiting
 * rank starts to yield its CPU (then it yields 100 times, then parks 20 us at a time; the NIC's backstop keeps
 * answering). Lower yields sooner to a peer that shares the CPU; higher keeps a rank on its core. The default is
 * about half a millisecond of polling: a peer taken off its CPU for a moment (a JIT or GC thread, another process)
 * is then waited for on the core, where a shorter spin parks the waiter, whose wake-up (a timer's slack, tens of
 * microseconds) the peer then waits for in turn. When the host's spinning threads outnumber its processors the
 * default is cut to {@link Communicator#OVERSUBSCRIBED_SPINS} and a wait yields up to
 * {@link Pacer#OVERSUBSCRIBED_YIELD_ROUNDS} times before it parks (Open MPI yields when oversubscribed, too).</li>
 * <li>{@code gdrkit.coll.spin.pause} (false): whether each of those polls ends with {@link Thread#onSpinWait()}
 * (x86 PAUSE: it spares a sibling hyperthread and power, but on recent Intel cores one PAUSE lasts about 140 cycles,
 * which a waiting rank adds to the moment it sees a peer's flag). False, the default, polls back to back, as Aeron's
 * no-op idle strategy does, which shortens small collectives through shared memory (docs/PERFORMANCE.md); the spin
 * still ends after {@code gdrkit.coll.spin.rounds} polls, sooner without the pauses. True for hosts where
 * hyperthread siblings run other work.</li>
 * <li>{@code gdrkit.coll.bind} (auto): {@code core} pins the thread that opens a rank's communicator (the one
 * that then calls its collectives and waits on its peers) to one CPU, the local rank's in the list of CPUs the
 * thread may use (local rank 0 the first, 1 the second, ..., wrapping), as {@code mpirun --bind-to core} does for a
 * rank's process. Only that thread: the JIT, the GC and the NIC's threads still run anywhere, and helpers gdrkit
 * starts later (reduce threads) take the process's mask back first. Where affinity is unavailable the rank runs
 * unpinned and {@link Communicator#binding()} says why. {@code auto} binds as {@code core} does when the rank is a
 * process of its own, started by a launcher, and the ranks of its host are no more than the CPUs it may use, as
 * {@code mpirun} binds its ranks by default: two ranks that spin on their flags and land on one CPU, which the
 * scheduler does now and then, hand each other the CPU once per round (tens of microseconds) until it moves one
 * away; ranks that are threads of one JVM, or more ranks than CPUs, stay unpinned. {@code none} never pins.</li>
 * <li>{@code gdrkit.coll.cuda.gdr} (true): let the gates put the software NIC straight onto a real CUDA GPU's
 * buffers. False holds their GDR verdict back and a CUDA GPU's collectives bounce through host memory (a kill
 * switch; see docs/TRANSPORT.md, "GDR on a real GPU"); simulated GPUs are not affected.</li>
 * <li>{@code gdrkit.coll.reduce.threads} (auto, or 1..64; 1: off): threads (the rank's own included) that share one
 * host reduction of at least {@code gdrkit.coll.reduce.parallel.bytes} ({@value #DEFAULT_PARALLEL_BYTES}, 1 KiB..1
 * GiB) bytes ({@link ParallelReducer}); auto chooses from the processors per rank ({@link
 * #chooseReduceThreadsBeside}). Host memory only: a GPU attached reduces there.</li>
 * </ul>
 */
public final class CollContext {
    /**
     * Creates a context with every setting unset: {@link #conclude()} reads them from the settings source or takes
     * the defaults.
     */
    public CollContext() {
    }

    /** The collectives' algorithms ({@code NCCL_ALGO}). */
    public enum Algo {
        /** The tuning table chooses ({@link CollTuning}). */
        AUTO,
        /** One round in which every rank reads every input it needs from where its writer published it. */
        DIRECT,
        /** Reduce-scatter then all-gather through shared memory: each rank reduces 1/n of every chunk. */
        RSAG,
        /** Reduce-scatter then allgather around a ring of the ranks. */
        RING,
        /** Reduce up a binomial tree to rank 0, then broadcast down the same tree. */
        TREE,
        /**
         * Ranks on several hosts: shared memory within each host, the transport between the ranks of the same local
         * index on every host ({@link HierCollectives}).
         */
        HIER
    }

    /** The collectives' protocols ({@code NCCL_PROTO}). */
    public enum Proto {
        /** The tuning table chooses ({@link CollTuning}). */
        AUTO,
        /** Low latency: small rounds, the data beside its flag. */
        LL,
        /** Bandwidth: whole slots or chunks per round. */
        SIMPLE
    }

    /** Where a rank's collectives thread runs ({@code gdrkit.coll.bind}). */
    public enum Bind {
        /**
         * {@link #CORE} for a rank process started by a launcher (gdrkit's, mpirun, srun, torchrun) when the ranks of
         * its host are no more than the CPUs it may use; {@link #NONE} otherwise (ranks that are threads of one JVM,
         * or more ranks than CPUs).
         */
        AUTO,
        /** Where the scheduler puts it. */
        NONE,
        /** Pinned to one CPU, the local rank's. */
        CORE
    }

    /** The eager head by default: a small allreduce's every exchange fits, a large one's extra piece is small. */
    public static final int DEFAULT_EAGER = 8192;

    /** The direct round by default up to 4 KiB: one one-way trip where the ring takes 2(n-1) dependent ones. */
    public static final int DEFAULT_DIRECT = 4096;

    /**
     * The direct round through shared memory by default up to at least 64 KiB ({@link #shmDirectBytes(int)}: more for
     * fewer than 5 ranks, see {@link #SHM_DIRECT_READ}): there a round is a copy into the rank's own slot
     * and a read of every peer's, with no NIC per message. Larger slots (up to 1 MiB) make large direct rounds
     * faster than the ring but slow the smallest collectives down (docs/PERFORMANCE.md), so 1 MiB stays a setting.
     * Each rank's file holds
     * {@link ShmDirect#DEPTH} slots of this size, written in full when it is made, so a full /dev/shm is a fallback
     * to the NIC with its reason, not a SIGBUS later.
     */
    public static final int DEFAULT_SHM_DIRECT = 65536;

    /**
     * The bytes a rank may read from its peers' slots in one default direct round through shared memory: the default
     * is this over (ranks - 1), at least {@link #DEFAULT_SHM_DIRECT}, because a direct round reads every peer's whole
     * input where the ring reads 2(n-1)/n of one. 2 ranks thus go direct up to 256 KiB, where the direct round is
     * faster than the ring (docs/PERFORMANCE.md); 3 ranks get 128 KiB, 5 or more {@value #DEFAULT_SHM_DIRECT}.
     */
    public static final int SHM_DIRECT_READ = 262144;

    /** Idle polls before a waiting rank yields, by default. */
    public static final int DEFAULT_SPINS = 200_000;

    /**
     * Host reductions from this many bytes are split over the reduce threads, by default: even at this size, reading
     * the peers' slots goes faster on four cores than on one, which speeds up direct rounds through shared memory
     * (docs/PERFORMANCE.md). A reduction
     * up to {@link ParallelReducer#DEFAULT_COLD_ALONE_BYTES} that finds a worker parked (no part for
     * {@link ParallelReducer#SPIN_NANOS}) runs on the rank alone (and wakes the workers if a stream is starting), so
     * a lone small collective after a pause does not wait for a thread to be scheduled.
     */
    public static final int DEFAULT_PARALLEL_BYTES = 16 << 10;

    /** The most threads auto gives one rank's reductions: beyond 4, memory bandwidth, not cores, bounds a chunk. */
    public static final int MAX_AUTO_REDUCE_THREADS = 4;

    /** Bytes of a direct round's message before the data: the operation, type, reduction and size (checked). */
    public static final int DIRECT_HEADER = 8;

    private SettingsReader settings = SettingsReader.ofProcess();
    private Integer buffSize;
    private Integer steps;
    private Integer minChannels;
    private Integer maxChannels;
    private Integer nicsSet;
    private Setting<Integer> nics;
    private Algo algo;
    private Proto proto;
    private Long timeoutMs;
    private Integer eagerBytes;
    private Integer directBytes;
    /** Whether gdrkit.coll.direct.bytes was left at its default (then shared memory takes its own default). */
    private boolean directBytesDefault;
    private Integer spinRounds;
    private Setting<Boolean> spinPause;
    private Setting<Bind> bindTo;
    private Bind bindToSet;
    private Setting<Boolean> cudaGdr;
    private Boolean shmDirectSet;
    private Integer cmaBytes;
    private Integer treeBytes;
    private Setting<Boolean> shmDirect;
    /** {@code gdrkit.coll.reduce.threads}: 0 is auto. */
    private Setting<Integer> reduceThreads;
    private Integer reduceThreadsSet;
    private Integer parallelBytes;
    private final List<Setting<?>> recorded = new ArrayList<>();
    private final ContextFreeze freeze = new ContextFreeze("CollContext");
    private java.net.InetAddress bind = java.net.InetAddress.getLoopbackAddress();

    /**
     * The address this rank's listeners bind: the TCP fabric's port, IbTransport's handshake listener and
     * SocketTransport's (default loopback; ranks on other hosts need an address they reach: docs/SECURITY.md).
     *
     * @param address the local address
     * @return this context
     */
    public CollContext bind(final java.net.InetAddress address) {
        freeze.set("bind");
        this.bind = Objects.requireNonNull(address, "bind address");
        return this;
    }

    /** {@return the address this rank's listeners bind} */
    public java.net.InetAddress bind() {
        return bind;
    }

    /**
     * Sets where the settings not given here are read from (the process's environment and properties by default).
     *
     * @param r the settings source
     * @return this context
     */
    public CollContext settings(final SettingsReader r) {
        freeze.set("settings");
        this.settings = Objects.requireNonNull(r, "settings");
        return this;
    }

    /**
     * Sets the staging buffer of one channel's connection, overriding NCCL_BUFFSIZE.
     *
     * @param b the size in bytes
     * @return this context
     */
    public CollContext buffSize(final int b) {
        freeze.set("buffSize");
        this.buffSize = b;
        return this;
    }

    /**
     * Sets the chunks in flight per channel, overriding NCCL_STEPS.
     *
     * @param s the number of steps, 1..32
     * @return this context
     */
    public CollContext steps(final int s) {
        freeze.set("steps");
        this.steps = s;
        return this;
    }

    /**
     * Sets the channels (connections per pair of peers), overriding NCCL_MIN_NCHANNELS.
     *
     * @param c the number of channels
     * @return this context
     */
    public CollContext channels(final int c) {
        freeze.set("channels");
        this.minChannels = c;
        return this;
    }

    /**
     * Sets the collectives' protocol, overriding NCCL_PROTO.
     *
     * @param p the protocol
     * @return this context
     */
    public CollContext proto(final Proto p) {
        freeze.set("proto");
        this.proto = p;
        return this;
    }

    /** {@return the collectives' protocol} */
    public Proto proto() {
        return proto;
    }

    /**
     * Sets the collectives' algorithm, overriding NCCL_ALGO.
     *
     * @param a the algorithm
     * @return this context
     */
    public CollContext algo(final Algo a) {
        freeze.set("algo");
        this.algo = a;
        return this;
    }

    /**
     * Bytes of each exchange's head that go eagerly (0: no eager connection); see the class comment.
     *
     * @param b the eager head in bytes, 0..1 MiB, a multiple of 8
     * @return this context
     */
    public CollContext eagerBytes(final int b) {
        freeze.set("eagerBytes");
        this.eagerBytes = b;
        return this;
    }

    /**
     * Collectives up to this many bytes run as one direct round (0: never); see the class comment.
     *
     * @param b the largest direct collective in bytes, 0..1 MiB
     * @return this context
     */
    public CollContext directBytes(final int b) {
        freeze.set("directBytes");
        this.directBytes = b;
        return this;
    }

    /**
     * Idle polls before a waiting rank yields (see the class comment).
     *
     * @param s the number of idle polls, 0..10^7
     * @return this context
     */
    public CollContext spinRounds(final int s) {
        freeze.set("spinRounds");
        this.spinRounds = s;
        return this;
    }

    /** {@return the idle polls before a waiting rank yields} */
    public int spinRounds() {
        return spinRounds;
    }

    /**
     * Where each rank's collectives thread runs (see the class comment): {@link Bind#CORE} pins it.
     *
     * @param b where the thread runs
     * @return this context
     */
    public CollContext bindTo(final Bind b) {
        freeze.set("bindTo");
        this.bindToSet = Objects.requireNonNull(b, "bind");
        return this;
    }

    /** {@return {@code gdrkit.coll.bind}, with its source} */
    public Setting<Bind> bindTo() {
        if (bindTo == null) {
            final Setting<String> b = bindToSet != null
                ? CommConfiguration.COLL_BIND.given(bindToSet.name().toLowerCase(Locale.ROOT))
                : CommConfiguration.COLL_BIND.read(settings);
            bindTo = new Setting<>(b.name(), Bind.valueOf(b.value().toUpperCase(Locale.ROOT)), b.source(), b.raw());
            recorded.add(bindTo);
        }
        return bindTo;
    }

    /**
     * {@return {@code gdrkit.coll.spin.pause}, with its source: whether an idle poll pauses the core (see the class
     * comment)}
     */
    public Setting<Boolean> spinPause() {
        if (spinPause == null) {
            spinPause = CommConfiguration.COLL_SPIN_PAUSE.read(settings);
            recorded.add(spinPause);
        }
        return spinPause;
    }

    /**
     * Threads per large host reduction, the rank's included (1: off; 0: auto, the default); see the class comment.
     *
     * @param t the number of threads, 0..64
     * @return this context
     */
    public CollContext reduceThreads(final int t) {
        freeze.set("reduceThreads");
        this.reduceThreadsSet = t;
        return this;
    }

    /**
     * Host reductions of at least this many bytes are split over the reduce threads; see the class comment.
     *
     * @param b the threshold in bytes, 1 KiB..1 GiB
     * @return this context
     */
    public CollContext parallelBytes(final int b) {
        freeze.set("parallelBytes");
        this.parallelBytes = b;
        return this;
    }

    /** {@return the smallest host reduction, in bytes, that is split over the reduce threads} */
    public int parallelBytes() {
        return parallelBytes;
    }

    /**
     * How many threads reduce one large host reduction for a rank of {@code localRanks} on this host whose
     * {@code nicsPerRank} NICs each have a thread (see below), and why ({@code reduce_threads} in the output).
     *
     * @param localRanks  the ranks on this host
     * @param nicsPerRank the software NICs per rank that have a thread of their own
     * @return the number of threads, the threshold, and why
     */
    public ParallelReducer.Choice chooseReduceThreadsBeside(final int localRanks, final int nicsPerRank) {
        return chooseReduceThreads(localRanks, Runtime.getRuntime().availableProcessors(), nicsPerRank);
    }

    /**
     * {@link #chooseReduceThreadsBeside} on a host of {@code cpus} processors. A value given is taken as is; auto follows
     * the NIC's choice ({@link CollWorld#nicProgress(int)}): with at least {@value
     * CollWorld#CPUS_PER_RANK_FOR_DEDICATED} processors per rank, where each rank's NIC has a thread (a core) of its
     * own, the rank's remaining processors reduce, at most {@value #MAX_AUTO_REDUCE_THREADS} threads with the rank's
     * own (min(4, processors / ranks - 1); 4 for 2 ranks on 16 processors); with fewer, the rank alone: a
     * worker that must wait for a core costs more than it saves (docs/TRANSPORT.md). With k = {@code nicsPerRank}
     * NICs (gdrkit.coll.nics) the threshold is {@value CollWorld#CPUS_PER_RANK_FOR_DEDICATED} + k - 1 processors per
     * rank and the threads min(4, processors / ranks - (2k - 1)), at least 1: each NIC thread takes a processor, and
     * past the first NIC each takes one more for the kernel work it causes (socket copies, process_vm_readv). The rule
     * fits 2 ranks on 16 processors: with 2 NICs over shm 4 threads are fastest for large allreduces, with 4 NICs
     * over tcp 1 thread is, since the NIC threads and their kernel work leave no core to reduce on (the measurement
     * is in docs/PERFORMANCE.md, "Collectives against OpenMPI").
     */
    ParallelReducer.Choice chooseReduceThreads(final int localRanks, final int cpus, final int nicsPerRank) {
        freeze.requireConcluded("choosing reduce threads");
        if (localRanks < 1 || cpus < 1 || nicsPerRank < 1) {
            throw new IllegalArgumentException("reduceThreads: " + localRanks + " ranks, " + cpus + " processors, "
                + nicsPerRank + " NICs per rank");
        }
        if (reduceThreads.value() != 0) {
            return new ParallelReducer.Choice(reduceThreads.value(), parallelBytes, reduceThreads.describe());
        }
        final int per = CollWorld.cpusPerRankFor(nicsPerRank);
        final String how = reduceThreads.source() == io.gdrkit.core.config.Source.DEFAULT ? "auto"
            : "auto, " + reduceThreads.name() + "=" + reduceThreads.raw() + " ("
            + reduceThreads.source().name().toLowerCase(Locale.ROOT) + ")";
        if (cpus < per * localRanks) {
            return new ParallelReducer.Choice(1, parallelBytes, how + ": " + cpus + " processors < " + per + " x "
                + localRanks + " ranks on this host");
        }
        final int t = Math.max(1, Math.min(MAX_AUTO_REDUCE_THREADS, cpus / localRanks - (2 * nicsPerRank - 1)));
        return new ParallelReducer.Choice(t, parallelBytes, how + ": " + cpus + " processors >= " + per + " x "
            + localRanks + " ranks on this host, min(" + MAX_AUTO_REDUCE_THREADS + ", " + cpus + " / " + localRanks
            + " - " + (2 * nicsPerRank - 1) + (nicsPerRank == 1 ? " for the NIC thread)" : " for " + nicsPerRank
            + " NIC threads and their kernel work)"));
    }

    /**
     * The largest collective (in bytes) that runs as a direct round: the setting, capped so that the message with
     * its header fits an eager slot; 0 when off or without an eager connection.
     *
     * @return the largest direct collective in bytes, or 0
     */
    public int directBytes() {
        return Math.max(0, Math.min(directBytes, eagerBytes() - DIRECT_HEADER));
    }

    /**
     * The largest collective (in bytes) that runs as a direct round through shared memory ({@link ShmDirect}) among
     * {@code nranks} ranks: the setting when one was given (not capped: shared slots are sized for it), else
     * {@value #SHM_DIRECT_READ} / (nranks - 1) rounded down to a multiple of 8, at least {@value #DEFAULT_SHM_DIRECT};
     * 0 when direct rounds are off. Every rank has the same count, so every rank gets the same answer.
     *
     * @param nranks the number of ranks
     * @return the largest direct collective through shared memory in bytes, or 0
     */
    public int shmDirectBytes(final int nranks) {
        if (!directBytesDefault) {
            return directBytes;
        }
        return Math.max(DEFAULT_SHM_DIRECT, SHM_DIRECT_READ / Math.max(1, nranks - 1) / 8 * 8);
    }

    /**
     * {@return the eager head's size: the setting, at most one chunk, a multiple of 8 (every type's size divides it)}
     */
    public int eagerBytes() {
        return Math.min(eagerBytes, chunkBytes()) / 8 * 8;
    }

    /**
     * {@return {@code gdrkit.coll.cuda.gdr}, with its source: whether a real CUDA GPU may take the GDR path at all}
     */
    public Setting<Boolean> cudaGdr() {
        if (cudaGdr == null) {
            cudaGdr = CommConfiguration.COLL_CUDA_GDR.read(settings);
            recorded.add(cudaGdr);
        }
        return cudaGdr;
    }

    /**
     * Whether direct rounds may go through shared memory when every rank is on one host (see the class comment).
     *
     * @param on true to allow it (the default)
     * @return this context
     */
    public CollContext shmDirect(final boolean on) {
        freeze.set("shmDirect");
        this.shmDirectSet = on;
        return this;
    }

    /**
     * The smallest round (bytes per block) of allgather, broadcast, sendrecv and alltoall on the shm path that moves
     * with one copy through process_vm_readv ({@link CmaPull}); 0 is off.
     *
     * @param bytes the threshold, 0 to turn single copy off
     * @return this context
     */
    public CollContext cmaBytes(final int bytes) {
        freeze.set("cmaBytes");
        this.cmaBytes = bytes;
        return this;
    }

    /**
     * The largest reduce on the shm path (4 or more ranks) that goes up a binomial tree instead of a direct round;
     * 0 is off. Every rank must give the same value.
     *
     * @param bytes the limit, 0 to turn the tree off
     * @return this context
     */
    public CollContext treeBytes(final int bytes) {
        freeze.set("treeBytes");
        this.treeBytes = bytes;
        return this;
    }

    /** {@return {@code gdrkit.coll.shm.tree.bytes}: read at {@link #conclude()} unless set} */
    public int treeBytes() {
        if (treeBytes == null) {
            treeBytes = pick(null, CommConfiguration.COLL_SHM_TREE_BYTES);
        }
        return treeBytes;
    }

    /** {@return {@code gdrkit.coll.cma.bytes}: read at {@link #conclude()} unless set} */
    public int cmaBytes() {
        if (cmaBytes == null) {
            cmaBytes = pick(null, CommConfiguration.COLL_CMA_BYTES);
        }
        return cmaBytes;
    }

    /** {@return {@code gdrkit.coll.shm.direct}, with its source} */
    public Setting<Boolean> shmDirect() {
        if (shmDirect == null) {
            shmDirect = shmDirectSet != null ? CommConfiguration.COLL_SHM_DIRECT.given(shmDirectSet)
                : CommConfiguration.COLL_SHM_DIRECT.read(settings);
            recorded.add(shmDirect);
        }
        return shmDirect;
    }

    /**
     * Sets the longest any collective waits for a peer, overriding {@code gdrkit.coll.timeout.ms}.
     *
     * @param d the timeout
     * @return this context
     */
    public CollContext timeout(final Duration d) {
        freeze.set("timeout");
        this.timeoutMs = d.toMillis();
        return this;
    }

    /** {@return the staging buffer of one channel's connection, in bytes} */
    public int buffSize() {
        return buffSize;
    }

    /** {@return the chunks in flight per channel} */
    public int steps() {
        return steps;
    }

    /** {@return the minimum number of channels (NCCL_MIN_NCHANNELS)} */
    public int channels() {
        return minChannels;
    }

    /**
     * The channels a communicator over a transport of {@code devices} devices opens: NCCL_MIN_NCHANNELS, raised to
     * the device count (one channel per NIC at least), at most NCCL_MAX_NCHANNELS.
     *
     * @param devices the number of network devices of the transport
     * @return the number of channels
     */
    public int channelsFor(final int devices) {
        return Math.min(maxChannels, Math.max(minChannels, devices));
    }

    /** {@return the {@code gdrkit.coll.nics} setting with its source: 0 for auto ({@link CollWorld#chooseNics})} */
    public Setting<Integer> nicsSetting() {
        return nics;
    }

    /**
     * Software NICs per rank, 1..16, or 0 for auto.
     *
     * @param k the number of NICs, 1..16, or 0 for auto
     * @return this context
     */
    public CollContext nics(final int k) {
        freeze.set("nics");
        this.nicsSet = k;
        return this;
    }

    /** {@return the collectives' algorithm} */
    public Algo algo() {
        return algo;
    }

    /** {@return the longest any collective waits for a peer} */
    public Duration timeout() {
        return Duration.ofMillis(timeoutMs);
    }

    /**
     * {@return the chunk one request moves: BUFFSIZE / STEPS, a multiple of 8 bytes (every type's size divides it)}
     */
    public int chunkBytes() {
        return Math.max(8, buffSize / steps / 8 * 8);
    }

    /**
     * {@return every setting in effect with its source (default, environment, property, flag), in conclusion order}
     */
    public List<Setting<?>> recorded() {
        return List.copyOf(recorded);
    }

    /**
     * A rank's copy of a concluded context (ranks that are threads of one JVM each need their own): the same values,
     * already concluded, each recorded with the source it was concluded from, so a value the launcher took from a
     * default, the environment or a property is not reported as a flag by the ranks.
     *
     * @param c the concluded context to copy
     * @return the copy, concluded
     * @throws IllegalStateException unless {@code c} is concluded
     */
    public static CollContext copyOf(final CollContext c) {
        c.freeze.requireConcluded("copying it to the ranks");
        final CollContext k = new CollContext();
        k.settings = c.settings;
        k.buffSize = c.buffSize;
        k.steps = c.steps;
        k.minChannels = c.minChannels;
        k.maxChannels = c.maxChannels;
        k.nicsSet = c.nicsSet;
        k.nics = c.nics;
        k.algo = c.algo;
        k.proto = c.proto;
        k.timeoutMs = c.timeoutMs;
        k.eagerBytes = c.eagerBytes;
        k.directBytes = c.directBytes;
        k.directBytesDefault = c.directBytesDefault;
        k.spinRounds = c.spinRounds;
        k.spinPause = c.spinPause;
        k.bindTo = c.bindTo;
        k.cudaGdr = c.cudaGdr;
        k.shmDirect = c.shmDirect;
        k.cmaBytes = c.cmaBytes;
        k.treeBytes = c.treeBytes;
        k.reduceThreads = c.reduceThreads;
        k.reduceThreadsSet = c.reduceThreadsSet;
        k.parallelBytes = c.parallelBytes;
        k.bind = c.bind;
        k.recorded.addAll(c.recorded);
        k.freeze.concluded();
        return k;
    }

    /**
     * Reads what no setter gave, checks everything once and freezes the context: afterwards a setter and a second
     * {@code conclude()} throw {@link IllegalStateException} ({@link #isConcluded()} tells code that is handed a
     * context whether to conclude it).
     *
     * @return this context
     * @throws IllegalArgumentException naming a malformed or inconsistent setting
     */
    public synchronized CollContext conclude() {
        freeze.checkConclude();
        buffSize = pick(buffSize, GdrConfiguration.BUFFSIZE);
        steps = pick(steps, GdrConfiguration.STEPS);
        minChannels = pick(minChannels, GdrConfiguration.MIN_NCHANNELS);
        maxChannels = pick(maxChannels, GdrConfiguration.MAX_NCHANNELS);
        nics = pickSetting(nicsSet, CommConfiguration.COLL_NICS);
        if (minChannels > maxChannels) {
            throw new IllegalArgumentException(GdrConfiguration.MIN_NCHANNELS.name() + "=" + minChannels
                + " exceeds " + GdrConfiguration.MAX_NCHANNELS.name() + "=" + maxChannels);
        }
        final Setting<String> a = algo == null ? GdrConfiguration.ALGO.read(settings)
            : GdrConfiguration.ALGO.given(algo.name().toLowerCase(Locale.ROOT));
        algo = Algo.valueOf(a.value().toUpperCase(Locale.ROOT));
        recorded.add(new Setting<>(a.name(), algo, a.source(), a.source() == Source.FLAG ? algo.name() : a.raw()));
        final Setting<String> pr = proto == null ? GdrConfiguration.PROTO.read(settings)
            : GdrConfiguration.PROTO.given(proto.name().toLowerCase(Locale.ROOT));
        proto = Proto.valueOf(pr.value().toUpperCase(Locale.ROOT));
        recorded.add(new Setting<>(pr.name(), proto, pr.source(), pr.source() == Source.FLAG ? proto.name()
            : pr.raw()));
        eagerBytes = pick(eagerBytes, CommConfiguration.COLL_EAGER_BYTES);
        if (eagerBytes % 8 != 0) {
            throw new IllegalArgumentException(CommConfiguration.COLL_EAGER_BYTES.name() + "=" + eagerBytes
                + " is not a multiple of 8 in [0, 1048576]");
        }
        directBytes = pick(directBytes, CommConfiguration.COLL_DIRECT_BYTES);
        directBytesDefault = recorded.get(recorded.size() - 1).source() == Source.DEFAULT;
        spinRounds = pick(spinRounds, CommConfiguration.COLL_SPIN_ROUNDS);
        spinPause();
        bindTo();
        cudaGdr();
        shmDirect();
        cmaBytes = pick(cmaBytes, CommConfiguration.COLL_CMA_BYTES);
        treeBytes = pick(treeBytes, CommConfiguration.COLL_SHM_TREE_BYTES);
        // default auto: with a core per NIC thread to spare, reducing on up to 4 threads speeds up large
        // allreduces (docs/PERFORMANCE.md, "Collectives against OpenMPI"); below 4 + k - 1 processors per rank
        // (k NICs) auto is 1, since a worker that must wait for a core costs more than it saves
        reduceThreads = pickSetting(reduceThreadsSet, CommConfiguration.COLL_REDUCE_THREADS);
        parallelBytes = pick(parallelBytes, CommConfiguration.COLL_PARALLEL_BYTES);
        timeoutMs = pick(timeoutMs, CommConfiguration.COLL_TIMEOUT_MS);
        freeze.concluded();
        return this;
    }

    /**
     * {@return whether {@link #conclude()} ran (or this is a {@link #copyOf} copy): then setters and conclude()
     * throw}
     */
    public boolean isConcluded() {
        return freeze.isConcluded();
    }

    /**
     * {@link #conclude()} unless it ran, atomically: for the code a context is handed to, which may find it concluded
     * by its caller (or by another rank's thread sharing it).
     */
    synchronized CollContext concludeOnce() {
        return isConcluded() ? this : conclude();
    }

    /**
     * A setter's value (checked by the setting's rule, recorded as FLAG), else the setting read once with its source;
     * recorded either way.
     */
    private <T> Setting<T> pickSetting(final T set, final SettingDef<T> def) {
        final Setting<T> s = set != null ? def.given(set) : def.read(settings);
        recorded.add(s);
        return s;
    }

    /** {@link #pickSetting}'s value. */
    private <T> T pick(final T set, final SettingDef<T> def) {
        return pickSetting(set, def).value();
    }
}
