/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapRoot;
import io.gdrkit.comm.bootstrap.WorldEnvironment;
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
public final class Comm implements CommCalls, AutoCloseable {
    /** The most bytes one buffer of one call may hold. */
    public static final long MAX_BYTES = 1L << 31;


    private final CommConfig config;
    private final Bootstrap bootstrap;
    private final CollWorld world;
    private final Communicator engine;
    private final boolean sharedDriver;
    /** Where the world came from: "config", or a {@link WorldEnvironment.Source} label. */
    private volatile String worldSource = "config";
    /** The bootstrap root this rank serves (rank 0 of a world from the environment), closed after the bootstrap. */
    private volatile BootstrapRoot ownedRoot;
    private final ReentrantLock lock = new ReentrantLock();
    /** Registrations, staging and the calls' bodies. */
    private final CommData data;
    private final AtomicLong submitted = new AtomicLong();
    private final AtomicLong finished = new AtomicLong();
    private ExecutorService ops;
    private volatile Thread opThread;
    private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);
    private List<Recorded> group;
    private int groupDepth;
    private boolean closed;

    /** A call recorded inside a group. */
    record Recorded(Runnable collective, int sendTo, int recvFrom, Object buf, long offset, long count,
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
     * @param simulated   true when the data moves through software NICs (the IB transport) or a simulated GPU
     * @param nics        network devices (NICs) per rank
     * @param channels    channels per peer
     * @param directPath  how small collectives travel between ranks of this host
     * @param nicProgress who drives the software NICs
     * @param gpu         the GPU (describe()), or "none"
     * @param dataPath    GDR or host bounce for GPU buffers, or "host memory"
     * @param worldSource where the world came from ({@link WorldEnvironment.Source#label()}: pmix, torchrun, slurm,
     *                    gdrkit, none), or "config" for a communicator opened with an explicit id
     */
    public record Info(int rank, int nranks, Fabric fabric, CollWorld.TransportKind transport, boolean simulated,
                       int nics, int channels, String directPath, String nicProgress, String gpu, String dataPath,
                       String worldSource) {
    }

    Comm(final CommConfig config, final Bootstrap bootstrap, final CollWorld world,
                 final boolean sharedDriver) {
        this.config = config;
        this.bootstrap = bootstrap;
        this.world = world;
        this.engine = world.communicator();
        this.data = new CommData(engine);
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
        return CommOpening.open(config);
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

    /**
     * Opens this rank's communicator from the world its launcher describes in this process's environment: a PMIx
     * launcher ({@code mpirun}, {@code srun --mpi=pmix}), the torchrun / Kubernetes variables ({@code RANK},
     * {@code WORLD_SIZE}, {@code MASTER_ADDR}, {@code MASTER_PORT}), Slurm's ({@code SLURM_PROCID},
     * {@code SLURM_NTASKS} with {@code GDRKIT_MASTER_ADDR}/{@code GDRKIT_MASTER_PORT}), or {@code gdrkit launch}'s
     * ({@code GDRKIT_ID}); with none of them, a world of one. {@link Info#worldSource()} says which was used; the
     * order and the checks are {@link WorldEnvironment}'s. Every rank of the world must call it.
     *
     * @param base fabric, transport, timeout, GPU and tuning; id, rank, number of ranks and token come from the
     *             environment
     * @return the communicator
     * @throws IllegalArgumentException naming a missing, malformed or contradictory variable
     * @throws CollException            when the world cannot be joined or connected (naming why)
     * @throws io.gdrkit.comm.bootstrap.BootstrapException when the root cannot be served or reached in time
     */
    public static Comm fromEnvironment(final CommConfig base) {
        return fromEnvironment(base, System.getenv());
    }

    /**
     * {@link #fromEnvironment(CommConfig)} with the environment given (tests, embedding).
     *
     * @param base fabric, transport, timeout, GPU and tuning
     * @param env  the environment to read the world from
     * @return the communicator
     * @throws IllegalArgumentException naming a missing, malformed or contradictory variable
     * @throws CollException            when the world cannot be joined or connected (naming why)
     * @throws io.gdrkit.comm.bootstrap.BootstrapException when the root cannot be served or reached in time
     */
    public static Comm fromEnvironment(final CommConfig base, final Map<String, String> env) {
        return CommOpening.fromEnvironment(base, env);
    }

    /**
     * Opens with {@code config}, holding {@code root} (closed after the bootstrap) and naming the world's source.
     *
     * @param config the config
     * @param root   the root this rank serves, or null
     * @param source where the world came from
     * @return the communicator
     */
    static Comm open(final CommConfig config, final BootstrapRoot root, final String source) {
        final Comm c = open(config);
        c.ownedRoot = root;
        c.worldSource = source;
        return c;
    }

    /** {@return this rank, {@code 0..size()-1}} */
    public int rank() {
        return engine.rank();
    }

    /** {@return the number of ranks} */
    @Override
    public int size() {
        return engine.nranks();
    }

    /** Native segments registered with the NIC so far (tests: the registration cache reuses them). */
    long registrationsMade() {
        return data.registrationsMade();
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
        // simulated hardware: the software NICs behind IbTransport, or a simulated GPU; SocketTransport's TCP is real
        final boolean simulated = config.transport() == CollWorld.TransportKind.IB || (g != null && g.isSimulated());
        return new Info(rank(), size(), config.fabric(), config.transport(), simulated, engine.devices(),
            engine.channels(), engine.directPath(), engine.nicProgress(), g == null ? "none" : g.describe(),
            g == null ? "host memory" : engine.gdr().dataPath(), worldSource);
    }

    // ------------------------------------------------------------------------------------------------ ordering

    @Override
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
                data.p2p(k < sends.size() ? sends.get(k) : null, k < recvs.size() ? recvs.get(k) : null);
            }
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------------ checks






    /** The same memory: same heap object (or both native) and the same address. */


    // ------------------------------------------------------------------------------------------------ buffers

    /** A registered staging buffer of at least {@code bytes} in slot {@code slot}. */

    /** The registration of a native segment, from the cache when the same live memory was registered before. */

    /**
     * Drops the registration kept for {@code seg} (if any). Call it before freeing memory that a call used, to give
     * the registration back at once rather than when the cache fills or the communicator closes.
     *
     * @param seg the memory a call used
     */
    public void deregister(final MemorySegment seg) {
        call(() -> data.deregister(seg));
    }

    /** The buffer a call reads from {@code seg}: registered native memory, or a staging copy. */

    /** The buffer a call writes for {@code seg}: registered native memory, or staging copied out afterwards. */


    /** A slice of a buffer from {@code off}, sharing its registration. */

    // ------------------------------------------------------------------------------------------------ host calls






















    @Override
    public void barrier() {
        call(data::barrier);
    }

    @Override
    public void allReduce(final MemorySegment send, final MemorySegment recv, final long count, final DataType type,
                          final RedOp op) {
        call(() -> data.hostAllReduce(send, recv, count, type, op));
    }

    @Override
    public void allGather(final MemorySegment send, final MemorySegment recv, final long count, final DataType type) {
        call(() -> data.hostAllGather(send, recv, count, type));
    }

    @Override
    public void reduceScatter(final MemorySegment send, final MemorySegment recv, final long recvCount,
                              final DataType type, final RedOp op) {
        call(() -> data.hostReduceScatter(send, recv, recvCount, type, op));
    }

    @Override
    public void broadcast(final MemorySegment send, final MemorySegment recv, final long count, final DataType type,
                          final int root) {
        call(() -> data.hostBroadcast(send, recv, count, type, root));
    }

    @Override
    public void reduce(final MemorySegment send, final MemorySegment recv, final long count, final DataType type,
                       final RedOp op, final int root) {
        call(() -> data.hostReduce(send, recv, count, type, op, root));
    }

    @Override
    public void allToAll(final MemorySegment send, final MemorySegment recv, final long count, final DataType type) {
        call(() -> data.hostAllToAll(send, recv, count, type));
    }

    @Override
    public void send(final MemorySegment buf, final long count, final DataType type, final int peer) {
        final long bytes = CommData.bytes(count, type, "send");
        CommData.holds(buf, bytes, "send buffer");
        data.peer(peer);
        record(new Recorded(null, peer, -1, buf, 0, count, type));
    }

    @Override
    public void recv(final MemorySegment buf, final long count, final DataType type, final int peer) {
        final long bytes = CommData.bytes(count, type, "recv");
        CommData.holds(buf, bytes, "receive buffer");
        data.peer(peer);
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
                data.p2p(r, null);
            } else {
                data.p2p(null, r);
            }
        } finally {
            lock.unlock();
        }
    }

    /** One exchange: a send, a receive, or both at once (a group's pair). */


    // ------------------------------------------------------------------------------------------------ GPU calls

    /** The registration of a device buffer of this rank's GPU, with a host half for the bounce path. */


    /**
     * Drops the registration kept for a device buffer (if any): call it before freeing the buffer.
     *
     * @param buf a device buffer a call used
     */
    public void deregister(final DeviceBuffer buf) {
        call(() -> data.deregister(buf));
    }

    /** Device scratch of at least {@code bytes}, registered, whole pages. */


    /** What a GPU call does with its registered buffers. */


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
        final long b = CommData.bytes(count, type, "allReduce");
        CommData.holds(send, b, "send buffer");
        CommData.holds(recv, b, "receive buffer");
        Objects.requireNonNull(op, "op");
        call(() -> data.gpuCall(send, b, recv, b, (in, out) -> Collectives.allReduce(engine, in, out, count, type,
            op)));
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
        final long bb = CommData.bytes(count, type, "allGather");
        final long total = CommData.bytes(count * size(), type, "allGather");
        CommData.holds(send, bb, "send buffer");
        CommData.holds(recv, total, "receive buffer");
        CommData.distinct(send, recv, "allGather");
        call(() -> data.gpuCall(send, bb, recv, total, (in, out) -> Collectives.allGather(engine, in, out, count,
            type)));
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
        final long bb = CommData.bytes(recvCount, type, "reduceScatter");
        final long total = CommData.bytes(recvCount * size(), type, "reduceScatter");
        CommData.holds(send, total, "send buffer");
        CommData.holds(recv, bb, "receive buffer");
        CommData.distinct(send, recv, "reduceScatter");
        Objects.requireNonNull(op, "op");
        call(() -> data.gpuCall(send, total, recv, bb, (in, out) -> Collectives.reduceScatter(engine, in,
            data.deviceScratch(total), out, recvCount, type, op)));
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
        final long b = CommData.bytes(count, type, "broadcast");
        CommData.holds(send, b, "send buffer");
        CommData.holds(recv, b, "receive buffer");
        data.root(root);
        call(() -> data.gpuCall(send, b, recv, b, (in, out) -> Collectives.broadcast(engine, in, out, count, type,
            root)));
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
        final long b = CommData.bytes(count, type, "reduce");
        CommData.holds(send, b, "send buffer");
        CommData.holds(recv, b, "receive buffer");
        data.root(root);
        Objects.requireNonNull(op, "op");
        call(() -> data.gpuCall(send, b, recv, b, (in, out) -> Collectives.reduce(engine, in, out, count, type, op,
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
        final long total = CommData.bytes(count * size(), type, "allToAll");
        CommData.holds(send, total, "send buffer");
        CommData.holds(recv, total, "receive buffer");
        CommData.distinct(send, recv, "allToAll");
        call(() -> data.gpuCall(send, total, recv, total, (in, out) -> Collectives.allToAll(engine, in, out, count,
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
        CommData.holds(buf, CommData.bytes(count, type, "send"), "send buffer");
        data.peer(peer);
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
        CommData.holds(buf, CommData.bytes(count, type, "recv"), "receive buffer");
        data.peer(peer);
        record(new Recorded(null, -1, peer, buf, 0, count, type));
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
            data.close();
            try {
                world.close();
            } finally {
                data.closeHostHalves();
                bootstrap.close();
                if (sharedDriver) {
                    InJvmDrivers.release(config.id().runId());
                }
                final BootstrapRoot r = ownedRoot;
                if (r != null) {
                    // the other ranks say goodbye to the root this rank serves: wait for them, bounded
                    try {
                        r.await(config.timeout());
                    } catch (final InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        r.close();
                    }
                }
            }
        } finally {
            lock.unlock();
        }
        if (pending != null) {
            throw pending;
        }
    }

    @Override
    public String toString() {
        return "Comm[rank " + rank() + " of " + size() + ", " + config.fabric().wireName() + "]";
    }
}
