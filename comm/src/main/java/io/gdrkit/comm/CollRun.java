/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * nccl-tests' loop for one collective over a size sweep, on one rank (every rank calls it with the same
 * arguments): per size, warm-up iterations, timed iterations out-of-place, the same in-place, and for each a
 * checked run on fresh inputs (each element of rank r's input is a function of r and its index, small integers
 * so that every type holds every result exactly), counting every wrong element. Times and wrong counts are
 * gathered over the bootstrap; every rank returns the same rows.
 */
public final class CollRun {
    /**
     * What to run. Sizes are bytes as nccl-tests' -b/-e/-f give them.
     *
     * @param op        the collective
     * @param type      the element type
     * @param redop     the reduction operator, for a collective that reduces
     * @param root      the root rank, for a collective that has one
     * @param minBytes  the smallest size (-b)
     * @param maxBytes  the largest size (-e)
     * @param factor    the factor between successive sizes (-f), used when {@code stepBytes} is not positive
     * @param stepBytes the step between successive sizes (-i), or 0 to use {@code factor}
     * @param iters     the timed iterations per size (-n)
     * @param warmup    the untimed iterations per size before them (-w)
     * @param check     true to check every result element (-c)
     * @param transport the transport's name, for the rows
     * @param fabric    the fabric's name, for the rows
     * @param simulated true when the NICs are software ones, for the rows
     * @param warmupMs  how long to run the collective before the sweep so that the JIT compiles it, in milliseconds
     *     (0: none)
     */
    public record Config(CollOp op, DataType type, RedOp redop, int root, long minBytes, long maxBytes,
                         double factor, long stepBytes, int iters, int warmup, boolean check, String transport,
                         String fabric, boolean simulated, long warmupMs) {
        /**
         * Without a JIT warm-up ({@code warmupMs} 0).
         *
         * @param op        the collective
         * @param type      the element type
         * @param redop     the reduction operator, for a collective that reduces
         * @param root      the root rank, for a collective that has one
         * @param minBytes  the smallest size (-b)
         * @param maxBytes  the largest size (-e)
         * @param factor    the factor between successive sizes (-f), used when {@code stepBytes} is not positive
         * @param stepBytes the step between successive sizes (-i), or 0 to use {@code factor}
         * @param iters     the timed iterations per size (-n)
         * @param warmup    the untimed iterations per size before them (-w)
         * @param check     true to check every result element (-c)
         * @param transport the transport's name, for the rows
         * @param fabric    the fabric's name, for the rows
         * @param simulated true when the NICs are software ones, for the rows
         */
        public Config(final CollOp op, final DataType type, final RedOp redop, final int root, final long minBytes,
                      final long maxBytes, final double factor, final long stepBytes, final int iters,
                      final int warmup, final boolean check, final String transport, final String fabric,
                      final boolean simulated) {
            this(op, type, redop, root, minBytes, maxBytes, factor, stepBytes, iters, warmup, check, transport,
                fabric, simulated, 0);
        }

        /**
         * Checks the sizes, iterations and warm-up.
         *
         * @throws IllegalArgumentException naming the bad value
         */
        public Config {
            if (warmupMs < 0 || warmupMs > 600_000) {
                throw new IllegalArgumentException("JIT warm-up " + warmupMs + " ms outside 0..600000");
            }
            if (minBytes < 0 || maxBytes < minBytes) {
                throw new IllegalArgumentException("sizes: smallest " + minBytes + ", largest " + maxBytes + " (need 0 <= smallest <= largest)");
            }
            if (maxBytes > (1L << 31)) {
                throw new IllegalArgumentException("size " + maxBytes + " over 2 GiB: too large for one buffer here");
            }
            if (stepBytes <= 0 && factor <= 1.0 && minBytes != maxBytes) {
                throw new IllegalArgumentException("size factor " + factor + " must be > 1 (or give a size increment)");
            }
            if (iters < 1 || warmup < 0) {
                throw new IllegalArgumentException("iterations " + iters + " / warm-up " + warmup);
            }
        }
    }

