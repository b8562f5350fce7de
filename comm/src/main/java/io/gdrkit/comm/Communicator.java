/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapException;
import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.comm.transport.NetTransport;
import io.gdrkit.comm.transport.NetTransportException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A communicator over any {@link NetTransport}: every pair of ranks is connected by {@code channels} connections
 * in each direction, set up by exchanging listen handles through the bootstrap (as NCCL's transport setup does),
 * with connect and accept driven without blocking. Its one data primitive is {@link #exchange}: send a range to
 * one peer while receiving (or receiving and reducing) a range from another, cut in chunks of BUFFSIZE/STEPS,
 * STEPS chunks in flight per channel, chunk i on channel i mod channels. Collectives are sequences of exchanges.
 *
 * <p>The eager head: with {@code gdrkit.coll.eager.bytes} E > 0 every ordered pair also has an eager connection,
 * and the first min(E, bytes) bytes of every exchange (possibly none) go over it as one message, the rest in
 * chunks over the channels as above. The receiver keeps {@value #EAGER_DEPTH} receives posted ahead on the eager
 * connection, into its own slots, for the next exchanges from that peer (NCCL's proxy keeps its receives posted
 * the same way), and posts the next one as each is consumed; the sender copies the head into a slot of its own
 * and does not wait for its completion (only before it reuses the slot). A small exchange thus costs one one-way
 * trip of data instead of a CTS, the data and the ACK. The transport's semantics are unchanged: isend still
 * returns null until the receive is posted.
 *
 * <p>Tags carry the exchange's number between the two ranks and the chunk's index, and each chunk's size is
 * checked, so ranks that disagree on sizes or on the sequence of exchanges meet a named error (a wrong size, no
 * receive with the tag, or a timeout naming the exchange) instead of mixing data. Every wait is bounded by the
 * context's timeout and asks the bootstrap whether another rank failed.
 */
public final class Communicator implements AutoCloseable {
    private final Bootstrap bootstrap;
    private final NetTransport net;
    private final CollContext ctx;
    private final int rank;
    private final int n;
    /** The context's direct-round limit through shared memory for n ranks (asked once: it is the same every call). */
    private final int shmDirectBytes;
    private final int channels;
    /** The transport's device count; see {@link #devOf}. */
    private final int devs;
    /** Where the listen handles start in the blob each rank gathers: after its device count. */
    private static final int HANDLES_AT = 4;
    /** Connections per ordered pair: the channels, plus the eager connection (column {@code channels}) if on. */
    private final int cols;
    /** Bytes of an exchange's head that go eagerly; 0: off. */
    private final int eager;
    /** Eager receive slots per peer, filled from {@code eagerIn} (and send slots from {@code eagerOut}). */
    private MemorySegment eagerIn;
    private MemorySegment eagerOut;
    private NetTransport.MrHandle eagerInMr;
    private NetTransport.MrHandle eagerOutMr;
    /** Per peer and slot: the receive posted ahead / the send not yet known complete (null: none). */
    private final Pending[][] eagerRecvReq;
    private final Pending[][] eagerSendReq;
    /** Eager messages consumed from / sent to each peer so far; message k uses slot k mod EAGER_DEPTH. */
    private final long[] eagerRecvCount;
    private final long[] eagerSendCount;
    /** A direct round's open sends and receives, per peer. */
    private final boolean[] dSend;
    private final boolean[] dRecv;
    /**
     * Direct rounds so far: round d's message (header and input) lies once in this rank's own send slot
     * {@code eagerSlot(rank, d)}, and every peer's send reads it there; {@code directSentK[d mod EAGER_DEPTH][p]} is
     * the eager message number that sent it to peer p (0: not sent), whose request must be complete before the
     * slot is written again.
     */
    private long directRounds;
    private final long[][] directSentK;
    /** Direct rounds through shared memory when every rank is on this host (null: over the eager connections). */
    private final ShmDirect shm;
    /** Where direct rounds go and why ({@link #directPath()}). */
    private final String directPath;
    private final String binding;
    private final NetTransport.SendComm[][] send;
    private final NetTransport.RecvComm[][] recv;
    private final NetTransport.ListenComm[][] listens;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment[] staging;
    private final NetTransport.MrHandle[] stagingMr;
    private final int chunk;
    private final long timeoutNanos;
    private DeviceReducer deviceReducer;
    /** Host reductions, split over threads when large ({@code gdrkit.coll.reduce.threads}); unused with a GPU. */
    private final ParallelReducer hostReducer;
    private ParallelReducer.Choice reduceChoice;
    /** The GDR decision for this rank's GPU buffers (null in host memory). */
    private CollGdr gdr;
    /** Who shares this rank's GPU ({@link CollWorld} works it out over the bootstrap). */
    private GpuSharing gpuSharing;
    /** Per channel, where reduced receives land: the host staging, or with GDR device staging registered as GPU MRs. */
    private final long[] stagingAddr;
    /** Per channel, a one-element array: what irecv takes, made once (see {@link Pending} on array stores). */
    private final NetTransport.MrHandle[][] stagingNicMr;
    private io.gdrkit.gpu.DeviceBuffer[] stagingDev;
    private NetTransport.MrHandle[] stagingDevMr;
    /** Mappings made for peermem registrations of GPU memory, closed at deregistration. */
    private final java.util.IdentityHashMap<NetTransport.MrHandle, io.gdrkit.gpu.GpuDmaMemory> mappings =
        new java.util.IdentityHashMap<>();
    private int liveDirect;
    /** iflush READs posted and completed on the GDR path (before the reduction or the caller read the data). */
    private long flushes;
    private final long[] fAddr = new long[1];
    private final int[] fSize = new int[1];
    private final NetTransport.MrHandle[] fMh = new NetTransport.MrHandle[1];
    // exchange's working state, reused (one exchange at a time per communicator)
    private Pending[] sReq = new Pending[0];
    private Pending[] rReq = new Pending[0];
    private final int[] sOut;
    private final int[] rOut;
    private final int[] sHead;
    private final int[] rHead;
    private final long[] addr = new long[1];
    private final int[] size = new int[1];
    private final int[] tag = new int[1];
    /** The receive's registration when it lands in place (op null); written only when the buffer changes. */
    private final NetTransport.MrHandle[] dstMh = new NetTransport.MrHandle[1];
    private NetTransport.MrHandle[] eagerInMh;
    private final int[] got = new int[1];
    /** Exchanges with each peer since the communicator was made (the algorithm's footprint, for tests and reports). */
    private final long[] sentTo;
    private final long[] receivedFrom;
    /** Exchanges sent to / received from each peer so far: the tag's upper half, equal on both ends of a pair. */
    private final int[] sendSeq;
    private final int[] recvSeq;

    /**
     * A registered buffer: its host memory, its registration (null when there is no peer), and for GPU collectives
     * its device half (null in host memory; see {@link DeviceReducer}) from {@code devOff} on. Without GDR
     * ({@code direct} false) the NIC reads and writes the host half (the bounce buffer); with GDR the registration
     * covers the device half, the NIC moves the data in GPU memory, and the host half only serves filling and checking.
     */
    public record Buffer(MemorySegment seg, NetTransport.MrHandle mr, io.gdrkit.gpu.DeviceBuffer dev, long devOff,
                         boolean direct, NetTransport.MrHandle hostMr) {
        public Buffer(final MemorySegment seg, final NetTransport.MrHandle mr) {
            this(seg, mr, null, 0, false, null);
        }

        public Buffer(final MemorySegment seg, final NetTransport.MrHandle mr, final io.gdrkit.gpu.DeviceBuffer dev) {
            this(seg, mr, dev, 0, false, null);
        }

        /** The address the NIC writes at offset 0: the device half's with GDR, else the host half's. */
        public long nicBase() {
            return direct ? dev.address() + devOff : seg.address();
        }

        /**
         * With receive-side GDR only ({@code hostMr} set: the send gate said no), sends go from the host half, copied
         * from the device right before; {@link #nicBase()} and {@link #mr()} are then the receive side's.
         */
        public boolean sendBounces() {
            return hostMr != null;
        }
    }

    /**
     * Stores into a registration array without an {@code aastore}, whose speculative check C2 gets wrong for arrays
     * of an interface (see {@link Pending}).
     */
    private static final java.lang.invoke.VarHandle MR_SLOT =
        java.lang.invoke.MethodHandles.arrayElementVarHandle(NetTransport.MrHandle[].class);

    /**
     * A slot for one request in flight. The slots are objects and not an array of {@link NetTransport.Request}
     * because C2 types an array of an interface as {@code Object[]} when it speculates on the exact array class at a
     * store: every store site of the exchange loop trapped once and recompiled it (16 compilations of the loop in
     * one sweep on the 2-core machine, 4 with holders). A field store has no such check. Allocated up front, reused.
     */
    static final class Pending {
        NetTransport.Request req;

        static Pending[] row(final int n) {
            final Pending[] r = new Pending[n];
            for (int i = 0; i < n; i++) {
                r[i] = new Pending();
            }
            return r;
        }

        static Pending[][] grid(final int n, final int m) {
            final Pending[][] g = new Pending[n][];
            for (int i = 0; i < n; i++) {
                g[i] = row(m);
            }
            return g;
        }
    }

    /**
     * A communicator over {@code net}; every rank counts as on this host for the automatic reduce threads (one
     * host's ranks share its processors). {@link CollWorld} knows better and says how many are.
     */
    public Communicator(final Bootstrap bootstrap, final NetTransport net, final CollContext context) {
        this(bootstrap, net, context, bootstrap.nranks(), Runtime.getRuntime().availableProcessors());
    }

    /** As above, with {@code localRanks} ranks (this one included) on this host of {@code cpus} processors. */
    Communicator(final Bootstrap bootstrap, final NetTransport net, final CollContext context, final int localRanks,
                 final int cpus) {
        this.bootstrap = bootstrap;
        this.net = net;
        this.ctx = context.concludeOnce();
        this.rank = bootstrap.rank();
        this.n = bootstrap.nranks();
        this.shmDirectBytes = ctx.shmDirectBytes(n);
        this.devs = net.devices();
        this.channels = ctx.channelsFor(devs);
        this.chunk = ctx.chunkBytes();
        this.eager = n > 1 ? ctx.eagerBytes() : 0;
        this.cols = channels + (eager > 0 ? 1 : 0);
        this.eagerRecvReq = Pending.grid(n, EAGER_DEPTH);
        this.eagerSendReq = Pending.grid(n, EAGER_DEPTH);
        this.eagerRecvCount = new long[n];
        this.eagerSendCount = new long[n];
        this.dSend = new boolean[n];
        this.dRecv = new boolean[n];
        this.directSentK = new long[EAGER_DEPTH][n];
        this.timeoutNanos = ctx.timeout().toNanos();
        // the ranks of this host share its processors with this rank's NIC threads (CollWorld#nicProgress)
        this.reduceChoice = ctx.chooseReduceThreads(localRanks, cpus, devs);
        // its threads start with the first split reduction: a communicator that never reduces much has none
        this.hostReducer = new ParallelReducer(reduceChoice.threads(), reduceChoice.minBytes(),
            ParallelReducer.DEFAULT_COLD_ALONE_BYTES, timeoutNanos, "gdrkit-coll-reduce-r" + rank);
        this.spins = ctx.spinRounds();
        this.spinPause = ctx.spinPause().value();
        this.yields = spins + YIELD_ROUNDS;
        this.sOut = new int[channels];
        this.rOut = new int[channels];
        this.sHead = new int[channels];
        this.rHead = new int[channels];
        this.sendSeq = new int[n];
        this.sentTo = new long[n];
        this.receivedFrom = new long[n];
        this.recvSeq = new int[n];
        send = new NetTransport.SendComm[n][cols];
        recv = new NetTransport.RecvComm[n][cols];
        listens = new NetTransport.ListenComm[n][cols];
        // the device count first: channel c's connections join device c mod devices at both ends, and device k of
        // one rank reaches only device k of the others (the software NICs' rail k is a fabric of its own)
        final byte[] mine = new byte[HANDLES_AT + n * cols * NetTransport.HANDLE_MAXSIZE];
        java.nio.ByteBuffer.wrap(mine).putInt(devs);
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < cols; c++) {
                if (p != rank) {
                    final byte[] h = new byte[NetTransport.HANDLE_MAXSIZE];
                    listens[p][c] = net.listen(devOf(c), h);
                    System.arraycopy(h, 0, mine, HANDLES_AT + (p * cols + c) * NetTransport.HANDLE_MAXSIZE,
                        h.length);
                }
            }
        }
        final byte[][] all = bootstrap.allGather(mine);
        for (int p = 0; p < n; p++) {
            // the device count first: a different count also means a different channel count
            final int theirs = all[p].length >= HANDLES_AT ? java.nio.ByteBuffer.wrap(all[p]).getInt() : -1;
            if (theirs != devs) {
                throw new CollException("rank " + p + " has " + theirs + " network devices, rank " + rank + " has "
                    + devs + ": channels are spread over the devices alike on every rank (a different "
                    + CommConfiguration.COLL_NICS.name() + "?)");
            }
            if (all[p].length != mine.length) {
                throw new CollException("rank " + p + " sent " + all[p].length + " bytes of listen handles, expected "
                    + mine.length + " (a different channel count or eager setting?)");
            }
        }
        connectAll(all);
        staging = new MemorySegment[channels];
        stagingMr = new NetTransport.MrHandle[channels];
        stagingAddr = new long[channels];
        stagingNicMr = new NetTransport.MrHandle[channels][1];
        for (int c = 0; c < channels; c++) {
            staging[c] = arena.allocate((long) chunk * ctx.steps(), 4096);
            stagingMr[c] = n > 1 ? net.regMr(anyComm(), staging[c]) : null;
            stagingAddr[c] = staging[c].address();
            stagingNicMr[c][0] = stagingMr[c];
        }
        if (eager > 0) {
            eagerIn = arena.allocate((long) n * EAGER_DEPTH * eager, 4096);
            eagerOut = arena.allocate((long) n * EAGER_DEPTH * eager, 4096);
            eagerInMr = net.regMr(anyComm(), eagerIn);
            eagerInMh = new NetTransport.MrHandle[] {eagerInMr};
            eagerOutMr = net.regMr(anyComm(), eagerOut);
            for (int p = 0; p < n; p++) {
                for (int k = 1; p != rank && k <= EAGER_DEPTH; k++) {
                    postEagerRecv(p, k);
                }
            }
        }
        if (n > 1) {
            // collective, on every rank alike, whatever its own setting: see ShmDirect.open
            final boolean wanted = ctx.shmDirect().value() && shmDirectBytes > 0;
            final ShmDirect.Opened o = ShmDirect.open(bootstrap, wanted, Math.max(8, shmDirectBytes));
            shm = o.direct();
            directPath = shm != null ? "shm, up to " + shmDirectBytes + " B (" + o.why() + ")"
                : "nic, up to " + (eager > 0 ? ctx.directBytes() : 0) + " B (" + o.why() + ")";
        } else {
            shm = null;
            directPath = "none (one rank)";
        }
        binding = bind(ctx.bindTo(), bootstrap.localRank());
        bootstrap.barrier();
    }

    /**
     * Pins the calling thread (the one that opened this communicator and will run its collectives) as
     * {@code gdrkit.coll.bind} says; returns what was done, for {@link #binding()}. A refusal by the OS is not an
     * error: the rank runs where the scheduler puts it, and the description says why.
     */
    static String bind(final io.gdrkit.core.config.Setting<CollContext.Bind> how, final int localRank) {
        final String setting = how.name() + "=" + (how.raw() != null ? how.raw() : how.value().name()
            .toLowerCase(java.util.Locale.ROOT)) + " (" + how.source().name().toLowerCase(
            java.util.Locale.ROOT) + ")";
        if (how.value() == CollContext.Bind.NONE) {
            return "none (" + setting + ")";
        }
        final java.util.Optional<String> why = io.gdrkit.core.cpu.CpuAffinity.unavailable();
        if (why.isPresent()) {
            return "none: " + why.get() + " (" + setting + ")";
        }
        try {
            final int[] allowed = io.gdrkit.core.cpu.CpuAffinity.allowed();
            final int cpu = allowed[localRank % allowed.length];
            io.gdrkit.core.cpu.CpuAffinity.set(cpu);
            return "cpu " + cpu + " (local rank " + localRank + " of CPUs " + io.gdrkit.core.cpu.CpuAffinity
                .describe(allowed) + ", " + setting + ")";
        } catch (final IllegalStateException e) {
            return "none: " + e.getMessage() + " (" + setting + ")";
        }
    }

    /**
     * Where this rank's collectives thread runs ({@code gdrkit.coll.bind}): {@code cpu N (...)} pinned, or
     * {@code none (...)} with the setting or the reason it could not be pinned.
     */
    public String binding() {
        return binding;
    }

    /**
     * Where this communicator's direct rounds go, and why: {@code shm (...)} through shared memory (every rank on this
     * host), or {@code nic (...)} over the eager connections.
     */
    public String directPath() {
        return directPath;
    }

    /** The shared-memory rounds (null: not used), for tests that play a hostile peer's file. */
    ShmDirect shmDirect() {
        return shm;
    }

    /** Receives posted ahead on each eager connection: two keep the next CTS at the sender before it is needed. */
    static final int EAGER_DEPTH = 4;

    /** The tag of eager message {@code k} (1-based) between a pair: the exchange's number, as the chunks carry it. */
    private static int eagerTag(final long k) {
        return (int) (k & 0x7fff) << 16;
    }

    private long eagerSlot(final int peer, final long k) {
        return ((long) peer * EAGER_DEPTH + k % EAGER_DEPTH) * eager;
    }

    /** Posts the receive of eager message {@code k} from {@code peer} into its slot. */
    private void postEagerRecv(final int peer, final long k) {
        addr[0] = eagerIn.address() + eagerSlot(peer, k);
        size[0] = eager;
        tag[0] = eagerTag(k);
        eagerRecvReq[peer][(int) (k % EAGER_DEPTH)].req = net.irecv(recv[peer][channels], 1, addr, size, tag,
            eagerInMh);
    }

    private void connectAll(final byte[][] all) {
        final long deadline = System.nanoTime() + ctx.timeout().toNanos();
        final byte[][][] handles = new byte[n][cols][];
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < cols; c++) {
                if (p != rank) {
                    handles[p][c] = Arrays.copyOfRange(all[p], HANDLES_AT + (rank * cols + c)
                        * NetTransport.HANDLE_MAXSIZE, HANDLES_AT + (rank * cols + c + 1) * NetTransport.HANDLE_MAXSIZE);
                }
            }
        }
        int missing = 2 * (n - 1) * cols;
        while (missing > 0) {
            for (int p = 0; p < n; p++) {
                for (int c = 0; c < cols; c++) {
                    if (p == rank) {
                        continue;
                    }
                    if (send[p][c] == null && (send[p][c] = net.connect(devOf(c), handles[p][c])) != null) {
                        missing--;
                    }
                    if (recv[p][c] == null && (recv[p][c] = net.accept(listens[p][c])) != null) {
                        missing--;
                    }
                }
            }
            if (missing > 0) {
                waitCheck(deadline, "connections to every peer (" + missing + " of " + 2 * (n - 1) * cols
                    + " not up)");
                idle(yields);
            }
        }
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < cols; c++) {
                if (listens[p][c] != null) {
                    net.closeListen(listens[p][c]);
                    listens[p][c] = null;
                }
            }
        }
    }

    /**
     * The device connection column {@code col} uses: channel c on device c mod devices, as NCCL spreads its
     * channels over the NICs; the eager column on device 0.
     */
    private int devOf(final int col) {
        return col < channels ? col % devs : 0;
    }

    /**
     * The chunk an exchange of {@code bytes} (past its eager head) moves in: BUFFSIZE/STEPS, or smaller when that
     * would leave channels idle, so that every channel carries a share, as NCCL divides a message over its channels
     * before it cuts chunks; never below {@value #MIN_SPLIT_CHUNK} bytes, and a multiple of 128 (every type's size
     * divides it; a chunk stays inside its staging slot). Both ends compute it from the exchange's size alone, so
     * they agree when their sizes agree, and a size mismatch stays the named error it was.
     */
    int chunkFor(final long bytes) {
        return chunkFor(bytes, chunk, channels);
    }

    /** {@link #chunkFor(long)} for a chunk of {@code chunk} bytes and {@code channels} channels. */
    static int chunkFor(final long bytes, final int chunk, final int channels) {
        if (channels == 1 || bytes >= (long) chunk * channels) {
            return chunk;
        }
        final long share = (bytes + channels - 1) / channels;
        final long rounded = (share + 127) / 128 * 128;
        return (int) Math.min(chunk, Math.max(MIN_SPLIT_CHUNK, rounded));
    }

    /** The smallest chunk {@link #chunkFor} cuts an exchange into to spread it over the channels. */
    static final int MIN_SPLIT_CHUNK = 16384;

    /** The channels this communicator opened: connections per ordered pair of ranks. */
    public int channels() {
        return channels;
    }

    /** The transport's devices (the software NICs of this rank, or 1). */
    public int devices() {
        return devs;
    }

    private Object anyComm() {
        return send[(rank + 1) % n][0];
    }

    public int rank() {
        return rank;
    }

    public int nranks() {
        return n;
    }

    public NetTransport transport() {
        return net;
    }

    /** Exchanges that sent to {@code peer} so far. */
    public long exchangesSentTo(final int peer) {
        return sentTo[peer];
    }

    /** Exchanges that received from {@code peer} so far. */
    public long exchangesReceivedFrom(final int peer) {
        return receivedFrom[peer];
    }

    public Bootstrap bootstrap() {
        return bootstrap;
    }

    public CollContext context() {
        return ctx;
    }

    /** Registers host memory for every connection of this communicator. */
    public Buffer register(final MemorySegment seg) {
        return register(seg, null);
    }

    /**
     * Registers a buffer whose data lives in {@code dev} on this rank's GPU: with GDR (the gates said so) the device
     * memory itself, through the transport's regMrDmaBuf or regMr(device) by the decided mechanism; otherwise the
     * host half {@code seg} (the bounce buffer). A GDR registration that fails while no GPU buffer is registered
     * turns GDR off for this rank (the connector gate, recorded in {@link #gdr()}); later it is an error.
     */
    public Buffer register(final MemorySegment seg, final io.gdrkit.gpu.DeviceBuffer dev) {
        if (dev != null && gdr != null && gdr.on()) {
            try {
                final NetTransport.MrHandle g = n > 1 ? regGpu(dev) : null;
                NetTransport.MrHandle h = null;
                if (!gdr.sendOn() && n > 1) {
                    try {
                        h = net.regMr(anyComm(), seg); // sends bounce: the NIC reads the host half
                    } catch (final RuntimeException e) {
                        deregGpu(g);
                        throw e;
                    }
                }
                final Buffer b = new Buffer(seg, g, dev, 0, true, h);
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
        return new Buffer(seg, n > 1 ? net.regMr(anyComm(), seg) : null, dev);
    }

    /**
     * Reductions from now on run on {@code gpu} ({@link DeviceReducer}) and the data bounces through host memory;
     * the communicator closes the reducer, not the GPU.
     */
    public void attachGpu(final io.gdrkit.gpu.GpuDevice gpu) {
        attachGpu(gpu, CollGdr.notAsked());
    }

    /**
     * As {@link #attachGpu(io.gdrkit.gpu.GpuDevice)}, with the control plane's decision: when it allows GDR, the
     * channels' staging (where reduced chunks land) moves to device memory registered with the NIC, and buffers
     * registered from now on are registered as GPU memory. A staging registration that fails is the connector gate.
     */
    public void attachGpu(final io.gdrkit.gpu.GpuDevice gpu, final CollGdr decision) {
        if (deviceReducer != null) {
            throw new IllegalStateException("a GPU is attached already");
        }
        deviceReducer = new DeviceReducer(gpu, chunk, ctx.timeout());
        reduceChoice = new ParallelReducer.Choice(1, reduceChoice.minBytes(), "the GPU reduces; host buffers would "
            + "have " + reduceChoice.describe());
        hostReducer.close();
        gdr = decision;
        if (!gdr.on()) {
            return;
        }
        final long bytes = ((long) chunk * ctx.steps() + 4095) / 4096 * 4096; // DMA-BUF exports whole pages
        stagingDev = new io.gdrkit.gpu.DeviceBuffer[channels];
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

    /** This rank's GDR decision (null when no GPU is attached). */
    public CollGdr gdr() {
        return gdr;
    }

    /** Who else is on this rank's GPU, and with MPS or not (null in host memory, or when no world told it). */
    public GpuSharing gpuSharing() {
        return gpuSharing;
    }

    void gpuSharing(final GpuSharing s) {
        gpuSharing = s;
    }

    /** The registration reduced receives of channel {@code c} land in (a GPU MR with GDR, else host staging's). */
    public NetTransport.MrHandle stagingRegistration(final int c) {
        return stagingNicMr[c][0];
    }

    /** Channel {@code c}'s device staging, or null without GDR. */
    public io.gdrkit.gpu.DeviceBuffer stagingDevice(final int c) {
        return stagingDev == null ? null : stagingDev[c];
    }

    /** iflush READs this rank posted and saw complete (GDR with the flush gate on). */
    public long flushes() {
        return flushes;
    }

    /** Registers GPU memory through the seam by the decided mechanism. */
    private NetTransport.MrHandle regGpu(final io.gdrkit.gpu.DeviceBuffer dev) {
        final io.gdrkit.gpu.GpuDevice gpu = dev.device();
        if (gdr.mechanism() == io.gdrkit.gdr.reg.RegMechanism.DMABUF_FD) {
            final io.gdrkit.gpu.DmaBufExport ex = gpu.exportDmaBuf(dev);
            if (!ex.supported()) {
                throw new CollException("DMA-BUF export of GPU " + gpu.ordinal() + " memory: " + ex.evidence());
            }
            try {
                return net.regMrDmaBuf(anyComm(), dev.address(), dev.size(), 0, ex.fd());
            } finally {
                io.gdrkit.core.mem.DmaBuf.close(ex.fd()); // the MR keeps the attachment, as NCCL closes its fd
            }
        }
        final io.gdrkit.gpu.GpuDmaMemory m = new io.gdrkit.gpu.GpuDmaMemory(gpu, dev);
        try {
            final NetTransport.MrHandle h = net.regMr(anyComm(), m);
            mappings.put(h, m);
            return h;
        } catch (final RuntimeException e) {
            m.close();
            throw e;
        }
    }

    private void deregGpu(final NetTransport.MrHandle h) {
        net.deregMr(anyComm(), h);
        final io.gdrkit.gpu.GpuDmaMemory m = mappings.remove(h);
        if (m != null) {
            m.close();
        }
    }

    /** The connector gate failed: back to the host staging, device staging released. */
    private void dropGdr(final String why) {
        gdr = gdr.afterRegistration(why);
        releaseDeviceStaging();
        for (int c = 0; c < channels; c++) {
            stagingAddr[c] = staging[c].address();
            stagingNicMr[c][0] = stagingMr[c];
        }
    }

    private void releaseDeviceStaging() {
        if (stagingDev == null) {
            return;
        }
        for (int c = 0; c < channels; c++) {
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

    /** The GPU reducer, or null when reductions run on the CPU. */
    public DeviceReducer deviceReducer() {
        return deviceReducer;
    }

    public void deregister(final Buffer b) {
        if (b.direct()) {
            liveDirect--;
        }
        if (b.mr() != null) {
            deregGpu(b.mr());
        }
        if (b.hostMr() != null) {
            net.deregMr(anyComm(), b.hostMr());
        }
    }


    private long lastCheck;

    /** Whether a wait is due for {@link #waitCheck}: so callers build its message only when it is used. */
    private boolean checkDue(final long deadline) {
        final long now = System.nanoTime();
        return now - lastCheck > 1_000_000 || now > deadline;
    }

    private void waitCheck(final long deadline, final String what) {
        final long now = System.nanoTime();
        if (now - lastCheck > 1_000_000) {
            lastCheck = now;
            try {
                bootstrap.check();
            } catch (final BootstrapException e) {
                throw new CollException("rank " + rank + " stopped waiting for " + what + ": " + e.getMessage(), e);
            }
        }
        if (now > deadline) {
            throw new CollException("rank " + rank + " waited " + ctx.timeout().toMillis() + " ms for " + what);
        }
    }

    /**
     * Sends {@code sendBytes} at {@code src + srcOff} to {@code to} while receiving {@code recvBytes} from
     * {@code from} into {@code dst + dstOff}; with {@code op} non-null the received data is reduced into dst
     * ({@code dst = op(dst, received)}) chunk by chunk through the staging buffer. {@code to} or {@code from} may be
     * -1 (no send, no receive). The eager head (see the class comment) goes first; the rest moves in chunks, and
     * the exchange returns once every chunk was received and every chunk sent from {@code src} completed (an
     * eager head was copied out, so src is free). Allocates nothing once its request arrays have grown to the
     * largest exchange.
     */
    public void exchange(final int to, final Buffer src, final long srcOff, final long sendBytes, final int from,
                         final Buffer dst, final long dstOff, final long recvBytes, final RedOp op,
                         final DataType type) {
        exchange(to, src, srcOff, sendBytes, from, dst, dstOff, recvBytes, op, type, dst, dstOff);
    }

    /**
     * As above, with the reduction reading its local operand from {@code acc + accOff} instead of dst
     * ({@code dst = op(acc, received)}): an out-of-place allreduce reduces its input into its output this way and
     * needs no copy of the input first. Host memory only: with a GPU attached, acc must be dst.
     */
    public void exchange(final int to, final Buffer src, final long srcOff, final long sendBytes, final int from,
                         final Buffer dst, final long dstOff, final long recvBytes, final RedOp op,
                         final DataType type, final Buffer acc, final long accOff) {
        usable();
        try {
            exchangeOnce(to, src, srcOff, sendBytes, from, dst, dstOff, recvBytes, op, type, acc, accOff);
        } catch (final RuntimeException e) {
            failed(e);
            throw e;
        }
    }

    /**
     * The first error of an exchange or direct round, which leaves requests, eager slots and counters mid-way: every
     * later call is refused with it by name rather than run on that state (a peer's half-done exchange, a receive
     * slot not posted again) and fail later with a misleading error or wrong data.
     */
    private RuntimeException failedWith;

    private void usable() {
        if (failedWith != null) {
            throw new CollException("rank " + rank + ": this communicator failed earlier (" + failedWith.getMessage()
                + "); open a new one", failedWith);
        }
    }

    private void failed(final RuntimeException e) {
        if (failedWith == null && !(e instanceof IllegalArgumentException)) { // a refused argument changed nothing
            failedWith = e;
        }
    }

    private void exchangeOnce(final int to, final Buffer src, final long srcOff, final long sendBytes, final int from,
                              final Buffer dst, final long dstOff, final long recvBytes, final RedOp op,
                              final DataType type, final Buffer acc, final long accOff) {
        if (op != null && deviceReducer != null && (acc != dst || accOff != dstOff)) {
            throw new IllegalArgumentException("a GPU reduction reduces into its destination only");
        }
        final int sSeq = to < 0 ? 0 : (sendSeq[to] = (sendSeq[to] + 1) & 0x7fff);
        final int rSeq = from < 0 ? 0 : (recvSeq[from] = (recvSeq[from] + 1) & 0x7fff);
        if (to >= 0) {
            sentTo[to]++;
        }
        if (from >= 0) {
            receivedFrom[from]++;
        }
        final long deadline = System.nanoTime() + timeoutNanos;
        // the eager heads: every exchange with a peer carries one, possibly empty, so both ends count alike
        // with a GPU attached the heads are empty (the bytes live on the device or go GDR): everything goes in chunks
        final int eagerCap = deviceReducer == null ? eager : 0;
        final int sE = eager > 0 && to >= 0 ? (int) Math.min(eagerCap, sendBytes) : 0;
        final int rE = eager > 0 && from >= 0 ? (int) Math.min(eagerCap, recvBytes) : 0;
        boolean eSend = eager > 0 && to >= 0;
        boolean eRecv = eager > 0 && from >= 0;
        final long sK = eSend ? ++eagerSendCount[to] : 0;
        final long rK = eRecv ? ++eagerRecvCount[from] : 0;
        final int sSlot = (int) (sK % EAGER_DEPTH);
        final int rSlot = (int) (rK % EAGER_DEPTH);
        try {
            if (eSend) {
                if (eagerSendReq[to][sSlot].req != null) {
                    reapEagerSend(to, sSlot, deadline);
                }
                if (sE > 0) {
                    MemorySegment.copy(src.seg(), srcOff, eagerOut, eagerSlot(to, sK), sE);
                }
            }
        } catch (final NetTransportException e) {
            throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes) + ": "
                + e.getMessage(), e);
        }
        final int steps = ctx.steps();
        final int sCk = chunkFor(sendBytes - sE);
        final int rCk = chunkFor(recvBytes - rE);
        final int nS = to < 0 ? 0 : (int) ((sendBytes - sE + sCk - 1) / sCk);
        final int nR = from < 0 ? 0 : (int) ((recvBytes - rE + rCk - 1) / rCk);
        if (sReq.length < nS) {
            sReq = Pending.row(nS);
        }
        if (rReq.length < nR) {
            rReq = Pending.row(nR);
        }
        final Pending[] sReq = this.sReq;
        final Pending[] rReq = this.rReq;
        final int[] sOut = this.sOut;
        final int[] rOut = this.rOut;
        final int[] rHead = this.rHead;
        final int[] sHead = this.sHead;
        for (int c = 0; c < channels; c++) {
            rHead[c] = c;
            sHead[c] = c;
            sOut[c] = 0;
            rOut[c] = 0;
        }
        int nextS = 0;
        int nextR = 0;
        int doneS = 0;
        int doneR = 0;
        final long[] addr = this.addr;
        final int[] size = this.size;
        final int[] tag = this.tag;
        final int[] got = this.got;
        // receive-side GDR only: what is sent comes up from the device first (the send gate said no)
        final boolean sendBounce = to >= 0 && src.sendBounces();
        if (sendBounce && sendBytes > 0) {
            deviceReducer.bounceSend(src, srcOff, sendBytes);
        }
        final long sBase = sendBounce ? src.seg().address() : src.nicBase();
        final NetTransport.MrHandle sMr = sendBounce ? src.hostMr() : src.mr();
        int idle = 0;
        try {
            while (eSend || eRecv || doneS < nS || doneR < nR) {
                boolean progress = false;
                if (eSend) {
                    // first: the peer waits for it, and its receive is normally posted already
                    final NetTransport.Request r = net.isend(send[to][channels], eagerOut.address()
                        + eagerSlot(to, sK), sE, eagerTag(sK), eagerOutMr);
                    if (r != null) {
                        eagerSendReq[to][sSlot].req = r;
                        eSend = false;
                        progress = true;
                    }
                }
                while (nextR < nR && rOut[nextR % channels] < steps) {
                    final int c = nextR % channels;
                    final int j = nextR / channels;
                    final long off = rE + (long) nextR * rCk;
                    final int len = (int) Math.min(rCk, recvBytes - off);
                    final NetTransport.MrHandle[] mh;
                    if (op != null) {
                        addr[0] = stagingAddr[c] + (long) (j % steps) * chunk;
                        mh = stagingNicMr[c];
                    } else {
                        addr[0] = dst.nicBase() + dstOff + off;
                        mh = dstMh;
                        if (mh[0] != dst.mr()) {
                            MR_SLOT.set(mh, 0, dst.mr()); // once per buffer; no aastore (see Pending)
                        }
                    }
                    size[0] = len;
                    tag[0] = (rSeq << 16) | (j & 0xffff);
                    rReq[nextR].req = net.irecv(recv[from][c], 1, addr, size, tag, mh);
                    rOut[c]++;
                    nextR++;
                    progress = true;
                }
                while (nextS < nS && sOut[nextS % channels] < steps) {
                    final int c = nextS % channels;
                    final int j = nextS / channels;
                    final long off = sE + (long) nextS * sCk;
                    final int len = (int) Math.min(sCk, sendBytes - off);
                    final NetTransport.Request r = net.isend(send[to][c], sBase + srcOff + off, len,
                        (sSeq << 16) | (j & 0xffff), sMr);
                    if (r == null) {
                        break; // the receiver has not posted it yet
                    }
                    sReq[nextS].req = r;
                    sOut[c]++;
                    nextS++;
                    progress = true;
                }
                if (eRecv && net.test(eagerRecvReq[from][rSlot].req, got)) {
                    eagerRecvReq[from][rSlot].req = null;
                    if (got[0] != rE) {
                        throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes)
                            + ": the eager head brought " + got[0] + " bytes, expected " + rE
                            + " (mismatched sizes or operations across ranks?)");
                    }
                    if (rE > 0) {
                        final long at = eagerSlot(from, rK);
                        if (op == null) {
                            MemorySegment.copy(eagerIn, at, dst.seg(), dstOff, rE);
                        } else {
                            reduce(dst, dstOff, acc, accOff, eagerIn, at, rE, type, op);
                        }
                    }
                    postEagerRecv(from, rK + EAGER_DEPTH); // the slot is free again
                    eRecv = false;
                    progress = true;
                }
                for (int c = 0; c < channels; c++) {
                    // oldest first per channel: staging slots are reused in order
                    final int i = rHead[c];
                    if (i < nextR && rReq[i].req != null && net.test(rReq[i].req, got)) {
                        final long off = rE + (long) i * rCk;
                        final int len = (int) Math.min(rCk, recvBytes - off);
                        if (got[0] != len) {
                            throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes)
                                + ": chunk " + i + " brought " + got[0] + " bytes, expected " + len
                                + " (mismatched sizes across ranks?)");
                        }
                        final long at = (long) (i / channels % steps) * chunk;
                        if (dst.direct() && gdr.flush()) {
                            flush(recv[from][c], op != null ? stagingAddr[c] + at : dst.nicBase() + dstOff + off,
                                len, op != null ? stagingNicMr[c][0] : dst.mr(), deadline);
                        }
                        if (op != null) {
                            if (dst.direct()) {
                                deviceReducer.reduceOnDevice(dst.dev(), dst.devOff() + dstOff + off, stagingDev[c],
                                    at, len / type.size(), type, op);
                            } else {
                                reduce(dst, dstOff + off, acc, accOff + off, staging[c], at, len, type, op);
                            }
                        }
                        rReq[i].req = null;
                        rOut[c]--;
                        rHead[c] += channels;
                        doneR++;
                        progress = true;
                    }
                    final int k = sHead[c];
                    if (k < nextS && sReq[k].req != null && net.test(sReq[k].req, null)) {
                        sReq[k].req = null;
                        sOut[c]--;
                        sHead[c] += channels;
                        doneS++;
                        progress = true;
                    }
                }
                if (!progress) {
                    if (++idle > spins) {
                        waitCheck(deadline, to, sendBytes, from, recvBytes);
                    }
                    idle(idle);
                } else {
                    idle = 0;
                }
            }
        } catch (final NetTransportException e) {
            throw new CollException("rank " + rank + " " + what(to, sendBytes, from, recvBytes) + ": "
                + e.getMessage(), e);
        }
    }

    private String nicMtu = "unknown";

    /** The software NIC's MTU on this rank's connections and where it came from ({@code nic_mtu}). */
    public String nicMtu() {
        return nicMtu;
    }

    void nicMtu(final String description) {
        nicMtu = java.util.Objects.requireNonNull(description);
    }

    private String nicProgress = "unknown";

    /** How this rank's software NIC is driven, and why (CollWorld's choice; "unknown" when nobody said). */
    public String nicProgress() {
        return nicProgress;
    }

    void nicProgress(final String description) {
        nicProgress = java.util.Objects.requireNonNull(description);
    }

    /** How many threads split this rank's large host reductions, from which size, and why ({@code reduce_threads}). */
    public ParallelReducer.Choice reduceThreads() {
        return reduceChoice;
    }

    /** This rank's host reducer (tests check its threads end with the communicator). */
    ParallelReducer hostReducer() {
        return hostReducer;
    }

    /** A direct round's peer argument: every other rank. */
    static final int ALL = -2;
    /** A direct round's peer argument: no rank. */
    static final int NONE = -1;

    /**
     * The largest collective in bytes that runs as a direct round here: the context's, through shared memory
     * ({@link CollContext#shmDirectBytes(int)}) or over the NIC ({@link CollContext#directBytes()}); 0 with a GPU
     * attached (GPU buffers keep the exchange path: the eager heads carry no GPU data).
     */
    public int directBytes() {
        if (deviceReducer != null) {
            return 0;
        }
        return shm != null ? shmDirectBytes : eager > 0 ? ctx.directBytes() : 0;
    }

    /**
     * One direct round, the small collectives' single step: sends {@code bytes} of {@code src} from {@code srcOff},
     * behind an 8-byte header ({@code what}: the operation, type and reduction, which every receiver checks), as one
     * eager message to {@code sendTo} (a rank, {@link #ALL} or {@link #NONE}), and waits for one such message of
     * {@code recvBytes} from {@code recvFrom} (likewise). The message is copied once, whatever the number of peers,
     * and the sends read that one copy in parallel, each into a receive the peer posted ahead, so the round costs one
     * one-way trip. On return rank p's data lies in {@link #directSeg(int)} at {@link #directAt(int)};
     * the caller reads it and then calls {@link #directDone(int)}, which posts the next receives into those slots.
     * Counts as one exchange with each peer involved (tags, sequence numbers and footprint stay in step with
     * {@link #exchange}).
     */
    void directRound(final Buffer src, final long srcOff, final int bytes, final int recvBytes, final long what,
                     final int sendTo, final int recvFrom) {
        usable();
        try {
            directRoundOnce(src, srcOff, bytes, recvBytes, what, sendTo, recvFrom);
        } catch (final NetTransportException e) {
            // also from reaping an earlier send before the round's loop
            final CollException c = new CollException("rank " + rank + " direct round of " + bytes + " B: "
                + e.getMessage(), e);
            failed(c);
            throw c;
        } catch (final RuntimeException e) {
            failed(e);
            throw e;
        }
    }

    /**
     * The direct round through shared memory ({@link ShmDirect}): this rank's input is written once into its own
     * slot (when it has any: a reduce's root reads its own from there too), and every input this rank needs is read
     * where its writer put it. Counts as the eager path's round does.
     */
    private void shmRoundOnce(final Buffer src, final long srcOff, final int bytes, final int recvBytes,
                              final long what, final int sendTo, final int recvFrom) {
        if (bytes < 0 || recvBytes < 0 || Math.max(bytes, recvBytes) > shm.slotBytes()) {
            throw new IllegalArgumentException("a direct round of " + bytes + "/" + recvBytes + " bytes with shared "
                + "slots of " + shm.slotBytes());
        }
        // the deadline is read from the clock only once a wait outlasts its spins: a round that finds its inputs
        // there costs no clock read (this path is a few hundred nanoseconds)
        long deadline = 0;
        final long d = ++directRounds;
        if (bytes > 0) {
            int idle = 0;
            while (!shm.slotFree(d)) {
                if (++idle > spins) {
                    deadline = deadline == 0 ? System.nanoTime() + timeoutNanos : deadline;
                    if (checkDue(deadline)) {
                        waitCheck(deadline, "every rank to finish reading direct round " + (d - ShmDirect.DEPTH)
                            + " (shared memory) before its slot is written again");
                    }
                }
                idle(idle);
            }
            shm.publish(d, what, src.seg(), srcOff, bytes);
        }
        for (int s = 1; s < n; s++) {
            final int p = (rank + s) % n;
            if (sendTo == ALL || sendTo == p) {
                sendSeq[p] = (sendSeq[p] + 1) & 0x7fff;
                sentTo[p]++;
            }
            if (recvFrom == ALL || recvFrom == p) {
                recvSeq[p] = (recvSeq[p] + 1) & 0x7fff;
                receivedFrom[p]++;
                int idle = 0;
                while (!shm.arrived(p, d, what, recvBytes)) {
                    if (++idle > spins) {
                        deadline = deadline == 0 ? System.nanoTime() + timeoutNanos : deadline;
                        if (checkDue(deadline)) {
                            waitCheck(deadline, "rank " + p + "'s input of direct round " + d + " (" + recvBytes
                                + " B, shared memory)");
                        }
                    }
                    idle(idle);
                }
            }
        }
        if (recvFrom == NONE) {
            shm.done(d);
        }
    }

    private void directRoundOnce(final Buffer src, final long srcOff, final int bytes, final int recvBytes,
                                 final long what, final int sendTo, final int recvFrom) {
        if (shm != null) {
            shmRoundOnce(src, srcOff, bytes, recvBytes, what, sendTo, recvFrom);
            return;
        }
        final int len = bytes + CollContext.DIRECT_HEADER;
        final int rLen = recvBytes + CollContext.DIRECT_HEADER;
        if (eager == 0 || Math.max(len, rLen) > eager || bytes < 0 || recvBytes < 0) {
            throw new IllegalArgumentException("a direct round of " + bytes + "/" + recvBytes + " bytes with eager "
                + "slots of " + eager + " (the 8-byte header included)");
        }
        final long deadline = System.nanoTime() + timeoutNanos;
        // the message is the same for every peer, so it is written once, into this rank's own (otherwise unused)
        // send slots, and every send reads it there (the eager buffer's one registration already served the sends
        // to every peer: IbTransport's are global, SocketTransport's tied to no comm); the
        // reduction in rank order then reads this rank's input from a slot too, never from a buffer it is writing
        // (in-place). The slot is written again EAGER_DEPTH rounds later, once the sends that read it completed.
        final long d = ++directRounds;
        final long[] sentK = directSentK[(int) (d % EAGER_DEPTH)];
        for (int p = 0; p < n; p++) {
            final long k = sentK[p];
            if (k != 0 && eagerSendCount[p] - k < EAGER_DEPTH
                && eagerSendReq[p][(int) (k % EAGER_DEPTH)].req != null) {
                reapEagerSend(p, (int) (k % EAGER_DEPTH), deadline); // else reaped when its request slot was reused
            }
            sentK[p] = 0;
        }
        final long own = eagerSlot(rank, d);
        eagerOut.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, own, what);
        MemorySegment.copy(src.seg(), srcOff, eagerOut, own + CollContext.DIRECT_HEADER, bytes);
        int pending = 0;
        for (int s = 1; s < n; s++) {
            final int p = (rank + s) % n; // each rank starts with its next neighbour: the sends spread
            if (sendTo == ALL || sendTo == p) {
                sendSeq[p] = (sendSeq[p] + 1) & 0x7fff;
                sentTo[p]++;
                final long k = ++eagerSendCount[p];
                final int slot = (int) (k % EAGER_DEPTH);
                if (eagerSendReq[p][slot].req != null) {
                    reapEagerSend(p, slot, deadline);
                }
                sentK[p] = k;
                dSend[p] = true;
                pending++;
            }
            if (recvFrom == ALL || recvFrom == p) {
                recvSeq[p] = (recvSeq[p] + 1) & 0x7fff;
                receivedFrom[p]++;
                ++eagerRecvCount[p];
                dRecv[p] = true;
                pending++;
            }
        }
        int idle = 0;
        while (pending > 0) {
            boolean progress = false;
            for (int s = 1; s < n; s++) {
                final int p = (rank + s) % n;
                if (dSend[p]) {
                    final long k = eagerSendCount[p];
                    final NetTransport.Request r = net.isend(send[p][channels], eagerOut.address() + own,
                        len, eagerTag(k), eagerOutMr);
                    if (r != null) {
                        eagerSendReq[p][(int) (k % EAGER_DEPTH)].req = r;
                        dSend[p] = false;
                        pending--;
                        progress = true;
                    }
                }
                if (dRecv[p]) {
                    final long k = eagerRecvCount[p];
                    final int slot = (int) (k % EAGER_DEPTH);
                    if (net.test(eagerRecvReq[p][slot].req, got)) {
                        eagerRecvReq[p][slot].req = null;
                        dRecv[p] = false;
                        pending--;
                        progress = true;
                        final long head = got[0] >= CollContext.DIRECT_HEADER ? eagerIn.get(
                            java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, eagerSlot(p, k)) : 0;
                        if (got[0] != rLen || head != what) {
                            throw new CollException("rank " + rank + " direct round of " + recvBytes + " B: rank "
                                + p + " sent " + got[0] + " bytes with header 0x" + Long.toHexString(head)
                                + ", expected " + rLen + " with 0x" + Long.toHexString(what) + " (mismatched "
                                + "operations, types, sizes or " + CommConfiguration.COLL_DIRECT_BYTES.name()
                                + " across ranks?)");
                        }
                    }
                }
            }
            if (!progress) {
                if (++idle > spins && checkDue(deadline)) {
                    waitCheck(deadline, "a direct round of " + bytes + " B (" + pending
                        + " sends and receives open)");
                }
                idle(idle);
            } else {
                idle = 0;
            }
        }
    }

    /**
     * Where rank {@code p}'s data of the last direct round lies: the segment (this rank's own input: the one copy in
     * its own send slot that every peer was sent from; another's: its receive slot), at {@link #directAt(int)}.
     */
    MemorySegment directSeg(final int p) {
        if (shm != null) {
            return shm.seg(p);
        }
        return p == rank ? eagerOut : eagerIn;
    }

    /** The offset of rank {@code p}'s data of the last direct round in {@link #directSeg(int)}. */
    long directAt(final int p) {
        if (shm != null) {
            return shm.dataAt(directRounds);
        }
        return (p == rank ? eagerSlot(rank, directRounds) : eagerSlot(p, eagerRecvCount[p]))
            + CollContext.DIRECT_HEADER;
    }

    /** After a direct round's data was read: posts the next receives into the slots it used. */
    void directDone(final int recvFrom) {
        if (shm != null) {
            shm.done(directRounds);
            return;
        }
        for (int p = 0; p < n; p++) {
            if (p != rank && (recvFrom == ALL || recvFrom == p)) {
                postEagerRecv(p, eagerRecvCount[p] + EAGER_DEPTH);
            }
        }
    }

    /**
     * NCCL's iflush on the GDR path: the 1-byte RDMA READ on the loopback flush QP (posted by the transport only when
     * the flush gate said so), waited for before the GPU reads the chunk the NIC wrote.
     */
    private void flush(final NetTransport.RecvComm rc, final long at, final int len, final NetTransport.MrHandle m,
                       final long deadline) {
        if (len == 0) {
            return;
        }
        fAddr[0] = at;
        fSize[0] = len;
        if (fMh[0] != m) {
            MR_SLOT.set(fMh, 0, m); // no aastore (see Pending)
        }
        final NetTransport.Request f = net.iflush(rc, 1, fAddr, fSize, fMh);
        if (f == null) {
            return;
        }
        int idle = 0;
        while (!net.test(f, null)) {
            if (++idle > spins && checkDue(deadline)) {
                waitCheck(deadline, "the flush READ of " + len + " received bytes at 0x" + Long.toHexString(at));
            }
            idle(idle);
        }
        flushes++;
    }

    /**
     * {@code dst[dstOff..] = op(acc[accOff..], from[at..])} over {@code len} bytes, on the GPU when one is attached
     * (then acc is dst: checked on entry to the exchange).
     */
    private void reduce(final Buffer dst, final long dstOff, final Buffer acc, final long accOff,
                        final MemorySegment from, final long at, final int len, final DataType type, final RedOp op) {
        if (deviceReducer != null) {
            if (dst.dev() == null) {
                throw new IllegalStateException("a reduction into a buffer without a device half while a GPU is "
                    + "attached");
            }
            deviceReducer.reduce(dst, dstOff, from, at, len / type.size(), type, op);
        } else {
            hostReducer.reduce(dst.seg(), dstOff, acc.seg(), accOff, from, at, len / type.size(), type, op);
        }
    }

    /**
     * Waits for the eager send in {@code peer}'s slot to complete before the slot is written again (normally long
     * complete: 4 messages ago). Builds no message unless it waits long enough to check.
     */
    private void reapEagerSend(final int peer, final int slot, final long deadline) {
        int idle = 0;
        while (!net.test(eagerSendReq[peer][slot].req, null)) {
            if (++idle > spins && checkDue(deadline)) {
                waitCheck(deadline, "the eager send to rank " + peer + " of an earlier exchange, before reusing "
                    + "its slot");
            }
            idle(idle);
        }
        eagerSendReq[peer][slot].req = null;
    }

    /** At close: lets the eager sends still in flight complete (bounded), so the peers' receives are not cut. */
    private void drainEagerSends() {
        final long deadline = System.nanoTime() + Math.min(timeoutNanos, 1_000_000_000L);
        for (int p = 0; p < n; p++) {
            for (int s = 0; s < EAGER_DEPTH; s++) {
                try {
                    while (eagerSendReq[p][s].req != null && !net.test(eagerSendReq[p][s].req, null)) {
                        if (System.nanoTime() > deadline) {
                            return;
                        }
                        Thread.onSpinWait();
                    }
                } catch (final NetTransportException e) {
                    // closing: a peer that is gone already makes no difference now
                }
                eagerSendReq[p][s].req = null;
            }
        }
    }

    private static String what(final int to, final long sendBytes, final int from, final long recvBytes) {
        return "exchange (send " + sendBytes + " B to rank " + to + ", receive " + recvBytes + " B from rank "
            + from + ")";
    }

    private void waitCheck(final long deadline, final int to, final long sendBytes, final int from,
                           final long recvBytes) {
        if (checkDue(deadline)) {
            waitCheck(deadline, what(to, sendBytes, from, recvBytes));
        }
    }

    /**
     * Idle rounds (polls that moved nothing) spent spinning before yielding ({@code gdrkit.coll.spin.rounds}): the
     * rank's own polling is what moves its NIC, and the peer is often one hop away; then {@value #YIELD_ROUNDS}
     * rounds of yielding, then parking.
     */
    private final int spins;
    /** gdrkit.coll.spin.pause: whether an idle poll runs Thread.onSpinWait (PAUSE on x86). */
    private final boolean spinPause;
    private final int yields;
    private static final int YIELD_ROUNDS = 100;

    /**
     * Backs off while nothing moves: spin, then yield, then park briefly. A busy-spinning rank on a shared or
     * oversubscribed host would take the CPU its peer needs to make the progress it waits for; the NIC's backstop
     * thread keeps it answering while parked.
     */
    private void idle(final int idleRounds) {
        if (idleRounds < spins) {
            if (spinPause) {
                Thread.onSpinWait();
            }
        } else if (idleRounds < yields) {
            Thread.yield();
        } else {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000);
        }
    }

    /**
     * Copies {@code bytes} within this rank (the part of a collective that stays local): in GPU memory between GDR
     * buffers (where the data is), else between host halves.
     */
    public static void copy(final Buffer src, final long srcOff, final Buffer dst, final long dstOff,
                            final long bytes) {
        if (src.direct() != dst.direct()) {
            throw new IllegalStateException("a local copy between a GDR buffer and a host-bounce buffer");
        }
        if (src.direct()) {
            if (bytes > 0 && src.nicBase() + srcOff != dst.nicBase() + dstOff) {
                src.dev().device().copyDtoD(dst.dev(), dst.devOff() + dstOff, src.dev(), src.devOff() + srcOff, bytes);
            }
            return;
        }
        if (bytes > 0 && (src.seg() != dst.seg() || srcOff != dstOff)) {
            MemorySegment.copy(src.seg(), srcOff, dst.seg(), dstOff, bytes);
        }
    }

    @Override
    public void close() {
        hostReducer.close();
        releaseDeviceStaging();
        if (deviceReducer != null) {
            deviceReducer.close();
        }
        drainEagerSends();
        for (final NetTransport.MrHandle m : stagingMr) {
            if (m != null) {
                net.deregMr(anyComm(), m);
            }
        }
        for (final NetTransport.MrHandle m : new NetTransport.MrHandle[] {eagerInMr, eagerOutMr}) {
            if (m != null) {
                net.deregMr(anyComm(), m);
            }
        }
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < cols; c++) {
                if (send[p][c] != null) {
                    net.closeSend(send[p][c]);
                }
                if (recv[p][c] != null) {
                    net.closeRecv(recv[p][c]);
                }
                if (listens[p][c] != null) {
                    net.closeListen(listens[p][c]);
                }
            }
        }
        if (shm != null) {
            shm.close();
        }
        arena.close();
    }
}
