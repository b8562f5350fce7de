/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.transport.NetTransport;
import io.gdrkit.comm.transport.NetTransportException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

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
    /** The transport's device count; see {@link Connections#devOf}. */
    private final int devs;
    /** Connections per ordered pair: the channels, plus the eager connection (column {@code channels}) if on. */
    private final int cols;
    /** Bytes of an exchange's head that go eagerly; 0: off. */
    private final int eager;
    /** The eager connections' slots and requests. */
    private final EagerPath eg;
    /** The small collectives' direct rounds. */
    private final DirectRounds direct;
    /** Direct rounds through shared memory when every rank is on this host (null: over the eager connections). */
    private final ShmDirect shm;
    /** Where direct rounds go and why ({@link #directPath()}). */
    private final String directPath;
    /** Every collective through shared memory when every rank is on this host (null: not open). */
    private final ShmCollectives shmColl;
    /** The shared memory this communicator opened: the world's, or each host's for the hierarchical path. */
    private final ShmPaths paths;
    /** The tuning table: algorithm, protocol and path per operation and size. */
    private final CollTuning tuning;
    /** How the ranks' waits spin, and why ({@link #spinning()}). */
    private final String spinning;
    private final String binding;
    private final NetTransport.SendComm[][] send;
    private final NetTransport.RecvComm[][] recv;
    /** The connections to every peer ({@link #send} and {@link #recv} are its arrays, read on every poll). */
    private final Connections conns;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment[] staging;
    private final NetTransport.MrHandle[] stagingMr;
    private final int chunk;
    private final long timeoutNanos;
    private DeviceReducer deviceReducer;
    /** Host reductions, split over threads when large ({@code gdrkit.coll.reduce.threads}); unused with a GPU. */
    private final ParallelReducer hostReducer;
    private ParallelReducer.Choice reduceChoice;
    /** Who shares this rank's GPU ({@link CollWorld} works it out over the bootstrap). */
    private GpuSharing gpuSharing;
    /** Per channel, where reduced receives land: the host staging, or with GDR device staging registered as GPU MRs. */
    private final long[] stagingAddr;
    /** Per channel, a one-element array: what irecv takes, made once (see {@link Pending} on array stores). */
    private final NetTransport.MrHandle[][] stagingNicMr;
    /** GPU registrations, device staging and the GDR decision ({@link #attachGpu}). */
    private final GpuAttachment gpu;
    /** The exchange's pipeline: chunks over the channels, the eager head, reductions and flushes. */
    private final ExchangePipeline pipe;
    /** Exchanges with each peer since the communicator was made (the algorithm's footprint, for tests and reports). */
    private final long[] sentTo;
    private final long[] receivedFrom;
    /** Exchanges sent to / received from each peer so far: the tag's upper half, equal on both ends of a pair. */
    private final int[] sendSeq;
    private final int[] recvSeq;
    /** Backing off, checking the other ranks and giving up at the deadline, for every wait. */
    private final Pacer pace;


    /**
     * A communicator over {@code net}; every rank counts as on this host for the automatic reduce threads (one
     * host's ranks share its processors). {@link CollWorld} knows better and says how many are.
     *
     * @param bootstrap the run's bootstrap, joined by every rank
     * @param net the transport behind the NET seam
     * @param context the collectives' tuning, concluded here
     */
    public Communicator(final Bootstrap bootstrap, final NetTransport net, final CollContext context) {
        this(bootstrap, net, context, bootstrap.nranks(), Runtime.getRuntime().availableProcessors());
    }

    /** As above, with {@code localRanks} ranks (this one included) on this host of {@code cpus} processors. */
    Communicator(final Bootstrap bootstrap, final NetTransport net, final CollContext context, final int localRanks,
                 final int cpus) {
        this(bootstrap, net, context, localRanks, cpus, null, io.gdrkit.softnic.fabric.ShmFabric.defaultBase());
    }

    /**
     * As above, knowing which ranks share a host ({@code hosts}; null: not known): ranks on several hosts open
     * shared memory within each host for the hierarchical path ({@link ShmPaths}), its files under {@code shmBase}.
     */
    Communicator(final Bootstrap bootstrap, final NetTransport net, final CollContext context, final int localRanks,
                 final int cpus, final HostRanks hosts, final java.nio.file.Path shmBase) {
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
        this.timeoutNanos = ctx.timeout().toNanos();
        // the ranks of this host share its processors with this rank's NIC threads (CollWorld#nicProgress)
        this.reduceChoice = ctx.chooseReduceThreads(localRanks, cpus, devs);
        // its threads start with the first split reduction: a communicator that never reduces much has none
        this.hostReducer = new ParallelReducer(reduceChoice.threads(), reduceChoice.minBytes(),
            ParallelReducer.DEFAULT_COLD_ALONE_BYTES, timeoutNanos, "gdrkit-coll-reduce-r" + rank);
        // the spinning threads of every rank of this host (each rank's own, and its reduce threads that spin between
        // parts) count against its processors: over them, a spinning waiter takes the CPU its peer needs to make the
        // progress it waits for, so the default spin is cut to a few polls before yielding
        final int spinners = localRanks * Math.max(1, reduceChoice.threads());
        final boolean spinDefault = ctx.recorded().stream().anyMatch(x -> x.name().equals(
            io.gdrkit.comm.config.CommConfiguration.COLL_SPIN_ROUNDS.name()) && x.source()
            == io.gdrkit.core.config.Source.DEFAULT);
        final boolean oversubscribed = spinners > cpus;
        final int spins = spinDefault && oversubscribed ? OVERSUBSCRIBED_SPINS : ctx.spinRounds();
        final int yields = oversubscribed ? Pacer.OVERSUBSCRIBED_YIELD_ROUNDS : Pacer.YIELD_ROUNDS;
        final String threads = spinners + " spinning threads on " + cpus + " processors";
        final String why = spinDefault ? threads + (oversubscribed ? ": oversubscribed, cut from " + ctx.spinRounds()
            : "") : io.gdrkit.comm.config.CommConfiguration.COLL_SPIN_ROUNDS.name() + " set"
            + (oversubscribed ? "; " + threads + ": oversubscribed" : "");
        this.spinning = spins + " polls, then " + yields + " yields, then park (" + why + ")";
        this.pace = new Pacer(bootstrap, rank, ctx.timeout(), spins, ctx.spinPause().value(), yields);
        this.sendSeq = new int[n];
        this.sentTo = new long[n];
        this.receivedFrom = new long[n];
        this.recvSeq = new int[n];
        conns = Connections.open(bootstrap, net, cols, channels, pace, ctx.timeout());
        send = conns.send;
        recv = conns.recv;
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
        gpu = new GpuAttachment(net, n > 1 ? anyComm() : null, rank, n, chunk, ctx.steps(), staging, stagingMr,
            stagingAddr, stagingNicMr);
        eg = new EagerPath(net, n > 1 ? anyComm() : null, recv, channels, rank, n, eager, arena, pace, timeoutNanos);
        // collective, on every rank alike, whatever its own setting: see ShmDirect.open
        paths = ShmPaths.open(bootstrap, ctx, hosts == null ? null : hosts.hostOf(), shmBase, shmDirectBytes,
            eager > 0 ? ctx.directBytes() : 0, pace, timeoutNanos, hostReducer, reduceChoice.threads());
        shm = paths.shm();
        shmColl = paths.shmColl();
        directPath = paths.directPath();
        tuning = paths.tuning();
        direct = new DirectRounds(rank, n, channels, net, send, eg, shm, pace, timeoutNanos, sendSeq, recvSeq,
            sentTo, receivedFrom);
        pipe = new ExchangePipeline(rank, net, send, recv, channels, chunk, ctx.steps(), eg, staging, stagingAddr,
            stagingNicMr, gpu, hostReducer, pace, timeoutNanos, sendSeq, recvSeq, sentTo, receivedFrom);
        binding = ThreadBinding.bind(ctx.bindTo(), bootstrap.localRank(), localRanks,
            ThreadBinding.launcherVariable(System.getenv()));
        bootstrap.barrier();
    }

    /** {@link ThreadBinding#bind}: kept here for the tests that call it through the communicator. */
    static String bind(final io.gdrkit.core.config.Setting<CollContext.Bind> how, final int localRank) {
        return ThreadBinding.bind(how, localRank);
    }

    /**
     * Where this rank's collectives thread runs ({@code gdrkit.coll.bind}): {@code cpu N (...)} pinned, or
     * {@code none (...)} with the setting or the reason it could not be pinned.
     *
     * @return the binding and why
     */
    public String binding() {
        return binding;
    }

    /**
     * Where this communicator's direct rounds go, and why: {@code shm (...)} through shared memory (every rank on this
     * host), or {@code nic (...)} over the eager connections.
     *
     * @return the path of the direct rounds and why
     */
    public String directPath() {
        return directPath;
    }

    /** The shared-memory slots' data bytes at least: every collective's round through shared memory is one. */
    static final int SHM_SLOT_BYTES = 256 * 1024;

    /** The spin before yielding when the host's spinning threads outnumber its processors (default spin only). */
    static final int OVERSUBSCRIBED_SPINS = 64;

    /**
     * How this rank's waits spin before they yield and park, and why ({@code gdrkit.coll.spin.rounds}; cut when the
     * spinning threads of this host's ranks outnumber its processors).
     *
     * @return the spin and why
     */
    public String spinning() {
        return spinning;
    }

    /**
     * What a collective of {@code op} and {@code bytes} takes here: algorithm, protocol, path and why
     * ({@link CollTuning}).
     *
     * @param op    the operation
     * @param bytes its size, as nccl-tests counts it
     * @return the choice
     */
    public CollTuning.Choice choose(final CollOp op, final long bytes) {
        return tuning.choose(op, bytes, deviceReducer == null, directBytes());
    }

    /** {@return whether every collective of host buffers may go through shared memory (every rank on this host)} */
    public boolean shmPathOpen() {
        return tuning.shmOpen();
    }

    /** The shm path's collectives, refused by name after an earlier failure. */
    ShmCollectives shmColl() {
        usable();
        return shmColl;
    }

    /** The hierarchical path's collectives (null: not open), refused by name after an earlier failure. */
    HierCollectives hier() {
        usable();
        return paths.hier();
    }

    /** This host's shared rounds on the hierarchical path (null: not open), for tests that play a hostile peer. */
    ShmDirect hostShm() {
        return paths.hostShm();
    }

    /**
     * An shm collective failed: later calls are refused with its error, returned to be thrown. A failure caused by a
     * fault on a mapped file (the InternalError itself, or a reduce thread's part, whose InternalError comes wrapped)
     * is named as {@link #shmFault} names it. {@code failure} is a RuntimeException or an InternalError, the two a
     * shared-memory collective throws.
     */
    RuntimeException shmFailed(final Throwable failure) {
        if (failure instanceof InternalError ie) {
            return shmFault(ie);
        }
        final RuntimeException e = (RuntimeException) failure;
        Throwable t = e.getCause();
        for (int depth = 0; t != null && depth < 8; depth++, t = t.getCause()) { // bounded: a cause chain may loop
            if (t instanceof InternalError ie) {
                final CollException c = new CollException(faultMessage(ie), e);
                failed(c);
                return c;
            }
        }
        failed(e);
        return e;
    }

    /**
     * An shm collective met a fault on a mapped file (the JVM's InternalError for a SIGBUS: a file truncated under
     * its mapping): a named error, naming the files that no longer hold their mapping; later calls are refused with it.
     */
    CollException shmFault(final InternalError e) {
        final CollException c = new CollException(faultMessage(e), e);
        failed(c);
        return c;
    }

    private String faultMessage(final InternalError e) {
        return "rank " + rank + " shared-memory collective: " + (paths.mapped() == null ? "a fault on a mapped "
            + "access" : paths.mapped().faultWhy()) + " (" + e.getMessage() + ")";
    }

    /** The shared-memory rounds (null: not used), for tests that play a hostile peer's file. */
    ShmDirect shmDirect() {
        return shm;
    }

    /** Receives posted ahead on each eager connection ({@link EagerPath#DEPTH}). */
    static final int EAGER_DEPTH = EagerPath.DEPTH;

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

    /**
     * The channels this communicator opened: connections per ordered pair of ranks.
     *
     * @return the channel count
     */
    public int channels() {
        return channels;
    }

    /**
     * The transport's devices (the software NICs of this rank, or 1).
     *
     * @return the device count
     */
    public int devices() {
        return devs;
    }

    private Object anyComm() {
        return send[(rank + 1) % n][0];
    }

    /** {@return this rank} */
    public int rank() {
        return rank;
    }

    /** {@return the number of ranks} */
    public int nranks() {
        return n;
    }

    /** {@return the transport behind the NET seam} */
    public NetTransport transport() {
        return net;
    }

    /**
     * Exchanges that sent to {@code peer} so far.
     *
     * @param peer a rank
     * @return the number of exchanges
     */
    public long exchangesSentTo(final int peer) {
        return sentTo[peer];
    }

    /**
     * Exchanges that received from {@code peer} so far.
     *
     * @param peer a rank
     * @return the number of exchanges
     */
    public long exchangesReceivedFrom(final int peer) {
        return receivedFrom[peer];
    }

    /** {@return the run's bootstrap} */
    public Bootstrap bootstrap() {
        return bootstrap;
    }

    /** {@return the collectives' tuning, concluded} */
    public CollContext context() {
        return ctx;
    }

    /**
     * Registers host memory for every connection of this communicator.
     *
     * @param seg host memory that outlives the registration
     * @return the registered buffer; give it back with {@link #deregister}
     */
    public RegisteredBuffer register(final MemorySegment seg) {
        return register(seg, null);
    }

    /**
     * Registers a buffer whose data lives in {@code dev} on this rank's GPU: with GDR (the gates said so) the device
     * memory itself, through the transport's regMrDmaBuf or regMr(device) by the decided mechanism; otherwise the
     * host half {@code seg} (the bounce buffer). A GDR registration that fails while no GPU buffer is registered
     * turns GDR off for this rank (the connector gate, recorded in {@link #gdr()}); later it is an error.
     *
     * @param seg the host half (the bounce buffer), at least as large as the device half
     * @param dev the device half on this rank's GPU, or null for host memory
     * @return the registered buffer; give it back with {@link #deregister}
     */
    public RegisteredBuffer register(final MemorySegment seg, final io.gdrkit.gpu.DeviceBuffer dev) {
        return gpu.register(seg, dev);
    }

    /**
     * Reductions from now on run on {@code gpu} ({@link DeviceReducer}) and the data bounces through host memory;
     * the communicator closes the reducer, not the GPU.
     *
     * @param gpu this rank's GPU
     */
    public void attachGpu(final io.gdrkit.gpu.GpuDevice gpu) {
        attachGpu(gpu, CollGdr.notAsked());
    }

    /**
     * As {@link #attachGpu(io.gdrkit.gpu.GpuDevice)}, with the control plane's decision: when it allows GDR, the
     * channels' staging (where reduced chunks land) moves to device memory registered with the NIC, and buffers
     * registered from now on are registered as GPU memory. A staging registration that fails is the connector gate.
     *
     * @param device this rank's GPU
     * @param decision the control plane's GDR decision for it
     */
    public void attachGpu(final io.gdrkit.gpu.GpuDevice device, final CollGdr decision) {
        if (deviceReducer != null) {
            throw new IllegalStateException("a GPU is attached already");
        }
        deviceReducer = new DeviceReducer(device, chunk, ctx.timeout());
        pipe.deviceReducer(deviceReducer);
        reduceChoice = new ParallelReducer.Choice(1, reduceChoice.minBytes(), "the GPU reduces; host buffers would "
            + "have " + reduceChoice.describe());
        hostReducer.close();
        gpu.attach(device, decision);
    }

    /**
     * This rank's GDR decision (null when no GPU is attached).
     *
     * @return the decision, or null
     */
    public CollGdr gdr() {
        return gpu.gdr;
    }

    /**
     * Who else is on this rank's GPU, and with MPS or not (null in host memory, or when no world told it).
     *
     * @return the sharing, or null
     */
    public GpuSharing gpuSharing() {
        return gpuSharing;
    }

    void gpuSharing(final GpuSharing s) {
        gpuSharing = s;
    }

    /**
     * The registration reduced receives of channel {@code c} land in (a GPU MR with GDR, else host staging's).
     *
     * @param c a channel
     * @return the registration
     */
    public NetTransport.MrHandle stagingRegistration(final int c) {
        return stagingNicMr[c][0];
    }

    /**
     * Channel {@code c}'s device staging, or null without GDR.
     *
     * @param c a channel
     * @return the device staging, or null
     */
    public io.gdrkit.gpu.DeviceBuffer stagingDevice(final int c) {
        return gpu.stagingDev == null ? null : gpu.stagingDev[c];
    }

    /**
     * iflush READs this rank posted and saw complete (GDR with the flush gate on).
     *
     * @return the number of flush READs
     */
    public long flushes() {
        return pipe.flushes();
    }

    /**
     * The GPU reducer, or null when reductions run on the CPU.
     *
     * @return the reducer, or null
     */
    public DeviceReducer deviceReducer() {
        return deviceReducer;
    }

    /** The one-element buffer of {@link Collectives#barrier} over the NICs, registered on first use. */
    private RegisteredBuffer barrierBuf;

    RegisteredBuffer barrierBuffer() {
        if (barrierBuf == null) {
            barrierBuf = register(arena.allocate(64, 64));
        }
        return barrierBuf;
    }

    /**
     * Returns once every rank has called it ({@link Collectives#barrier}): a round of flags through shared memory
     * when every rank is on this host, a one-element allreduce otherwise. Every rank calls it in the same place of
     * its sequence of collectives.
     */
    public void barrier() {
        Collectives.barrier(this);
    }

    /**
     * Gives back a buffer's registrations (host, GPU, or both).
     *
     * @param b a buffer this communicator registered
     */
    public void deregister(final RegisteredBuffer b) {
        gpu.deregister(b);
    }


    /**
     * Sends {@code sendBytes} at {@code src + srcOff} to {@code to} while receiving {@code recvBytes} from
     * {@code from} into {@code dst + dstOff}; with {@code op} non-null the received data is reduced into dst
     * ({@code dst = op(dst, received)}) chunk by chunk through the staging buffer. {@code to} or {@code from} may be
     * -1 (no send, no receive). The eager head (see the class comment) goes first; the rest moves in chunks, and
     * the exchange returns once every chunk was received and every chunk sent from {@code src} completed (an
     * eager head was copied out, so src is free). Allocates nothing once its request arrays have grown to the
     * largest exchange.
     *
     * @param to the rank to send to, or -1 for no send
     * @param src the buffer the data is sent from
     * @param srcOff where in {@code src} the data starts
     * @param sendBytes how many bytes to send
     * @param from the rank to receive from, or -1 for no receive
     * @param dst the buffer the data lands in
     * @param dstOff where in {@code dst} it lands
     * @param recvBytes how many bytes to receive
     * @param op the reduction applied to what arrives, or null to land it as is
     * @param type the element type (a reduction works element by element)
     */
    public void exchange(final int to, final RegisteredBuffer src, final long srcOff, final long sendBytes,
                         final int from, final RegisteredBuffer dst, final long dstOff, final long recvBytes,
                         final RedOp op,
                         final DataType type) {
        exchange(to, src, srcOff, sendBytes, from, dst, dstOff, recvBytes, op, type, dst, dstOff);
    }

    /**
     * As above, with the reduction reading its local operand from {@code acc + accOff} instead of dst
     * ({@code dst = op(acc, received)}): an out-of-place allreduce reduces its input into its output this way and
     * needs no copy of the input first. Host memory only: with a GPU attached, acc must be dst.
     *
     * @param to the rank to send to, or -1 for no send
     * @param src the buffer the data is sent from
     * @param srcOff where in {@code src} the data starts
     * @param sendBytes how many bytes to send
     * @param from the rank to receive from, or -1 for no receive
     * @param dst the buffer the data lands in
     * @param dstOff where in {@code dst} it lands
     * @param recvBytes how many bytes to receive
     * @param op the reduction applied to what arrives, or null to land it as is
     * @param type the element type (a reduction works element by element)
     * @param acc the buffer the reduction reads its local operand from
     * @param accOff where in {@code acc} it starts
     */
    public void exchange(final int to, final RegisteredBuffer src, final long srcOff, final long sendBytes,
                         final int from, final RegisteredBuffer dst, final long dstOff, final long recvBytes,
                         final RedOp op,
                         final DataType type, final RegisteredBuffer acc, final long accOff) {
        usable();
        try {
            pipe.run(to, src, srcOff, sendBytes, from, dst, dstOff, recvBytes, op, type, acc, accOff);
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


    private String nicMtu = "unknown";

    /**
     * The software NIC's MTU on this rank's connections and where it came from ({@code nic_mtu}).
     *
     * @return the MTU and where it came from
     */
    public String nicMtu() {
        return nicMtu;
    }

    void nicMtu(final String description) {
        nicMtu = java.util.Objects.requireNonNull(description);
    }

    private String nicProgress = "unknown";

    /**
     * How this rank's software NIC is driven, and why (CollWorld's choice; "unknown" when nobody said).
     *
     * @return how the NIC is driven and why
     */
    public String nicProgress() {
        return nicProgress;
    }

    void nicProgress(final String description) {
        nicProgress = java.util.Objects.requireNonNull(description);
    }

    /**
     * How many threads split this rank's large host reductions, from which size, and why ({@code reduce_threads}).
     *
     * @return the choice
     */
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
     *
     * @return the limit in bytes, 0 when no collective runs as a direct round
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
    void directRound(final RegisteredBuffer src, final long srcOff, final int bytes, final int recvBytes, final long what,
                     final int sendTo, final int recvFrom) {
        usable();
        try {
            direct.round(src, srcOff, bytes, recvBytes, what, sendTo, recvFrom);
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

    /** Where rank {@code p}'s data of the last direct round lies ({@link DirectRounds#seg}). */
    MemorySegment directSeg(final int p) {
        return direct.seg(p);
    }

    /** The offset of rank {@code p}'s data of the last direct round in {@link #directSeg(int)}. */
    long directAt(final int p) {
        return direct.at(p);
    }

    /** After a direct round's data was read: posts the next receives into the slots it used. */
    void directDone(final int recvFrom) {
        direct.done(recvFrom);
    }

    @Override
    public void close() {
        hostReducer.close();
        gpu.close();
        if (deviceReducer != null) {
            deviceReducer.close();
        }
        eg.drain();
        for (final NetTransport.MrHandle m : stagingMr) {
            if (m != null) {
                net.deregMr(anyComm(), m);
            }
        }
        eg.deregister(n > 1 ? anyComm() : null);
        conns.close();
        paths.close();
        arena.close();
    }
}
