/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.Communicator.Buffer;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.gpu.DeviceBuffer;
import io.gdrkit.gpu.GpuDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One rank's communicator: NCCL's calls on Java data. Every rank of a run opens one with the run's id
 * ({@link CommRoot}) and its rank, then calls the same collectives in the same order; each call returns when this
 * rank's part is done and its output holds the result.
 *
 * <pre>{@code
 * try (Comm comm = Comm.open(new CommConfig().id(id).rank(r).nranks(4).fabric(Fabric.SHM))) {
 *     float[] grad = ...;
 *     comm.allReduce(grad, grad, RedOp.SUM);      // in place: every rank now holds the sum
 * }
 * }</pre>
 *
 * <p><b>Data.</b> Every call takes {@link MemorySegment}s (native or heap), Java arrays ({@code float[]},
 * {@code double[]}, {@code int[]}, {@code long[]}) or, on a communicator opened with a GPU
 * ({@link CommConfig#gpu}), {@link DeviceBuffer}s of that GPU. Native segments are registered with the NIC on first
 * use and the registration is kept for the next call on the same memory (a closed segment's registration is
 * dropped; {@link #deregister} drops one by hand). Arrays and heap segments are copied through registered staging
 * memory. Counts are elements of the given {@link DataType}; each buffer holds at most {@link #MAX_BYTES} bytes.
 * In place is allowed where NCCL allows it: the same memory as input and output (allreduce, broadcast, reduce), the
 * input as this rank's block of the output (allgather), the output as this rank's block of the input
 * (reduce-scatter); other overlaps are copied first.
 *
 * <p><b>Asynchronous calls.</b> Each {@code ...Async} call, and {@link #submit} for any sequence of calls, returns a
 * {@link CompletableFuture} at once and runs on this communicator's operation thread, in submission order; a
 * blocking call made afterwards waits for the earlier asynchronous ones first. The memory of an asynchronous call
 * must not be touched until its future completes.
 *
 * <p><b>Groups.</b> Between {@link #groupStart()} and {@link #groupEnd()} calls are recorded, not run; groupEnd runs
 * the collectives in the order given, then the point-to-point calls as exchanges, the k-th {@code send} of the group
 * together with its k-th {@code recv}, so that a ring shift (send to the next rank, receive from the previous one)
 * cannot deadlock.
 *
 * <p><b>Errors.</b> A bad argument is an {@link IllegalArgumentException} naming it, before anything moves. A
 * collective that cannot finish (a peer gone, a timeout naming what it waited for, a peer's bad data) is a
 * {@link CollException}; the communicator is then unusable and refuses further calls with the first error.
 *
 * <p>A communicator is safe to call from several threads; calls run one at a time.
 */
public final class Comm implements AutoCloseable {
    /** The most bytes one buffer of one call may hold. */
    public static final long MAX_BYTES = 1L << 31;

    /** Registrations of native segments kept for reuse; the least recently used is dropped beyond this. */
    static final int REGISTRATION_CACHE = 64;

    private static final int SEND = 0;
    private static final int RECV = 1;
    private static final int SCRATCH = 2;

    private final CommConfig config;
    private final Bootstrap bootstrap;
    private final CollWorld world;
    private final Communicator engine;
    private final boolean sharedDriver;
    private final ReentrantLock lock = new ReentrantLock();
    private final LinkedHashMap<Key, Reg> regs = new LinkedHashMap<>(16, 0.75f, true);
    private final Map<DeviceBuffer, Buffer> devRegs = new IdentityHashMap<>();
    private final List<Stage> stages = new ArrayList<>();
    private final List<DeviceBuffer> devScratch = new ArrayList<>();
    private final AtomicLong submitted = new AtomicLong();
    private final AtomicLong finished = new AtomicLong();
    private ExecutorService ops;
    private volatile Thread opThread;
    private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);
    private List<Recorded> group;
    private int groupDepth;
    private boolean closed;

    /** A native segment's registration, by where it lies. */
    private record Key(long address, long size) {
    }

    private record Reg(MemorySegment seg, Buffer buf) {
    }

    /** Registered staging memory for heap data and copies, grown on demand. */
    private record Stage(Arena arena, Buffer buf, long capacity) {
    }

    /** A call recorded inside a group. */
    private record Recorded(Runnable collective, int sendTo, int recvFrom, Object buf, long offset, long count,
                            DataType type) {
    }

    /**
     * A sequence of calls to run on the communicator's operation thread ({@link #submit}).
     */
    @FunctionalInterface
    public interface Task {
        /**
         * Runs the calls.
         *
         * @param comm the communicator
         * @throws Exception anything, completing the future exceptionally
         */
        void run(Comm comm) throws Exception;
    }

    /**
     * What this rank's communicator is made of, as the engine chose it: for logs and reports.
     *
     * @param rank        this rank
     * @param nranks      the number of ranks
     * @param fabric      where the NICs meet
     * @param transport   the transport behind the NET seam
     * @param simulated   true when the NICs are software NICs (always, today) or the GPU is simulated
     * @param nics        network devices (NICs) per rank
     * @param channels    channels per peer
     * @param directPath  how small collectives travel between ranks of this host
     * @param nicProgress who drives the software NICs
     * @param gpu         the GPU (describe()), or "none"
     * @param dataPath    GDR or host bounce for GPU buffers, or "host memory"
     */
    public record Info(int rank, int nranks, Fabric fabric, CollWorld.TransportKind transport, boolean simulated,
                       int nics, int channels, String directPath, String nicProgress, String gpu, String dataPath) {
    }

    private Comm(final CommConfig config, final Bootstrap bootstrap, final CollWorld world,
                 final boolean sharedDriver) {
        this.config = config;
        this.bootstrap = bootstrap;
        this.world = world;
        this.engine = world.communicator();
        this.sharedDriver = sharedDriver;
    }

    /**
     * Opens this rank's communicator: joins the run through the bootstrap, starts the NICs on the config's fabric
     * and connects to every peer. Every rank of the run must call it; it returns when all have joined.
     *
     * @param config the config; concluded here unless it already is
     * @return the communicator
     * @throws IllegalArgumentException naming a bad config value
     * @throws CollException            when the run cannot be joined or connected (naming why)
     */
    public static Comm open(final CommConfig config) {
        Objects.requireNonNull(config, "config");
        if (!config.concluded()) {
            config.conclude();
        }
        final boolean injvm = config.fabric() == Fabric.INJVM;
        final io.gdrkit.softnic.SoftNicDriver driver = injvm ? InJvmDrivers.acquire(config.id().runId()) : null;
        Bootstrap b = null;
        try {
            b = Bootstrap.init(new BootstrapContext().id(config.id()).rank(config.rank()).nranks(config.nranks())
                .localRank(config.localRank()).token(config.token()).timeout(config.timeout()));
            final CollWorld w = CollWorld.open(b, config.fabric().wireName(), driver, config.transport(),
                config.coll(), config.settings(), config.timeout(), config.gpu());
            return new Comm(config, b, w, injvm);
        } catch (final RuntimeException e) {
            if (b != null) {
                b.abort("rank " + config.rank() + " could not open its communicator: " + e.getMessage());
                b.close();
            }
            if (injvm) {
                InJvmDrivers.release(config.id().runId());
            }
            throw e;
        }
    }

    /**
     * Opens the communicator of a rank started by {@code gdrkit launch} (its id, rank and token from the
     * environment), with {@code base}'s other settings.
     *
     * @param base fabric, transport, GPU and tuning; its id, rank and number of ranks are taken from the environment
     * @return the communicator
     * @throws IllegalArgumentException when this process was not started by the launcher, naming the missing variable
     */
    public static Comm fromLauncher(final CommConfig base) {
        final CommConfig c = CommConfig.fromLauncherEnvironment(System.getenv()).fabric(base.fabric())
            .transport(base.transport()).timeout(base.timeout()).gpu(base.gpu());
        return open(c);
    }

    /** {@return this rank, {@code 0..size()-1}} */
    public int rank() {
        return engine.rank();
    }

    /** {@return the number of ranks} */
    public int size() {
        return engine.nranks();
    }

    /** {@return the concluded config this communicator was opened with} */
    public CommConfig config() {
        return config;
    }

    /** {@return the GPU this rank's buffers live on (allocate with it), or null when opened without one} */
    public GpuDevice gpu() {
        final DeviceReducer dr = engine.deviceReducer();
        return dr == null ? null : dr.gpu();
    }

    /** {@return what the engine chose for this rank} */
    public Info info() {
        final GpuDevice g = gpu();
        return new Info(rank(), size(), config.fabric(), config.transport(), true, engine.devices(),
            engine.channels(), engine.directPath(), engine.nicProgress(), g == null ? "none" : g.describe(),
            g == null ? "host memory" : engine.gdr().dataPath());
    }

    // ------------------------------------------------------------------------------------------------ ordering

    /**
     * Runs {@code task} on the operation thread after every call submitted before it.
     *
     * @param task the calls to run
     * @return completes when the task returns; exceptionally with what it threw
     */
    public CompletableFuture<Void> submit(final Task task) {
        Objects.requireNonNull(task, "task");
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("communicator of rank " + rank() + " is closed");
            }
            if (ops == null) {
                ops = Executors.newSingleThreadExecutor(r -> {
                    final Thread t = new Thread(r, "gdrkit-comm-rank-" + rank());
                    t.setDaemon(true);
                    opThread = t;
                    return t;
                });
            }
            submitted.incrementAndGet();
            final CompletableFuture<Void> f = new CompletableFuture<>();
            ops.execute(() -> {
                try {
                    task.run(this);
                    f.complete(null);
                } catch (final Throwable e) {
                    f.completeExceptionally(e);
                } finally {
                    finished.incrementAndGet();
                }
            });
            tail = f;
            return f;
        }
    }

    /**
     * Waits until every call submitted so far has ended: bounded by the config's timeout without progress (no
     * asynchronous call ending), and saying so.
     */
    private void awaitSubmitted() {
        if (Thread.currentThread() == opThread) {
            return; // a task's own calls: the earlier ones are done, this one is running
        }
        final CompletableFuture<Void> t;
        synchronized (this) {
            t = tail;
        }
        long seen = finished.get();
        while (true) {
            try {
                t.get(config.timeout().toMillis(), TimeUnit.MILLISECONDS);
                return;
            } catch (final ExecutionException e) {
                return; // the failed call's future carries its error; this call meets it in the engine
            } catch (final TimeoutException e) {
                final long now = finished.get();
                if (now == seen) {
                    throw new CollException("rank " + rank() + " waited " + config.timeout().toMillis()
                        + " ms for its earlier asynchronous calls (" + (submitted.get() - now) + " still running) "
                        + "and none ended");
                }
                seen = now;
            } catch (final InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CollException("rank " + rank() + " was interrupted waiting for its earlier asynchronous "
                    + "calls", e);
            }
        }
    }

    /** Runs one call now (or records it in an open group), after the asynchronous ones before it. */
    private void call(final Runnable body) {
        awaitSubmitted();
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("communicator of rank " + rank() + " is closed");
            }
            if (group != null) {
                group.add(new Recorded(body, -1, -1, null, 0, 0, null));
                return;
            }
            body.run();
        } finally {
            lock.unlock();
        }
    }

    private CompletableFuture<Void> async(final Runnable body) {
        return submit(c -> c.call(body));
    }

    // ------------------------------------------------------------------------------------------------ groups

    /**
     * Starts a group: the calls up to the matching {@link #groupEnd()} are recorded and run together there. Groups
     * nest; the outermost end runs them.
     */
    public void groupStart() {
        awaitSubmitted();
        lock.lock();
        try {
            if (groupDepth++ == 0) {
                group = new ArrayList<>();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Ends a group; the outermost end runs the recorded calls: collectives in order, then each send together with
     * the receive of the same position among the group's receives.
     *
     * @throws IllegalStateException without a matching {@link #groupStart()}
     */
    public void groupEnd() {
        lock.lock();
        try {
            if (groupDepth == 0) {
                throw new IllegalStateException("groupEnd() without groupStart()");
            }
            if (--groupDepth > 0) {
                return;
            }
            final List<Recorded> calls = group;
            group = null;
            final List<Recorded> sends = new ArrayList<>();
            final List<Recorded> recvs = new ArrayList<>();
            for (final Recorded r : calls) {
                if (r.collective() != null) {
                    r.collective().run();
                } else if (r.sendTo() >= 0) {
                    sends.add(r);
                } else {
                    recvs.add(r);
                }
            }
            for (int k = 0; k < Math.max(sends.size(), recvs.size()); k++) {
                p2p(k < sends.size() ? sends.get(k) : null, k < recvs.size() ? recvs.get(k) : null);
            }
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------------ checks

    private static long bytes(final long count, final DataType t, final String what) {
        if (count < 0) {
            throw new IllegalArgumentException(what + ": count " + count + " is negative");
        }
        if (count > MAX_BYTES / t.size()) {
            throw new IllegalArgumentException(what + ": " + count + " elements of " + t.ncclName() + " exceed "
                + MAX_BYTES + " bytes");
        }
        return count * t.size();
    }

    private static void holds(final MemorySegment seg, final long bytes, final String what) {
        Objects.requireNonNull(seg, what);
        if (seg.byteSize() < bytes) {
            throw new IllegalArgumentException(what + " holds " + seg.byteSize() + " bytes, the call needs " + bytes);
        }
        if (seg.isReadOnly()) {
            throw new IllegalArgumentException(what + " is read-only");
        }
    }

    private void root(final int root) {
        if (root < 0 || root >= size()) {
            throw new IllegalArgumentException("root " + root + " outside 0.." + (size() - 1));
        }
    }

    private void peer(final int peer) {
        if (peer < 0 || peer >= size()) {
            throw new IllegalArgumentException("peer " + peer + " outside 0.." + (size() - 1));
        }
        if (peer == rank()) {
            throw new IllegalArgumentException("peer " + peer + " is this rank: copy locally instead");
        }
    }

    private static Object base(final MemorySegment s) {
        return s.heapBase().orElse(null);
    }

    /** The same memory: same heap object (or both native) and the same address. */
    private static boolean same(final MemorySegment a, final MemorySegment b, final long bOff) {
        return base(a) == base(b) && a.address() == b.address() + bOff;
    }

    private static boolean overlap(final MemorySegment a, final long aBytes, final MemorySegment b,
                                   final long bBytes) {
        return base(a) == base(b) && a.address() < b.address() + bBytes && b.address() < a.address() + aBytes;
    }

    // ------------------------------------------------------------------------------------------------ buffers

    /** A registered staging buffer of at least {@code bytes} in slot {@code slot}. */
    private Buffer stage(final int slot, final long bytes) {
        while (stages.size() <= slot) {
            stages.add(null);
        }
        Stage s = stages.get(slot);
        if (s == null || s.capacity() < bytes) {
            if (s != null) {
                engine.deregister(s.buf());
                s.arena().close();
            }
            final long cap = Math.max(4096, Long.highestOneBit(Math.max(1, bytes) - 1) << 1);
            final Arena a = Arena.ofShared();
            try {
                s = new Stage(a, engine.register(a.allocate(cap, 4096)), cap);
            } catch (final RuntimeException e) {
                a.close();
                stages.set(slot, null);
                throw e;
            }
            stages.set(slot, s);
        }
        return s.buf();
    }

    /** The registration of a native segment, from the cache when the same live memory was registered before. */
    private Buffer registered(final MemorySegment seg) {
        final Key k = new Key(seg.address(), seg.byteSize());
        final Reg r = regs.get(k);
        if (r != null) {
            if (r.seg().scope().isAlive() && r.seg().scope().equals(seg.scope())) {
                return r.buf();
            }
            regs.remove(k);
            engine.deregister(r.buf());
        }
        final Buffer b = engine.register(seg);
        regs.put(k, new Reg(seg, b));
        if (regs.size() > REGISTRATION_CACHE) {
            final Iterator<Map.Entry<Key, Reg>> it = regs.entrySet().iterator();
            final Reg old = it.next().getValue();
            it.remove();
            engine.deregister(old.buf());
        }
        return b;
    }

    /**
     * Drops the registration kept for {@code seg} (if any). Call it before freeing memory that a call used, to give
     * the registration back at once rather than when the cache fills or the communicator closes.
     *
     * @param seg the memory a call used
     */
    public void deregister(final MemorySegment seg) {
        call(() -> {
            final Reg r = regs.remove(new Key(seg.address(), seg.byteSize()));
            if (r != null) {
                engine.deregister(r.buf());
            }
        });
    }

    /** The buffer a call reads from {@code seg}: registered native memory, or a staging copy. */
    private Buffer input(final MemorySegment seg, final long bytes, final int slot) {
        if (seg.isNative()) {
            return registered(seg);
        }
        final Buffer s = stage(slot, bytes);
        MemorySegment.copy(seg, 0, s.seg(), 0, bytes);
        return s;
    }

    /** The buffer a call writes for {@code seg}: registered native memory, or staging copied out afterwards. */
    private Buffer output(final MemorySegment seg, final long bytes, final int slot) {
        return seg.isNative() ? registered(seg) : stage(slot, bytes);
    }

    private static void copyOut(final Buffer b, final MemorySegment seg, final long bytes) {
        if (!seg.isNative() && bytes > 0) {
            MemorySegment.copy(b.seg(), 0, seg, 0, bytes);
        }
    }

    /** A slice of a buffer from {@code off}, sharing its registration. */
    private static Buffer slice(final Buffer b, final long off) {
        if (b.direct()) {
            return new Buffer(b.seg().asSlice(off), b.mr(), b.dev(), b.devOff() + off, true, b.hostMr());
        }
        return new Buffer(b.seg().asSlice(off), b.mr(), b.dev(), b.devOff() + off, false, b.hostMr());
    }

    // ------------------------------------------------------------------------------------------------ host calls

    /**
     * {@code recv = send[0] op send[1] op ... op send[n-1]} element-wise over all ranks, on every rank.
     *
     * @param send  {@code count} elements of this rank's input
     * @param recv  {@code count} elements of output (may be {@code send}: in place)
     * @param count elements per rank
     * @param type  the element type
     * @param op    the reduction
     */
    public void allReduce(final MemorySegment send, final MemorySegment recv, final long count, final DataType type,
                          final RedOp op) {
        call(() -> hostAllReduce(send, recv, count, type, op));
    }

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)}, asynchronously.
     *
     * @param send  input
     * @param recv  output
     * @param count elements
     * @param type  element type
     * @param op    reduction
     * @return completes when the output holds the result
     */
    public CompletableFuture<Void> allReduceAsync(final MemorySegment send, final MemorySegment recv,
                                                  final long count, final DataType type, final RedOp op) {
        checkArgs(() -> hostArgs(send, recv, bytes(count, type, "allReduce"), bytes(count, type, "allReduce")));
        return async(() -> hostAllReduce(send, recv, count, type, op));
    }

    private static void checkArgs(final Runnable check) {
        check.run();
    }

    private static void hostArgs(final MemorySegment send, final MemorySegment recv, final long sendBytes,
                                 final long recvBytes) {
        holds(send, sendBytes, "send buffer");
        holds(recv, recvBytes, "receive buffer");
    }

    private void hostAllReduce(final MemorySegment send, final MemorySegment recv, final long count,
                               final DataType type, final RedOp op) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        Objects.requireNonNull(op, "op");
        final long bytes = bytes(count, type, "allReduce");
        hostArgs(send, recv, bytes, bytes);
        final boolean inPlace = same(send, recv, 0);
        final Buffer out = output(recv, bytes, RECV);
        final Buffer in = inPlace ? out : overlap(send, bytes, recv, bytes) || !send.isNative()
            ? stagedCopy(send, bytes, SEND) : registered(send);
        if (inPlace && !recv.isNative()) {
            MemorySegment.copy(send, 0, out.seg(), 0, bytes);
        }
        Collectives.allReduce(engine, in, out, count, type, op);
        copyOut(out, recv, bytes);
    }

    private Buffer stagedCopy(final MemorySegment seg, final long bytes, final int slot) {
        final Buffer s = stage(slot, bytes);
        MemorySegment.copy(seg, 0, s.seg(), 0, bytes);
        return s;
    }

    /**
     * Every rank's {@code count} elements of send, in rank order, in every rank's recv ({@code size() * count}
     * elements).
     *
     * @param send  {@code count} elements (may be this rank's block of recv: in place)
     * @param recv  {@code size() * count} elements
     * @param count elements per rank
     * @param type  the element type
     */
    public void allGather(final MemorySegment send, final MemorySegment recv, final long count, final DataType type) {
        call(() -> hostAllGather(send, recv, count, type));
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)}, asynchronously.
     *
     * @param send  input
     * @param recv  output
     * @param count elements per rank
     * @param type  element type
     * @return completes when the output holds every rank's block
     */
    public CompletableFuture<Void> allGatherAsync(final MemorySegment send, final MemorySegment recv,
                                                  final long count, final DataType type) {
        final long bb = bytes(count, type, "allGather");
        checkArgs(() -> hostArgs(send, recv, bb, bb * size()));
        return async(() -> hostAllGather(send, recv, count, type));
    }

    private void hostAllGather(final MemorySegment send, final MemorySegment recv, final long count,
                               final DataType type) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        final long bb = bytes(count, type, "allGather");
        final long total = bytes(count * size(), type, "allGather");
        hostArgs(send, recv, bb, total);
        final boolean inPlace = same(send, recv, rank() * bb);
        final Buffer out = output(recv, total, RECV);
        final Buffer in;
        if (inPlace) {
            if (!recv.isNative()) {
                MemorySegment.copy(send, 0, out.seg(), rank() * bb, bb);
            }
            in = slice(out, rank() * bb);
        } else {
            in = overlap(send, bb, recv, total) || !send.isNative() ? stagedCopy(send, bb, SEND) : registered(send);
        }
        Collectives.allGather(engine, in, out, count, type);
        copyOut(out, recv, total);
    }

    /**
     * Reduces {@code size()} blocks of {@code recvCount} elements of send across ranks; block {@code rank()} of the
     * result lands in this rank's recv.
     *
     * @param send      {@code size() * recvCount} elements
     * @param recv      {@code recvCount} elements (may be this rank's block of send: in place)
     * @param recvCount elements each rank receives
     * @param type      the element type
     * @param op        the reduction
     */
    public void reduceScatter(final MemorySegment send, final MemorySegment recv, final long recvCount,
                              final DataType type, final RedOp op) {
        call(() -> hostReduceScatter(send, recv, recvCount, type, op));
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}, asynchronously.
     *
     * @param send      input
     * @param recv      output
     * @param recvCount elements each rank receives
     * @param type      element type
     * @param op        reduction
     * @return completes when the output holds this rank's reduced block
     */
    public CompletableFuture<Void> reduceScatterAsync(final MemorySegment send, final MemorySegment recv,
                                                      final long recvCount, final DataType type, final RedOp op) {
        final long bb = bytes(recvCount, type, "reduceScatter");
        checkArgs(() -> hostArgs(send, recv, bb * size(), bb));
        return async(() -> hostReduceScatter(send, recv, recvCount, type, op));
    }

    private void hostReduceScatter(final MemorySegment send, final MemorySegment recv, final long recvCount,
                                   final DataType type, final RedOp op) {
        if (recvCount == 0) {
            return; // every rank skips it alike: nothing moves
        }
        Objects.requireNonNull(op, "op");
        final long bb = bytes(recvCount, type, "reduceScatter");
        final long total = bytes(recvCount * size(), type, "reduceScatter");
        hostArgs(send, recv, total, bb);
        final Buffer in = send.isNative() && !overlap(send, total, recv, bb) ? registered(send)
            : stagedCopy(send, total, SEND);
        final Buffer out = recv.isNative() && !overlap(send, total, recv, bb) ? registered(recv) : stage(RECV, bb);
        Collectives.reduceScatter(engine, in, stage(SCRATCH, total), out, recvCount, type, op);
        if (!recv.isNative() || overlap(send, total, recv, bb)) {
            MemorySegment.copy(out.seg(), 0, recv, 0, bb);
        }
    }

    /**
     * The root's {@code count} elements of send in every rank's recv.
     *
     * @param send  the root's input (read on the root only)
     * @param recv  {@code count} elements of output (may be {@code send}: in place)
     * @param count elements
     * @param type  the element type
     * @param root  the rank whose data goes out
     */
    public void broadcast(final MemorySegment send, final MemorySegment recv, final long count, final DataType type,
                          final int root) {
        call(() -> hostBroadcast(send, recv, count, type, root));
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)}, asynchronously.
     *
     * @param send  input (root)
     * @param recv  output
     * @param count elements
     * @param type  element type
     * @param root  the rank whose data goes out
     * @return completes when the output holds the root's data
     */
    public CompletableFuture<Void> broadcastAsync(final MemorySegment send, final MemorySegment recv,
                                                  final long count, final DataType type, final int root) {
        final long b = bytes(count, type, "broadcast");
        checkArgs(() -> {
            hostArgs(send, recv, b, b);
            root(root);
        });
        return async(() -> hostBroadcast(send, recv, count, type, root));
    }

    private void hostBroadcast(final MemorySegment send, final MemorySegment recv, final long count,
                               final DataType type, final int root) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        final long bytes = bytes(count, type, "broadcast");
        hostArgs(send, recv, bytes, bytes);
        root(root);
        final boolean inPlace = same(send, recv, 0);
        final Buffer out = output(recv, bytes, RECV);
        final Buffer in;
        if (inPlace) {
            if (!recv.isNative() && rank() == root) {
                MemorySegment.copy(send, 0, out.seg(), 0, bytes);
            }
            in = out;
        } else if (rank() != root) {
            in = out; // not read off the root
        } else {
            in = overlap(send, bytes, recv, bytes) || !send.isNative() ? stagedCopy(send, bytes, SEND)
                : registered(send);
        }
        Collectives.broadcast(engine, in, out, count, type, root);
        copyOut(out, recv, bytes);
    }

    /**
     * {@code recv = send[0] op ... op send[n-1]} on the root only.
     *
     * @param send  {@code count} elements of this rank's input
     * @param recv  the root's output of {@code count} elements (may be {@code send}: in place); other ranks may
     *              pass null
     * @param count elements
     * @param type  the element type
     * @param op    the reduction
     * @param root  the rank that receives the result
     */
    public void reduce(final MemorySegment send, final MemorySegment recv, final long count, final DataType type,
                       final RedOp op, final int root) {
        call(() -> hostReduce(send, recv, count, type, op, root));
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)}, asynchronously.
     *
     * @param send  input
     * @param recv  output on the root (null elsewhere)
     * @param count elements
     * @param type  element type
     * @param op    reduction
     * @param root  the rank that receives the result
     * @return completes when this rank's part is done (on the root: the output holds the result)
     */
    public CompletableFuture<Void> reduceAsync(final MemorySegment send, final MemorySegment recv, final long count,
                                               final DataType type, final RedOp op, final int root) {
        final long b = bytes(count, type, "reduce");
        checkArgs(() -> {
            root(root);
            holds(send, b, "send buffer");
            if (rank() == root) {
                holds(recv, b, "receive buffer");
            }
        });
        return async(() -> hostReduce(send, recv, count, type, op, root));
    }

    private void hostReduce(final MemorySegment send, final MemorySegment recv, final long count,
                            final DataType type, final RedOp op, final int root) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        Objects.requireNonNull(op, "op");
        final long bytes = bytes(count, type, "reduce");
        root(root);
        holds(send, bytes, "send buffer");
        final MemorySegment r = rank() == root ? recv : null;
        if (r != null) {
            holds(r, bytes, "receive buffer");
        }
        // the engine reduces through the output on every rank on the way to the root: off the root it is scratch
        final boolean inPlace = r != null && same(send, r, 0);
        final Buffer out = r == null ? stage(RECV, bytes) : output(r, bytes, RECV);
        final Buffer in = inPlace ? out : (r != null && overlap(send, bytes, r, bytes)) || !send.isNative()
            ? stagedCopy(send, bytes, SEND) : registered(send);
        if (inPlace && !r.isNative()) {
            MemorySegment.copy(send, 0, out.seg(), 0, bytes);
        }
        Collectives.reduce(engine, in, out, count, type, op, root);
        if (r != null) {
            copyOut(out, r, bytes);
        }
    }

    /**
     * Block p of this rank's send ({@code count} elements) goes to rank p, landing in its recv at block
     * {@code rank()}.
     *
     * @param send  {@code size() * count} elements
     * @param recv  {@code size() * count} elements (may overlap send: then send is copied first)
     * @param count elements per block
     * @param type  the element type
     */
    public void allToAll(final MemorySegment send, final MemorySegment recv, final long count, final DataType type) {
        call(() -> hostAllToAll(send, recv, count, type));
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}, asynchronously.
     *
     * @param send  input
     * @param recv  output
     * @param count elements per block
     * @param type  element type
     * @return completes when the output holds every rank's block
     */
    public CompletableFuture<Void> allToAllAsync(final MemorySegment send, final MemorySegment recv,
                                                 final long count, final DataType type) {
        final long total = bytes(count, type, "allToAll") * size();
        checkArgs(() -> hostArgs(send, recv, total, total));
        return async(() -> hostAllToAll(send, recv, count, type));
    }

    private void hostAllToAll(final MemorySegment send, final MemorySegment recv, final long count,
                              final DataType type) {
        if (count == 0) {
            return; // every rank skips it alike: nothing moves
        }
        final long total = bytes(count * size(), type, "allToAll");
        hostArgs(send, recv, total, total);
        final Buffer out = output(recv, total, RECV);
        final Buffer in = overlap(send, total, recv, total) || !send.isNative() ? stagedCopy(send, total, SEND)
            : registered(send);
        Collectives.allToAll(engine, in, out, count, type);
        copyOut(out, recv, total);
    }

    /**
     * Sends {@code count} elements to {@code peer}, which calls {@link #recv} for them. Outside a group this returns
     * once the data has left (the peer must be receiving); inside a group it pairs with a receive.
     *
     * @param buf   the data
     * @param count elements
     * @param type  the element type
     * @param peer  the receiving rank
     */
    public void send(final MemorySegment buf, final long count, final DataType type, final int peer) {
        final long bytes = bytes(count, type, "send");
        holds(buf, bytes, "send buffer");
        peer(peer);
        record(new Recorded(null, peer, -1, buf, 0, count, type));
    }

    /**
     * Receives {@code count} elements from {@code peer}, which calls {@link #send} with them.
     *
     * @param buf   where the data lands
     * @param count elements
     * @param type  the element type
     * @param peer  the sending rank
     */
    public void recv(final MemorySegment buf, final long count, final DataType type, final int peer) {
        final long bytes = bytes(count, type, "recv");
        holds(buf, bytes, "receive buffer");
        peer(peer);
        record(new Recorded(null, -1, peer, buf, 0, count, type));
    }

    /** A point-to-point call: recorded in an open group, else run alone. */
    private void record(final Recorded r) {
        if (r.count() == 0) {
            return; // both sides skip an empty message alike
        }
        awaitSubmitted();
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("communicator of rank " + rank() + " is closed");
            }
            if (group != null) {
                group.add(r);
            } else if (r.sendTo() >= 0) {
                p2p(r, null);
            } else {
                p2p(null, r);
            }
        } finally {
            lock.unlock();
        }
    }

    /** One exchange: a send, a receive, or both at once (a group's pair). */
    private void p2p(final Recorded s, final Recorded r) {
        final int sendSlot = 3;
        final int recvSlot = 4;
        final long sb = s == null ? 0 : s.count() * s.type().size();
        final long rb = r == null ? 0 : r.count() * r.type().size();
        final Buffer sendBuf = s == null ? null : p2pBuffer(s.buf(), sb, sendSlot, true);
        final Buffer recvBuf = r == null ? null : p2pBuffer(r.buf(), rb, recvSlot, false);
        final DataType t = s != null ? s.type() : r.type();
        final DeviceReducer dr = engine.deviceReducer();
        if (sendBuf != null && dr != null && sendBuf.dev() != null && !sendBuf.direct()) {
            dr.bounceUp(sendBuf, sb);
        }
        engine.exchange(s == null ? -1 : s.sendTo(), sendBuf == null ? recvBuf : sendBuf, 0, sb,
            r == null ? -1 : r.recvFrom(), recvBuf == null ? sendBuf : recvBuf, 0, rb, null, t);
        if (recvBuf != null) {
            if (r.buf() instanceof MemorySegment m) {
                copyOut(recvBuf, m, rb);
            } else if (dr != null && !recvBuf.direct()) {
                dr.bounceDown(recvBuf, rb);
            }
        }
    }

    private Buffer p2pBuffer(final Object buf, final long bytes, final int slot, final boolean in) {
        if (buf instanceof MemorySegment m) {
            return in ? input(m, bytes, slot) : output(m, bytes, slot);
        }
        return device((DeviceBuffer) buf);
    }

    // ------------------------------------------------------------------------------------------------ GPU calls

    /** The registration of a device buffer of this rank's GPU, with a host half for the bounce path. */
    private Buffer device(final DeviceBuffer d) {
        Objects.requireNonNull(d, "device buffer");
        final GpuDevice g = gpu();
        if (g == null) {
            throw new IllegalArgumentException("a device buffer on a communicator without a GPU: open it with "
                + "CommConfig.gpu(...)");
        }
        Buffer b = devRegs.get(d);
        if (b == null) {
            final Arena a = Arena.ofShared();
            try {
                b = engine.register(a.allocate(Math.max(1, d.size()), 4096), d);
            } catch (final RuntimeException e) {
                a.close();
                throw e;
            }
            devRegs.put(d, b);
            hostHalves.put(d, a);
        }
        return b;
    }

    private final Map<DeviceBuffer, Arena> hostHalves = new IdentityHashMap<>();

    /**
     * Drops the registration kept for a device buffer (if any): call it before freeing the buffer.
     *
     * @param buf a device buffer a call used
     */
    public void deregister(final DeviceBuffer buf) {
        call(() -> {
            final Buffer b = devRegs.remove(buf);
            if (b != null) {
                engine.deregister(b);
                hostHalves.remove(buf).close();
            }
        });
    }

    /** Device scratch of at least {@code bytes}, registered, whole pages. */
    private Buffer deviceScratch(final long bytes) {
        final GpuDevice g = gpu();
        if (!devScratch.isEmpty() && devScratch.get(0).size() >= bytes) {
            return device(devScratch.get(0));
        }
        if (!devScratch.isEmpty()) {
            final DeviceBuffer old = devScratch.remove(0);
            engine.deregister(devRegs.remove(old));
            hostHalves.remove(old).close();
            g.free(old);
        }
        final DeviceBuffer d = g.alloc((Math.max(1, bytes) + 4095) / 4096 * 4096);
        devScratch.add(d);
        return device(d);
    }

    private static void holds(final DeviceBuffer d, final long bytes, final String what) {
        Objects.requireNonNull(d, what);
        if (d.size() < bytes) {
            throw new IllegalArgumentException(what + " holds " + d.size() + " bytes, the call needs " + bytes);
        }
    }

    /** What a GPU call does with its registered buffers. */
    private interface GpuBody {
        void run(Buffer in, Buffer out);
    }

    /**
     * Runs a collective on device buffers: without GDR the input goes up into its host half first and the output
     * comes down after; with GDR the NIC and the reduction kernels work in device memory.
     */
    private void gpuCall(final DeviceBuffer send, final long sendBytes, final DeviceBuffer recv,
                         final long recvBytes, final GpuBody body) {
        final Buffer in = device(send);
        final Buffer out = recv == send ? in : device(recv);
        final DeviceReducer dr = engine.deviceReducer();
        if (!in.direct()) {
            dr.bounceUp(in, sendBytes);
        }
        body.run(in, out);
        if (!out.direct()) {
            dr.bounceDown(out, recvBytes);
        }
    }

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)} on device buffers of this rank's GPU.
     *
     * @param send  input
     * @param recv  output (may be {@code send})
     * @param count elements
     * @param type  element type
     * @param op    reduction
     */
    public void allReduce(final DeviceBuffer send, final DeviceBuffer recv, final long count, final DataType type,
                          final RedOp op) {
        final long b = bytes(count, type, "allReduce");
        holds(send, b, "send buffer");
        holds(recv, b, "receive buffer");
        Objects.requireNonNull(op, "op");
        call(() -> gpuCall(send, b, recv, b, (in, out) -> Collectives.allReduce(engine, in, out, count, type, op)));
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)} on device buffers of this rank's GPU.
     *
     * @param send  input, {@code count} elements
     * @param recv  output, {@code size() * count} elements (another buffer than send)
     * @param count elements per rank
     * @param type  element type
     */
    public void allGather(final DeviceBuffer send, final DeviceBuffer recv, final long count, final DataType type) {
        final long bb = bytes(count, type, "allGather");
        final long total = bytes(count * size(), type, "allGather");
        holds(send, bb, "send buffer");
        holds(recv, total, "receive buffer");
        distinct(send, recv, "allGather");
        call(() -> gpuCall(send, bb, recv, total, (in, out) -> Collectives.allGather(engine, in, out, count, type)));
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)} on device buffers of this rank's
     * GPU.
     *
     * @param send      input, {@code size() * recvCount} elements
     * @param recv      output, {@code recvCount} elements (another buffer than send)
     * @param recvCount elements each rank receives
     * @param type      element type
     * @param op        reduction
     */
    public void reduceScatter(final DeviceBuffer send, final DeviceBuffer recv, final long recvCount,
                              final DataType type, final RedOp op) {
        final long bb = bytes(recvCount, type, "reduceScatter");
        final long total = bytes(recvCount * size(), type, "reduceScatter");
        holds(send, total, "send buffer");
        holds(recv, bb, "receive buffer");
        distinct(send, recv, "reduceScatter");
        Objects.requireNonNull(op, "op");
        call(() -> gpuCall(send, total, recv, bb, (in, out) -> Collectives.reduceScatter(engine, in,
            deviceScratch(total), out, recvCount, type, op)));
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)} on device buffers of this rank's GPU.
     *
     * @param send  the root's input
     * @param recv  output (may be {@code send})
     * @param count elements
     * @param type  element type
     * @param root  the rank whose data goes out
     */
    public void broadcast(final DeviceBuffer send, final DeviceBuffer recv, final long count, final DataType type,
                          final int root) {
        final long b = bytes(count, type, "broadcast");
        holds(send, b, "send buffer");
        holds(recv, b, "receive buffer");
        root(root);
        call(() -> gpuCall(send, b, recv, b, (in, out) -> Collectives.broadcast(engine, in, out, count, type, root)));
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)} on device buffers of this rank's GPU
     * (every rank gives a receive buffer: off the root the engine passes partial results through it).
     *
     * @param send  input
     * @param recv  output on the root (may be {@code send})
     * @param count elements
     * @param type  element type
     * @param op    reduction
     * @param root  the rank that receives the result
     */
    public void reduce(final DeviceBuffer send, final DeviceBuffer recv, final long count, final DataType type,
                       final RedOp op, final int root) {
        final long b = bytes(count, type, "reduce");
        holds(send, b, "send buffer");
        holds(recv, b, "receive buffer");
        root(root);
        Objects.requireNonNull(op, "op");
        call(() -> gpuCall(send, b, recv, b, (in, out) -> Collectives.reduce(engine, in, out, count, type, op,
            root)));
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)} on device buffers of this rank's GPU.
     *
     * @param send  input, {@code size() * count} elements
     * @param recv  output, {@code size() * count} elements (another buffer than send)
     * @param count elements per block
     * @param type  element type
     */
    public void allToAll(final DeviceBuffer send, final DeviceBuffer recv, final long count, final DataType type) {
        final long total = bytes(count * size(), type, "allToAll");
        holds(send, total, "send buffer");
        holds(recv, total, "receive buffer");
        distinct(send, recv, "allToAll");
        call(() -> gpuCall(send, total, recv, total, (in, out) -> Collectives.allToAll(engine, in, out, count,
            type)));
    }

    /**
     * {@link #send(MemorySegment, long, DataType, int)} from a device buffer of this rank's GPU.
     *
     * @param buf   the data
     * @param count elements
     * @param type  element type
     * @param peer  the receiving rank
     */
    public void send(final DeviceBuffer buf, final long count, final DataType type, final int peer) {
        holds(buf, bytes(count, type, "send"), "send buffer");
        peer(peer);
        record(new Recorded(null, peer, -1, buf, 0, count, type));
    }

    /**
     * {@link #recv(MemorySegment, long, DataType, int)} into a device buffer of this rank's GPU.
     *
     * @param buf   where the data lands
     * @param count elements
     * @param type  element type
     * @param peer  the sending rank
     */
    public void recv(final DeviceBuffer buf, final long count, final DataType type, final int peer) {
        holds(buf, bytes(count, type, "recv"), "receive buffer");
        peer(peer);
        record(new Recorded(null, -1, peer, buf, 0, count, type));
    }

    private static void distinct(final DeviceBuffer a, final DeviceBuffer b, final String what) {
        if (a == b) {
            throw new IllegalArgumentException(what + " on device buffers needs different send and receive buffers");
        }
    }

    // ------------------------------------------------------------------------------------------------ arrays
    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)} of {@code send.length} floats.
     *
     * @param send this rank's input
     * @param recv the output, at least as long (may be {@code send})
     * @param op   the reduction
     */
    public void allReduce(final float[] send, final float[] recv, final RedOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT32, op);
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)} of {@code send.length} floats per rank.
     *
     * @param send this rank's block
     * @param recv {@code size() * send.length} elements
     */
    public void allGather(final float[] send, final float[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT32);
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}: this rank receives
     * {@code recv.length} floats.
     *
     * @param send {@code size() * recv.length} elements
     * @param recv this rank's reduced block
     * @param op   the reduction
     */
    public void reduceScatter(final float[] send, final float[] recv, final RedOp op) {
        reduceScatter(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), recv.length, DataType.FLOAT32, op);
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)} in place: the root's {@code buf} in
     * every rank's {@code buf}.
     *
     * @param buf  the root's data; the output everywhere
     * @param root the rank whose data goes out
     */
    public void broadcast(final float[] buf, final int root) {
        final MemorySegment s = MemorySegment.ofArray(buf);
        broadcast(s, s, buf.length, DataType.FLOAT32, root);
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)} of {@code send.length} floats.
     *
     * @param send this rank's input
     * @param recv the root's output (may be {@code send}); null on other ranks
     * @param op   the reduction
     * @param root the rank that receives the result
     */
    public void reduce(final float[] send, final float[] recv, final RedOp op, final int root) {
        reduce(MemorySegment.ofArray(send), recv == null ? null : MemorySegment.ofArray(recv), send.length,
            DataType.FLOAT32, op, root);
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}: {@code send.length / size()} floats to each
     * rank.
     *
     * @param send {@code size()} blocks
     * @param recv {@code size()} blocks
     */
    public void allToAll(final float[] send, final float[] recv) {
        if (send.length % size() != 0) {
            throw new IllegalArgumentException("allToAll: " + send.length + " elements are not " + size()
                + " equal blocks");
        }
        allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length / size(), DataType.FLOAT32);
    }

    /**
     * {@link #send(MemorySegment, long, DataType, int)} of {@code buf.length} floats.
     *
     * @param buf  the data
     * @param peer the receiving rank
     */
    public void send(final float[] buf, final int peer) {
        send(MemorySegment.ofArray(buf), buf.length, DataType.FLOAT32, peer);
    }

    /**
     * {@link #recv(MemorySegment, long, DataType, int)} of {@code buf.length} floats.
     *
     * @param buf  where the data lands
     * @param peer the sending rank
     */
    public void recv(final float[] buf, final int peer) {
        recv(MemorySegment.ofArray(buf), buf.length, DataType.FLOAT32, peer);
    }

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)} of {@code send.length} doubles.
     *
     * @param send this rank's input
     * @param recv the output, at least as long (may be {@code send})
     * @param op   the reduction
     */
    public void allReduce(final double[] send, final double[] recv, final RedOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT64, op);
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)} of {@code send.length} doubles per rank.
     *
     * @param send this rank's block
     * @param recv {@code size() * send.length} elements
     */
    public void allGather(final double[] send, final double[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT64);
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}: this rank receives
     * {@code recv.length} doubles.
     *
     * @param send {@code size() * recv.length} elements
     * @param recv this rank's reduced block
     * @param op   the reduction
     */
    public void reduceScatter(final double[] send, final double[] recv, final RedOp op) {
        reduceScatter(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), recv.length, DataType.FLOAT64, op);
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)} in place: the root's {@code buf} in
     * every rank's {@code buf}.
     *
     * @param buf  the root's data; the output everywhere
     * @param root the rank whose data goes out
     */
    public void broadcast(final double[] buf, final int root) {
        final MemorySegment s = MemorySegment.ofArray(buf);
        broadcast(s, s, buf.length, DataType.FLOAT64, root);
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)} of {@code send.length} doubles.
     *
     * @param send this rank's input
     * @param recv the root's output (may be {@code send}); null on other ranks
     * @param op   the reduction
     * @param root the rank that receives the result
     */
    public void reduce(final double[] send, final double[] recv, final RedOp op, final int root) {
        reduce(MemorySegment.ofArray(send), recv == null ? null : MemorySegment.ofArray(recv), send.length,
            DataType.FLOAT64, op, root);
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}: {@code send.length / size()} doubles to each
     * rank.
     *
     * @param send {@code size()} blocks
     * @param recv {@code size()} blocks
     */
    public void allToAll(final double[] send, final double[] recv) {
        if (send.length % size() != 0) {
            throw new IllegalArgumentException("allToAll: " + send.length + " elements are not " + size()
                + " equal blocks");
        }
        allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length / size(), DataType.FLOAT64);
    }

    /**
     * {@link #send(MemorySegment, long, DataType, int)} of {@code buf.length} doubles.
     *
     * @param buf  the data
     * @param peer the receiving rank
     */
    public void send(final double[] buf, final int peer) {
        send(MemorySegment.ofArray(buf), buf.length, DataType.FLOAT64, peer);
    }

    /**
     * {@link #recv(MemorySegment, long, DataType, int)} of {@code buf.length} doubles.
     *
     * @param buf  where the data lands
     * @param peer the sending rank
     */
    public void recv(final double[] buf, final int peer) {
        recv(MemorySegment.ofArray(buf), buf.length, DataType.FLOAT64, peer);
    }

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)} of {@code send.length} ints.
     *
     * @param send this rank's input
     * @param recv the output, at least as long (may be {@code send})
     * @param op   the reduction
     */
    public void allReduce(final int[] send, final int[] recv, final RedOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT32, op);
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)} of {@code send.length} ints per rank.
     *
     * @param send this rank's block
     * @param recv {@code size() * send.length} elements
     */
    public void allGather(final int[] send, final int[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT32);
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}: this rank receives
     * {@code recv.length} ints.
     *
     * @param send {@code size() * recv.length} elements
     * @param recv this rank's reduced block
     * @param op   the reduction
     */
    public void reduceScatter(final int[] send, final int[] recv, final RedOp op) {
        reduceScatter(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), recv.length, DataType.INT32, op);
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)} in place: the root's {@code buf} in
     * every rank's {@code buf}.
     *
     * @param buf  the root's data; the output everywhere
     * @param root the rank whose data goes out
     */
    public void broadcast(final int[] buf, final int root) {
        final MemorySegment s = MemorySegment.ofArray(buf);
        broadcast(s, s, buf.length, DataType.INT32, root);
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)} of {@code send.length} ints.
     *
     * @param send this rank's input
     * @param recv the root's output (may be {@code send}); null on other ranks
     * @param op   the reduction
     * @param root the rank that receives the result
     */
    public void reduce(final int[] send, final int[] recv, final RedOp op, final int root) {
        reduce(MemorySegment.ofArray(send), recv == null ? null : MemorySegment.ofArray(recv), send.length,
            DataType.INT32, op, root);
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}: {@code send.length / size()} ints to each
     * rank.
     *
     * @param send {@code size()} blocks
     * @param recv {@code size()} blocks
     */
    public void allToAll(final int[] send, final int[] recv) {
        if (send.length % size() != 0) {
            throw new IllegalArgumentException("allToAll: " + send.length + " elements are not " + size()
                + " equal blocks");
        }
        allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length / size(), DataType.INT32);
    }

    /**
     * {@link #send(MemorySegment, long, DataType, int)} of {@code buf.length} ints.
     *
     * @param buf  the data
     * @param peer the receiving rank
     */
    public void send(final int[] buf, final int peer) {
        send(MemorySegment.ofArray(buf), buf.length, DataType.INT32, peer);
    }

    /**
     * {@link #recv(MemorySegment, long, DataType, int)} of {@code buf.length} ints.
     *
     * @param buf  where the data lands
     * @param peer the sending rank
     */
    public void recv(final int[] buf, final int peer) {
        recv(MemorySegment.ofArray(buf), buf.length, DataType.INT32, peer);
    }

    /**
     * {@link #allReduce(MemorySegment, MemorySegment, long, DataType, RedOp)} of {@code send.length} longs.
     *
     * @param send this rank's input
     * @param recv the output, at least as long (may be {@code send})
     * @param op   the reduction
     */
    public void allReduce(final long[] send, final long[] recv, final RedOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT64, op);
    }

    /**
     * {@link #allGather(MemorySegment, MemorySegment, long, DataType)} of {@code send.length} longs per rank.
     *
     * @param send this rank's block
     * @param recv {@code size() * send.length} elements
     */
    public void allGather(final long[] send, final long[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT64);
    }

    /**
     * {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, RedOp)}: this rank receives
     * {@code recv.length} longs.
     *
     * @param send {@code size() * recv.length} elements
     * @param recv this rank's reduced block
     * @param op   the reduction
     */
    public void reduceScatter(final long[] send, final long[] recv, final RedOp op) {
        reduceScatter(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), recv.length, DataType.INT64, op);
    }

    /**
     * {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)} in place: the root's {@code buf} in
     * every rank's {@code buf}.
     *
     * @param buf  the root's data; the output everywhere
     * @param root the rank whose data goes out
     */
    public void broadcast(final long[] buf, final int root) {
        final MemorySegment s = MemorySegment.ofArray(buf);
        broadcast(s, s, buf.length, DataType.INT64, root);
    }

    /**
     * {@link #reduce(MemorySegment, MemorySegment, long, DataType, RedOp, int)} of {@code send.length} longs.
     *
     * @param send this rank's input
     * @param recv the root's output (may be {@code send}); null on other ranks
     * @param op   the reduction
     * @param root the rank that receives the result
     */
    public void reduce(final long[] send, final long[] recv, final RedOp op, final int root) {
        reduce(MemorySegment.ofArray(send), recv == null ? null : MemorySegment.ofArray(recv), send.length,
            DataType.INT64, op, root);
    }

    /**
     * {@link #allToAll(MemorySegment, MemorySegment, long, DataType)}: {@code send.length / size()} longs to each
     * rank.
     *
     * @param send {@code size()} blocks
     * @param recv {@code size()} blocks
     */
    public void allToAll(final long[] send, final long[] recv) {
        if (send.length % size() != 0) {
            throw new IllegalArgumentException("allToAll: " + send.length + " elements are not " + size()
                + " equal blocks");
        }
        allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length / size(), DataType.INT64);
    }

    /**
     * {@link #send(MemorySegment, long, DataType, int)} of {@code buf.length} longs.
     *
     * @param buf  the data
     * @param peer the receiving rank
     */
    public void send(final long[] buf, final int peer) {
        send(MemorySegment.ofArray(buf), buf.length, DataType.INT64, peer);
    }

    /**
     * {@link #recv(MemorySegment, long, DataType, int)} of {@code buf.length} longs.
     *
     * @param buf  where the data lands
     * @param peer the sending rank
     */
    public void recv(final long[] buf, final int peer) {
        recv(MemorySegment.ofArray(buf), buf.length, DataType.INT64, peer);
    }

    // ------------------------------------------------------------------------------------------------ close

    /**
     * Closes the communicator: waits for its asynchronous calls (bounded by the config's timeout without
     * progress), gives back every registration and staging buffer, and leaves the run. Every rank closes its
     * communicator; the close of the NICs waits for the others at a barrier.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
        }
        RuntimeException pending = null;
        try {
            awaitSubmitted();
        } catch (final RuntimeException e) {
            pending = e;
        }
        lock.lock();
        try {
            synchronized (this) {
                closed = true;
                if (ops != null) {
                    ops.shutdownNow();
                }
            }
            if (pending != null) {
                bootstrap.abort(String.valueOf(pending.getMessage()));
            }
            for (final Reg r : regs.values()) {
                quietly(() -> engine.deregister(r.buf()));
            }
            regs.clear();
            for (final Stage s : stages) {
                if (s != null) {
                    quietly(() -> engine.deregister(s.buf()));
                    s.arena().close();
                }
            }
            stages.clear();
            for (final Map.Entry<DeviceBuffer, Buffer> e : devRegs.entrySet()) {
                quietly(() -> engine.deregister(e.getValue()));
            }
            devRegs.clear();
            final GpuDevice g = gpu();
            for (final DeviceBuffer d : devScratch) {
                quietly(() -> g.free(d));
            }
            devScratch.clear();
            try {
                world.close();
            } finally {
                hostHalves.values().forEach(Arena::close);
                hostHalves.clear();
                bootstrap.close();
                if (sharedDriver) {
                    InJvmDrivers.release(config.id().runId());
                }
            }
        } finally {
            lock.unlock();
        }
        if (pending != null) {
            throw pending;
        }
    }

    private static void quietly(final Runnable r) {
        try {
            r.run();
        } catch (final RuntimeException ignored) {
            // closing after a failure: the NIC may be gone already, and the rest must still be given back
        }
    }

    @Override
    public String toString() {
        return "Comm[rank " + rank() + " of " + size() + ", " + config.fabric().wireName() + "]";
    }
}
