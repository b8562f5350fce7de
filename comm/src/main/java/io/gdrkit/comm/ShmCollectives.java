/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.lang.foreign.MemorySegment;

/**
 * Every collective, at every size, through the shared-memory slots of {@link ShmDirect}, when every rank of the
 * world is on this host: no NIC, no system call, no thread but the ranks' own (and their reduce threads). As
 * Open MPI's vader BTL and NCCL's SHM transport do, a rank writes its part into its own mapped segment and publishes
 * it with a release store; its peers read it in place with acquire loads.
 *
 * <ul>
 * <li>direct: each round, every rank that has input publishes one chunk of it (at most a slot, or the proto's
 * round size); every rank that needs it reads every peer's chunk where it lies and reduces (in rank order, the same
 * bits on every rank) or copies it. Allreduce and reduce below the tuning's limit, and every other operation:
 * allgather, broadcast, sendrecv publish their chunk; reduce-scatter and alltoall publish one piece per destination
 * block side by side in the slot, and each rank reads only its own piece of every peer's slot.</li>
 * <li>rsag (allreduce and reduce above the limit): round A publishes a chunk; each rank reduces only its 1/n
 * slice of it, in rank order, straight into its own next slot, and round B publishes the slices; every rank (the
 * root only, for reduce) copies them all. The reduction is split over every rank of the host in parallel, and each
 * element is still reduced in rank order, so allreduce gives the same bits on every rank.</li>
 * </ul>
 *
 * <p>Waits spin for {@code gdrkit.coll.spin.rounds} polls, then yield, then park ({@link Pacer}), and end at the
 * communicator's timeout with a {@link CollException} naming what they waited for; a peer that died is seen through
 * the bootstrap within a millisecond. What a peer published is checked ({@link ShmDirect#arrived}) before use.
 */
final class ShmCollectives {
    private final ShmDirect shm;
    private final int rank;
    private final int n;
    private final Pacer pace;
    private final long timeoutNanos;
    private final ParallelReducer reducer;
    /** The data bytes of one slot. */
    private final int slot;

    ShmCollectives(final ShmDirect shm, final int rank, final int n, final Pacer pace, final long timeoutNanos,
                   final ParallelReducer reducer) {
        this.shm = shm;
        this.rank = rank;
        this.n = n;
        this.pace = pace;
        this.timeoutNanos = timeoutNanos;
        this.reducer = reducer;
        this.slot = shm.slotBytes();
    }

    /** {@return the data bytes of one round} */
    int slotBytes() {
        return slot;
    }

    /** A round's header: a marker, the operation, type, reduction, phase and root, checked by every reader. */
    private static long header(final CollOp what, final DataType t, final RedOp op, final int phase, final int root) {
        return 0x5343L << 48 | (long) what.ordinal() << 40 | (long) t.ordinal() << 32
            | (long) (op == null ? 0xff : op.ordinal()) << 24 | (long) (phase & 0xff) << 16 | (root & 0xffffL);
    }

    // ---------------------------------------------------------------- the round's steps

    /** Waits until the next round's slot is free and returns its number: the caller writes at {@link #at}. */
    private long begin() {
        final long d = shm.nextRound();
        long deadline = 0;
        int idle = 0;
        while (!shm.slotFree(d)) {
            if (++idle > pace.spins) {
                deadline = deadline == 0 ? System.nanoTime() + timeoutNanos : deadline;
                if (pace.due(deadline)) {
                    pace.check(deadline, "every rank to finish reading shared-memory round " + (d - ShmDirect.DEPTH)
                        + " before its slot is written again");
                }
            }
            pace.idle(idle);
        }
        return d;
    }

    /** A round in which this rank publishes nothing (it still counts the round, as every rank does). */
    private long skip() {
        return shm.nextRound();
    }

    /** Where round {@code d}'s data lies in every rank's segment. */
    private long at(final long d) {
        return shm.dataAt(d);
    }

    private MemorySegment seg(final int p) {
        return shm.seg(p);
    }