    private CollRun() {
    }

    /**
     * The sizes of the sweep, rounded down to whole elements (and to n blocks where the op cuts per rank).
     *
     * @param c the sweep
     * @param n the number of ranks
     * @return the sizes in bytes, smallest first
     */
    public static List<Long> sizes(final Config c, final int n) {
        final List<Long> out = new ArrayList<>();
        final long unit = (long) c.type().size() * (c.op().perRankBlocks() ? n : 1);
        long s = c.minBytes();
        while (s <= c.maxBytes()) {
            out.add(s / unit * unit);
            final long next = c.stepBytes() > 0 ? s + c.stepBytes() : (long) Math.ceil(s * c.factor());
            if (next <= s) {
                if (s == 0) {
                    s = Math.max(1, c.stepBytes());
                    continue;
                }
                break;
            }
            s = next;
        }
        return out;
    }

    /**
     * Runs the sweep; {@code row} sees each row as it is done (all ranks), and all rows are returned.
     *
     * @param comm this rank's communicator; every rank calls this with the same config
     * @param cfg  the sweep
     * @param row  called with each row as it is done, on every rank
     * @return every row, the same on every rank
     */
    public static List<CollResult> run(final Communicator comm, final Config cfg, final Consumer<CollResult> row) {
        final int n = comm.nranks();
        if (cfg.root() < 0 || cfg.root() >= n) {
            throw new IllegalArgumentException("root " + cfg.root() + " outside 0.." + (n - 1));
        }
        final List<Long> sizes = sizes(cfg, n);
        final long max = sizes.isEmpty() ? 0 : sizes.get(sizes.size() - 1);
        final List<CollResult> rows = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            final long cap = Math.max(64, max);
            final DeviceReducer dr = comm.deviceReducer();
            final io.gdrkit.gpu.GpuDevice gpu = dr == null ? null : dr.gpu();
            // device halves in whole pages: a DMA-BUF export (the GDR registration's branch) works on pages
            final long devCap = (cap + 4095) / 4096 * 4096;
            final RegisteredBuffer send = comm.register(arena.allocate(cap, 4096), gpu == null ? null : gpu.alloc(devCap));
            final RegisteredBuffer recv = comm.register(arena.allocate(cap, 4096), gpu == null ? null : gpu.alloc(devCap));
            final RegisteredBuffer scratch = comm.register(arena.allocate(cap, 4096), gpu == null ? null : gpu.alloc(devCap));
            // each row's tally (this rank's time and wrong elements) travels by the communicator's own allgather,
            // as nccl-tests and MPI benchmarks reduce theirs: a rank that finished its timed calls first keeps
            // polling shared memory meanwhile instead of waking socket threads of its own and of the bootstrap root,
            // which on a host with fewer CPUs than ranks took CPU from ranks still in their last timed calls
            final Tally tally = new Tally(comm, arena);
            try {
                if (cfg.warmupMs() > 0 && max > 0) {
                    jitWarmup(comm, cfg, sizes, send, recv, scratch, tally);
                }
                for (final long bytes : sizes) {
                    final double[] oop = measure(comm, cfg, bytes, send, recv, scratch, false, tally);
                    final double[] ip = measure(comm, cfg, bytes, send, recv, scratch, true, tally);
                    final double sec = oop[0] / 1e6;
                    final double ipSec = ip[0] / 1e6;
                    final double alg = sec > 0 ? bytes / sec / 1e9 : 0;
                    final double ipAlg = ipSec > 0 ? bytes / ipSec / 1e9 : 0;
                    final CollResult.Placement where = gpu == null ? CollResult.Placement.HOST
                        : new CollResult.Placement("gpu", gpu.describe(), gpu.isSimulated(), gpu.isSimulated()
                        ? "sim-sm-workers" : "gpu-kernel", comm.gdr().dataPath(), dr.launches(), comm.gdr(),
                        comm.gdr().nicMr(), dr.bouncedBytes(), comm.flushes(), comm.gpuSharing());
                    final CollResult r = new CollResult(cfg.op(), bytes, bytes / cfg.type().size(), cfg.type(),
                        cfg.op().reduces() ? cfg.redop().ncclName() : "none", cfg.op().rooted() ? cfg.root() : -1, n,
                        cfg.transport(), cfg.fabric(), cfg.simulated() || (gpu != null && gpu.isSimulated()), oop[0],
                        alg, alg * cfg.op().busFactor(n), (long) oop[1], ip[0], ipAlg, ipAlg * cfg.op().busFactor(n),
                        (long) ip[1], where, comm.nicProgress(), comm.directPath(), comm.reduceThreads(),
                        comm.binding(), comm.nicMtu(), comm.devices(), comm.channels(), comm.choose(cfg.op(), bytes));
                    rows.add(r);
                    row.accept(r);
                }
            } finally {
                tally.close();
                comm.deregister(send);
                comm.deregister(recv);
                comm.deregister(scratch);
                if (gpu != null) {
                    gpu.free(send.dev());
                    gpu.free(recv.dev());
                    gpu.free(scratch.dev());
                }
            }
        }
        return rows;
    }

    /** The most sizes of a sweep the JIT warm-up visits (spread over the sweep, first and last included). */
    static final int WARM_SIZES = 64;

    /** The most dry runs of the sweep after the JIT warm-up (fewer once one leaves the JIT quiet on every rank). */
    static final int DRY_PASSES = 4;

    /**
     * Runs every size of the sweep (up to {@value #WARM_SIZES} of them, spread over it) before anything is timed,
     * round after round, until the JIT has compiled the hot path on every rank, or {@code warmupMs} has passed (the
     * cap). The interpreter is about 100x slower than compiled code, and C2 compiles a loop for the branches its
     * profile saw: warmed on the smallest and the largest size only, a size in between takes a branch the compiled
     * code never saw (the reduction's bulk loop at a new trip count, another algorithm), the code is thrown away
     * (an uncommon trap) and the next calls run in the interpreter until it is compiled again, which at 20 timed
     * calls per size is the whole row. "Compiled" means this JVM's total compilation time did not grow during the
     * last round, on every rank (at least 3 rounds). Ranks run the same rounds and decide together through the
     * bootstrap, so every rank runs the same number of calls.
     */
    private static void jitWarmup(final Communicator comm, final Config cfg, final List<Long> sizes, final RegisteredBuffer send,
                                  final RegisteredBuffer recv, final RegisteredBuffer scratch, final Tally tally) {
        final List<Long> warm = warmSizes(sizes);
        final java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory
            .getCompilationMXBean();
        final boolean timed = jit != null && jit.isCompilationTimeMonitoringSupported();
        final long until = System.nanoTime() + cfg.warmupMs() * 1_000_000L;
        int rounds = 0;
        boolean more = true;
        while (more) {
            final long before = timed ? jit.getTotalCompilationTime() : 0;
            for (final long bytes : warm) {
                // batches grow from round to round (the same on every rank): a compilation takes milliseconds and
                // the total compilation time grows only when one ends, so a short round looks quiet while C2 is
                // still at work
                final int batch = bytes <= 65536 ? 64 << Math.min(rounds, 4) : 2 << Math.min(rounds, 2);
                loop(comm, cfg, bytes, send, recv, scratch, false, batch / 2);
                loop(comm, cfg, bytes, send, recv, scratch, true, batch - batch / 2);
            }
            rounds++;
            final boolean compiling = !timed || jit.getTotalCompilationTime() != before;
            more = anyRank(comm, System.nanoTime() < until && (rounds < 3 || compiling));
        }
        // then the sweep itself, untimed and unreported: its row steps (the warm-up calls, the barrier, the
        // check, the gathering of the times) take branches the calls alone never took (a wait longer than the spin,
        // a heap segment beside the mapped ones), and the code compiled without them is thrown away the first time
        // they are taken; without this dry run that happened in the first timed rows, which then ran interpreted
        // code for hundreds of microseconds per call. Again while it made the JIT compile (up to DRY_PASSES): a row
        // step runs once per row, so one pass leaves those methods in the middle of their tiers, and their
        // compilations then ran during timed rows, where a compiler thread that takes a CPU for a millisecond on a
        // host with fewer CPUs than ranks stalls every rank (4 ranks on 2 cores, 8 B: 16.5 us per call, median of 5
        // runs, with one pass; 3.9 us with up to four)
        for (int pass = 0; pass < DRY_PASSES; pass++) {
            final long before = timed ? jit.getTotalCompilationTime() : 0;
            for (final long bytes : warmSizes(sizes)) {
                measure(comm, cfg, bytes, send, recv, scratch, false, tally);
                measure(comm, cfg, bytes, send, recv, scratch, true, tally);
            }
            if (!anyRank(comm, System.nanoTime() < until && (!timed || jit.getTotalCompilationTime() != before))) {
                break;
            }
        }
        // what start-up and the warm-up allocated is collected now, not by a young collection a few rows into the
        // timed sweep: the collectives allocate nothing per call, but a pause of milliseconds in any one rank's JVM
        // lands in a row's 20 timed calls as hundreds of microseconds each (JMH collects between iterations too)
        System.gc();
        comm.bootstrap().barrier();
    }

    /**
     * Whether any rank says yes, gathered through the bootstrap: the same answer on every rank, so that all run the
     * same number of warm-up calls (never a rank's own clock alone).
     */
    private static boolean anyRank(final Communicator comm, final boolean mine) {
        boolean any = false;
        for (final byte[] b : comm.bootstrap().allGather(new byte[] {(byte) (mine ? 1 : 0)})) {
            any |= b.length == 1 && b[0] == 1;
        }
        return any;
    }

    /**
     * The sizes the JIT warm-up and the dry run visit: the sweep's sizes, each once, at most {@value #WARM_SIZES}
     * spread evenly. A row of 0 bytes (an allgather of 8 B over 4 ranks rounds to 0 elements per rank) is one of
     * them: C2 compiles each collective for the branches its profile saw, and with the 0-element row left out the
     * first timed row trapped at the zero-count test, and every rank recompiled the collective for 17-25 ms in the
     * middle of the third row (4 ranks on 2 cores, allgather 512 B: 860-1120 us per call against 5).
     */
    static List<Long> warmSizes(final List<Long> sizes) {
        final List<Long> distinct = new ArrayList<>();
        for (final long b : sizes) {
            if (distinct.isEmpty() || distinct.get(distinct.size() - 1) != b) {
                distinct.add(b);
            }
        }
        if (distinct.size() <= WARM_SIZES) {
            return distinct;
        }
        final List<Long> out = new ArrayList<>();
        for (int i = 0; i < WARM_SIZES; i++) {
            out.add(distinct.get((int) ((long) i * (distinct.size() - 1) / (WARM_SIZES - 1))));
        }
        return out;
    }

    /** {slowest rank's average microseconds per iteration, wrong elements over all ranks}. */
    private static double[] measure(final Communicator comm, final Config cfg, final long bytes, final RegisteredBuffer send,
                                    final RegisteredBuffer recv, final RegisteredBuffer scratch, final boolean inPlace,
                                    final Tally tally) {
        loop(comm, cfg, bytes, send, recv, scratch, inPlace, cfg.warmup());
        // the communicator's own barrier, as nccl-tests and the MPI peer (MPI_Barrier) start their clocks: through
        // shared memory every rank leaves it within a cache-line handshake, where the bootstrap's barrier over
        // sockets releases ranks tens of microseconds apart and the first timed call would absorb that skew
        comm.barrier();
        final long t0 = System.nanoTime();
        loop(comm, cfg, bytes, send, recv, scratch, inPlace, cfg.iters());
        final double us = (System.nanoTime() - t0) / 1e3 / cfg.iters();
        long wrong = 0;
        if (cfg.check()) {
            fill(comm, cfg, bytes, send, recv, inPlace);
            final DeviceReducer dr = comm.deviceReducer();
            if (dr != null) {
                dr.toDevice(send, bytes);
                dr.toDevice(recv, bytes);
            }
            comm.barrier();
            runOnce(comm, cfg, bytes, send, recv, scratch, inPlace);
            final RegisteredBuffer out = inPlace ? send : recv;
            if (dr != null) {
                // check what the device holds: spoil the host half first, then bring the device's bytes up
                out.seg().asSlice(0, Math.max(bytes, 1)).fill((byte) 0x7b);
                dr.toHost(out, bytes);
            }
            wrong = check(comm.rank(), comm.nranks(), cfg, bytes, out.seg(), inPlace);
        }
        return tally.gather(us, wrong);
    }

    /**
     * The row's figures of every rank, gathered by the communicator itself (an allgather of two 8-byte words per
     * rank in host memory): the slowest rank's time and the wrong elements of all ranks. A peer's words are its own
     * measurements; they are checked only for being numbers a rank can report (finite, not negative).
     */
    static final class Tally {
        private final Communicator comm;
        private final RegisteredBuffer mine;
        private final RegisteredBuffer all;

        Tally(final Communicator comm, final Arena arena) {
            this.comm = comm;
            this.mine = comm.register(arena.allocate(16, 64), null);
            this.all = comm.register(arena.allocate(16L * comm.nranks(), 64), null);
        }

        double[] gather(final double us, final long wrong) {
            mine.seg().set(ValueLayout.JAVA_LONG, 0, Double.doubleToRawLongBits(us));
            mine.seg().set(ValueLayout.JAVA_LONG, 8, wrong);
            Collectives.allGather(comm, mine, all, 2, DataType.INT64);
            return worst(all.seg(), comm.nranks());
        }

        /**
         * {slowest time, wrong elements of all} from {@code n} ranks' reports (time bits, wrong count: two longs
         * each) as gathered.
         *
         * @throws CollException naming the first rank whose report is not a measurement (a time that is negative,
         *                       NaN or infinite, or a negative wrong count)
         */
        static double[] worst(final MemorySegment reports, final int n) {
            double worst = 0;
            long wrongAll = 0;
            for (int r = 0; r < n; r++) {
                final double t = Double.longBitsToDouble(reports.get(ValueLayout.JAVA_LONG, 16L * r));
                final long w = reports.get(ValueLayout.JAVA_LONG, 16L * r + 8);
                if (!(t >= 0) || Double.isInfinite(t) || w < 0) {
                    throw new CollException("rank " + r + " reported a time of " + t + " us and " + w + " wrong "
                        + "elements: not a measurement");
                }
                worst = Math.max(worst, t);
                wrongAll += w;
            }
            return new double[] {worst, wrongAll};
        }

        void close() {
            comm.deregister(mine);
            comm.deregister(all);
        }
    }

    /**
     * {@code count} calls. The warm-up, the JIT warm-up and the timed calls all loop here, so the loop the clock
     * times is one the JIT has already compiled (on-stack replacement keys compiled loops by method and bytecode
     * index): with a loop of its own, the first size's out-of-place row would time the interpreter's loop and the OSR
     * transition.
     */
    private static void loop(final Communicator comm, final Config cfg, final long bytes, final RegisteredBuffer send,
                             final RegisteredBuffer recv, final RegisteredBuffer scratch, final boolean inPlace, final int count) {
        for (int i = 0; i < count; i++) {
            runOnce(comm, cfg, bytes, send, recv, scratch, inPlace);
        }
    }

    /**
     * One call. In-place: the input lives where the output goes (allgather: in block rank of the output;
     * reduce-scatter: the output is block rank of the input); alltoall and sendrecv stage through scratch because
     * their input and output overlap.
     */
    private static void runOnce(final Communicator c, final Config cfg, final long bytes, final RegisteredBuffer send,
                                final RegisteredBuffer recv, final RegisteredBuffer scratch, final boolean inPlace) {
        final DeviceReducer dr = c.deviceReducer();
        if (dr == null || send.direct()) {
            // host memory, or GDR: the NIC and the kernels work where the data is
            call(c, cfg, bytes, send, recv, scratch, inPlace);
            return;
        }
        // GPU buffers without GDR: the input comes up from the device into the bounce half, the output goes back down
        dr.bounceUp(send, bytes);
        call(c, cfg, bytes, send, recv, scratch, inPlace);
        dr.bounceDown(inPlace ? send : recv, bytes);
    }

    private static void call(final Communicator c, final Config cfg, final long bytes, final RegisteredBuffer send,
                             final RegisteredBuffer recv, final RegisteredBuffer scratch, final boolean inPlace) {
        final DataType t = cfg.type();
        final int n = c.nranks();
        final long count = bytes / t.size();
        final RegisteredBuffer out = inPlace ? send : recv;
        switch (cfg.op()) {
            case ALLREDUCE -> Collectives.allReduce(c, send, out, count, t, cfg.redop());
            case ALLGATHER -> {
                final long per = count / n;
                if (inPlace) {
                    Collectives.allGather(c, slice(send, c.rank() * per * t.size()), send, per, t);
                } else {
                    Collectives.allGather(c, send, recv, per, t);
                }
            }
            case REDUCE_SCATTER -> {
                final long per = count / n;
                Collectives.reduceScatter(c, send, scratch, inPlace ? slice(send, c.rank() * per * t.size()) : recv,
                    per, t, cfg.redop());
            }
            case BROADCAST -> Collectives.broadcast(c, send, out, count, t, cfg.root());
            case REDUCE -> Collectives.reduce(c, send, out, count, t, cfg.redop(), cfg.root());
            case ALLTOALL -> {
                if (inPlace) {
                    RegisteredBuffer.copy(send, 0, scratch, 0, bytes);
                    Collectives.allToAll(c, scratch, send, count / n, t);
                } else {
                    Collectives.allToAll(c, send, recv, count / n, t);
                }
            }
            case SENDRECV -> {
                if (inPlace) {
                    RegisteredBuffer.copy(send, 0, scratch, 0, bytes);
                    Collectives.sendRecv(c, scratch, send, count, t);
                } else {
                    Collectives.sendRecv(c, send, recv, count, t);
                }
            }
            default -> throw new IllegalStateException(cfg.op().name());
        }
    }

    private static RegisteredBuffer slice(final RegisteredBuffer b, final long off) {
        if (b.direct()) {
            return new RegisteredBuffer(b.seg().asSlice(off), b.mr(), b.dev(), b.devOff() + off, true, b.hostMr()); // device
        }
        return new RegisteredBuffer(b.seg().asSlice(off), b.mr(), null); // a view of the host half: never a reduction's target
    }

    /** Rank r's input element i. */
    static double input(final CollOp op, final RedOp redop, final int r, final long i) {
        if (!op.reduces()) {
            return Math.floorMod(r * 31L + i * 17L, 97L) - 48;
        }
        return switch (redop) {
            case SUM -> Math.floorMod(r * 3L + i * 7L, 7L) - 3;
            case PROD -> r == 0 ? (i % 3 == 0 ? 2 : i % 3 == 1 ? -1 : 1) : ((r + i) % 2 == 0 ? 1 : -1);
            case MIN, MAX -> Math.floorMod(r * 37L + i * 11L, 101L) - 50;
        };
    }

    static double reduced(final CollOp op, final RedOp redop, final int n, final long i) {
        double v = input(op, redop, 0, i);
        for (int r = 1; r < n; r++) {
            v = redop.apply(v, input(op, redop, r, i));
        }
        return v;
    }

    private static void fill(final Communicator c, final Config cfg, final long bytes, final RegisteredBuffer send,
                             final RegisteredBuffer recv, final boolean inPlace) {
        final DataType t = cfg.type();
        final long count = bytes / t.size();
        final int r = c.rank();
        final int n = c.nranks();
        recv.seg().asSlice(0, Math.max(bytes, 1)).fill((byte) 0x7b);
        send.seg().asSlice(0, Math.max(bytes, 1)).fill((byte) 0x7b);
        switch (cfg.op()) {
            case ALLGATHER -> {
                final long per = count / n;
                final long base = inPlace ? r * per : 0;
                for (long i = 0; i < per; i++) {
                    t.set(send.seg(), base + i, input(cfg.op(), cfg.redop(), r, i));
                }
            }
            case ALLTOALL -> {
                final long per = count / n;
                for (int p = 0; p < n; p++) {
                    for (long i = 0; i < per; i++) {
                        // block p carries (rank, destination, index)
                        t.set(send.seg(), p * per + i, input(cfg.op(), cfg.redop(), r * n + p, i));
                    }
                }
            }
            default -> {
                for (long i = 0; i < count; i++) {
                    t.set(send.seg(), i, input(cfg.op(), cfg.redop(), r, i));
                }
            }
        }
    }

    /** Wrong elements of rank {@code r}'s output {@code m} (of n ranks) after one call on {@link #fill}'s inputs. */
    static long check(final int r, final int n, final Config cfg, final long bytes, final MemorySegment m,
                      final boolean inPlace) {
        final DataType t = cfg.type();
        final long count = bytes / t.size();
        long wrong = 0;
        switch (cfg.op()) {
            case ALLREDUCE -> {
                for (long i = 0; i < count; i++) {
                    wrong += differs(t, m, i, reduced(cfg.op(), cfg.redop(), n, i));
                }
            }
            case REDUCE -> {
                if (r == cfg.root()) {
                    for (long i = 0; i < count; i++) {
                        wrong += differs(t, m, i, reduced(cfg.op(), cfg.redop(), n, i));
                    }
                }
            }
            case BROADCAST -> {
                for (long i = 0; i < count; i++) {
                    wrong += differs(t, m, i, input(cfg.op(), cfg.redop(), cfg.root(), i));
                }
            }
            case ALLGATHER -> {
                final long per = count / n;
                for (int p = 0; p < n; p++) {
                    for (long i = 0; i < per; i++) {
                        wrong += differs(t, m, p * per + i, input(cfg.op(), cfg.redop(), p, i));
                    }
                }
            }
            case REDUCE_SCATTER -> {
                final long per = count / n;
                final long base = inPlace ? r * per : 0;
                for (long i = 0; i < per; i++) {
                    wrong += differs(t, m, base + i, reduced(cfg.op(), cfg.redop(), n, r * per + i));
                }
            }
            case ALLTOALL -> {
                final long per = count / n;
                for (int p = 0; p < n; p++) {
                    for (long i = 0; i < per; i++) {
                        wrong += differs(t, m, p * per + i, input(cfg.op(), cfg.redop(), p * n + r, i));
                    }
                }
            }
            case SENDRECV -> {
                final int from = Math.floorMod(r - 1, n);
                for (long i = 0; i < count; i++) {
                    wrong += differs(t, m, i, input(cfg.op(), cfg.redop(), from, i));
                }
            }
            default -> throw new IllegalStateException(cfg.op().name());
        }
        return wrong;
    }

    private static int differs(final DataType t, final MemorySegment m, final long i, final double expected) {
        return t.get(m, i) == expected ? 0 : 1;
    }
}