    /** Waits for rank {@code p}'s round {@code d} of {@code bytes} with header {@code what}. */
    private void await(final int p, final long d, final long what, final int bytes) {
        long deadline = 0;
        int idle = 0;
        while (!shm.arrived(p, d, what, bytes)) {
            if (++idle > pace.spins) {
                deadline = deadline == 0 ? System.nanoTime() + timeoutNanos : deadline;
                if (pace.due(deadline)) {
                    pace.check(deadline, "rank " + p + "'s shared-memory round " + d + " (" + bytes + " B)");
                }
            }
            pace.idle(idle);
        }
    }

    private void awaitAll(final long d, final long what, final int bytes) {
        for (int s = 1; s < n; s++) {
            await((rank + s) % n, d, what, bytes);
        }
    }

    /** Round size in bytes: at most {@code cap} (the slot or the proto's), a multiple of {@code unit}. */
    private int round(final int cap, final int unit) {
        final int c = Math.min(cap, slot) / unit * unit;
        if (c <= 0) {
            throw new IllegalArgumentException("a shared-memory round of " + Math.min(cap, slot) + " B cannot hold "
                + unit + " B");
        }
        return c;
    }

    /** out[outOff..] = in0 op in1 op ... op in(n-1), each input at {@code off} in rank p's slot of round d. */
    private void reduceRankOrder(final MemorySegment out, final long outOff, final long d, final long off,
                                 final long count, final DataType t, final RedOp op) {
        final long a = at(d) + off;
        reducer.reduce(out, outOff, seg(0), a, seg(1), a, count, t, op);
        for (int p = 2; p < n; p++) {
            reducer.reduce(out, outOff, out, outOff, seg(p), a, count, t, op);
        }
    }

    // ---------------------------------------------------------------- the collectives

    /**
     * Allreduce ({@code rsag} false: direct rounds; true: reduce-scatter and all-gather rounds); {@code root} >= 0
     * makes it a reduce to that root (the result lands on the root only).
     */
    void allReduce(final MemorySegment send, final MemorySegment recv, final long count, final DataType t,
                   final RedOp op, final boolean rsag, final int root, final int cap) {
        final int es = t.size();
        final CollOp what = root < 0 ? CollOp.ALLREDUCE : CollOp.REDUCE;
        final long hA = header(what, t, op, 0, Math.max(root, 0));
        final long hB = header(what, t, op, 1, Math.max(root, 0));
        final long bytes = count * es;
        final int c = round(cap, es);
        final boolean reads = root < 0 || root == rank;
        for (long off = 0; off < bytes; off += c) {
            final int len = (int) Math.min(c, bytes - off);
            final long cnt = len / es;
            final long d = begin();
            MemorySegment.copy(send, off, shm.own(), at(d), len);
            shm.publishWritten(d, hA, len);
            if (!rsag) {
                if (reads) {
                    awaitAll(d, hA, len);
                    reduceRankOrder(recv, off, d, 0, cnt, t, op);
                }
                shm.done(d);
                continue;
            }
            awaitAll(d, hA, len);
            // this rank's slice of the chunk, reduced in rank order straight into its next slot
            final long lo = cnt * rank / n;
            final long hi = cnt * (rank + 1) / n;
            final long e = begin();
            final long a = at(d) + lo * es;
            final MemorySegment own = shm.own();
            if (hi > lo) {
                reducer.reduce(own, at(e), seg(0), a, seg(1), a, hi - lo, t, op);
                for (int p = 2; p < n; p++) {
                    reducer.reduce(own, at(e), own, at(e), seg(p), a, hi - lo, t, op);
                }
            }
            shm.publishWritten(e, hB, (int) ((hi - lo) * es));
            shm.done(d);
            if (reads) {
                for (int s = 0; s < n; s++) {
                    final int p = (rank + s) % n;
                    final long plo = cnt * p / n;
                    final long phi = cnt * (p + 1) / n;
                    if (p != rank) {
                        await(p, e, hB, (int) ((phi - plo) * es));
                    }
                    MemorySegment.copy(seg(p), at(e), recv, off + plo * es, (phi - plo) * es);
                }
            }
            shm.done(e);
        }
    }

    /** Broadcast: the root publishes chunks, every other rank copies them. */
    void broadcast(final MemorySegment send, final MemorySegment recv, final long bytes, final DataType t,
                   final int root, final int cap) {
        final long h = header(CollOp.BROADCAST, t, null, 0, root);
        final int c = round(cap, 1);
        if (rank == root && send != recv) {
            MemorySegment.copy(send, 0, recv, 0, bytes);
        }
        for (long off = 0; off < bytes; off += c) {
            final int len = (int) Math.min(c, bytes - off);
            if (rank == root) {
                final long d = begin();
                MemorySegment.copy(send, off, shm.own(), at(d), len);
                shm.publishWritten(d, h, len);
                shm.done(d);
            } else {
                final long d = skip();
                await(root, d, h, len);
                MemorySegment.copy(seg(root), at(d), recv, off, len);
                shm.done(d);
            }
        }
    }

    /** Allgather: each round every rank publishes a chunk of its block and copies every peer's. */
    void allGather(final MemorySegment send, final MemorySegment recv, final long bb, final DataType t,
                   final int cap) {
        final long h = header(CollOp.ALLGATHER, t, null, 0, 0);
        final int c = round(cap, 1);
        MemorySegment.copy(send, 0, recv, rank * bb, bb); // in place (send is recv's block) copies onto itself
        for (long off = 0; off < bb; off += c) {
            final int len = (int) Math.min(c, bb - off);
            final long d = begin();
            MemorySegment.copy(send, off, shm.own(), at(d), len);
            shm.publishWritten(d, h, len);
            for (int s = 1; s < n; s++) {
                final int p = (rank + s) % n;
                await(p, d, h, len);
                MemorySegment.copy(seg(p), at(d), recv, p * bb + off, len);
            }
            shm.done(d);
        }
    }

    /**
     * Reduce-scatter ({@code reduce} true) or alltoall (false): each round every rank publishes, side by side, one
     * piece of each of its n blocks; rank r reduces (in rank order) or copies piece r of every rank's slot.
     */
    void blocks(final MemorySegment send, final MemorySegment recv, final long bb, final DataType t, final RedOp op,
                final boolean reduce, final int cap) {
        final int es = t.size();
        final long h = header(reduce ? CollOp.REDUCE_SCATTER : CollOp.ALLTOALL, t, op, 0, 0);
        final int piece = round(Math.min(cap, slot) / n, es);
        if (!reduce) {
            MemorySegment.copy(send, rank * bb, recv, rank * bb, bb); // send == recv (in place) copies onto itself
        }
        for (long off = 0; off < bb; off += piece) {
            final int len = (int) Math.min(piece, bb - off);
            final long d = begin();
            final MemorySegment own = shm.own();
            for (int b = 0; b < n; b++) {
                MemorySegment.copy(send, b * bb + off, own, at(d) + (long) b * len, len);
            }
            shm.publishWritten(d, h, len * n);
            awaitAll(d, h, len * n);
            if (reduce) {
                reduceRankOrder(recv, off, d, (long) rank * len, len / es, t, op);
            } else {
                for (int s = 1; s < n; s++) {
                    final int p = (rank + s) % n;
                    MemorySegment.copy(seg(p), at(d) + (long) rank * len, recv, p * bb + off, len);
                }
            }
            shm.done(d);
        }
    }

    /**
     * Barrier: one round with no data. Every rank publishes the round and waits until every peer published it, so
     * no rank returns before every rank has entered; a cache-line handshake per peer, as Open MPI's shared-memory
     * barrier is, instead of a trip through the bootstrap's sockets.
     */
    void barrier() {
        final long h = header(CollOp.SENDRECV, DataType.INT8, null, 0xbb, 0);
        final long d = begin();
        shm.publishWritten(d, h, 0);
        awaitAll(d, h, 0);
        shm.done(d);
    }

    /** Sendrecv: every rank publishes its chunk; each copies the previous rank's. */
    void sendRecv(final MemorySegment send, final MemorySegment recv, final long bytes, final DataType t,
                  final int cap) {
        final long h = header(CollOp.SENDRECV, t, null, 0, 0);
        final int c = round(cap, 1);
        final int prev = Math.floorMod(rank - 1, n);
        for (long off = 0; off < bytes; off += c) {
            final int len = (int) Math.min(c, bytes - off);
            final long d = begin();
            MemorySegment.copy(send, off, shm.own(), at(d), len);
            shm.publishWritten(d, h, len);
            await(prev, d, h, len);
            MemorySegment.copy(seg(prev), at(d), recv, off, len);
            shm.done(d);
        }
    }
}
