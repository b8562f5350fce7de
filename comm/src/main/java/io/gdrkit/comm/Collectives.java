/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.lang.foreign.MemorySegment;

/**
 * The collectives as sequences of {@link Communicator#exchange}s, with NCCL's semantics and argument shapes
 * (counts in elements; allgather's count is per rank, reduce-scatter's is the result per rank). In-place is
 * {@code send == recv} (allgather: the rank's block of recv; reduce-scatter: recv is its block of send, copied).
 *
 * <ul>
 * <li>allreduce ring: reduce-scatter then allgather around the ring, 2(n-1) steps of count/n.</li>
 * <li>allreduce tree: a binomial tree reduces to rank 0, which broadcasts down the same tree (NCCL uses a double
 * binary tree pipelined across chunks; this one is simpler and pipelines only within each hop).</li>
 * <li>broadcast and reduce: a chain from (to) the root, each hop a whole message (pipelined within the hop).</li>
 * <li>alltoall: n-1 pairwise steps, rank+s and rank-s at step s; sendrecv: to rank+1, from rank-1.</li>
 * <li>direct (allreduce with the ring algorithm, broadcast, reduce, allgather; host memory; at most
 * {@link Communicator#directBytes()} bytes, {@code gdrkit.coll.direct.bytes}): ONE round in which every rank sends
 * its input to every rank that needs it over the eager connections, in parallel, and each receiver reduces or
 * places what came: one one-way trip instead of the ring's 2(n-1) or the chain's n-1 dependent ones (NCCL's
 * small-message idea: latency over bandwidth; each rank sends n-1 copies of its input). Allreduce and reduce
 * combine the n inputs in rank order, ((in0 op in1) op in2) ..., on every rank, so every rank holds the same bits,
 * floats included (the ring's order differs per block: for n > 2 its float results may differ from the direct
 * round's in the last bits, as NCCL's algorithms differ from one another).</li>
 * <li>shared memory: when every rank is on this host and the buffers are host memory, every operation at every
 * size goes through {@link ShmCollectives} instead (no NIC); {@link CollTuning} chooses, and says why.</li>
 * <li>hierarchical: when the ranks span hosts with as many on each, allreduce, allgather, reduce-scatter and
 * broadcast of host
 * buffers go through shared memory within each host and over the transport between hosts
 * ({@link HierCollectives}, path shm+net).</li>
 * </ul>
 */
public final class Collectives {
    private Collectives() {
    }

    private static long blockOff(final long count, final int n, final int b) {
        return count * b / n;
    }

    /** A direct round's header: magic, operation, type, reduction and root, checked by every receiver. */
    private static long header(final CollOp what, final DataType t, final RedOp op, final int root) {
        return 0x4443L << 48 | (long) what.ordinal() << 40 | (long) t.ordinal() << 32
            | (long) (op == null ? 0xff : op.ordinal()) << 24 | (root & 0xffffffL);
    }

    /** Whether a collective of {@code bytes} (nccl-tests' size) runs as one direct round here. */
    static boolean direct(final Communicator c, final long bytes) {
        return c.nranks() > 1 && bytes > 0 && bytes <= c.directBytes();
    }

    /**
     * {@code out = in0 op in1 op ... op in(n-1)} from the last direct round's data, in rank order; on the rank's
     * reduce threads when large enough (gdrkit.coll.reduce.threads: a direct round through shared memory goes up to
     * 1 MiB), which split by elements and so give the same bits.
     */
    private static void reduceInRankOrder(final Communicator c, final RegisteredBuffer out, final long count, final DataType t,
                                          final RedOp op) {
        final MemorySegment o = out.seg();
        final ParallelReducer r = c.hostReducer();
        r.reduce(o, 0, c.directSeg(0), c.directAt(0), c.directSeg(1), c.directAt(1), count, t, op);
        for (int p = 2; p < c.nranks(); p++) {
            r.reduce(o, 0, o, 0, c.directSeg(p), c.directAt(p), count, t, op);
        }
    }

    /**
     * Reduces {@code count} elements of every rank's send into every rank's recv: a direct round for small sizes,
     * else the ring or the tree, as the communicator's context chooses.
     *
     * @param c     this rank's communicator; every rank calls with the same count, type and operator
     * @param send  this rank's input
     * @param recv  where the result lands (may be {@code send}: in place)
     * @param count the number of elements
     * @param t     the element type
     * @param op    the reduction operator
     */
    public static void allReduce(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer recv, final long count,
                                 final DataType t, final RedOp op) {
        if (count == 0) {
            return; // nothing moves, and every rank calls with the same count: all skip alike, as MPI and NCCL do
        }
        final int n = c.nranks();
        final CollTuning.Choice ch = c.choose(CollOp.ALLREDUCE, count * t.size());
        if (ch.kind() == CollTuning.HIER) {
            final HierCollectives h = c.hier();
            try {
                h.allReduce(c, send, recv, count, t, op, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        if (ch.round() > 0) {
            final ShmCollectives s = c.shmColl();
            try {
                s.allReduce(send.seg(), recv.seg(), count, t, op, ch.kind() == CollTuning.SHM_RSAG, -1, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        final boolean tree = ch.kind() == CollTuning.NET_TREE;
        if (ch.kind() == CollTuning.NET_DIRECT) {
            try {
                final int bytes = (int) (count * t.size());
                c.directRound(send, 0, bytes, bytes, header(CollOp.ALLREDUCE, t, op, 0), Communicator.ALL,
                    Communicator.ALL);
                reduceInRankOrder(c, recv, count, t, op);
                c.directDone(Communicator.ALL);
            } catch (final InternalError e) {
                throw c.shmFault(e); // the direct round's slots are shm files when every rank is on this host
            }
            return;
        }
        // on the host the ring reads its input where it lies (recv[b] = op(send[b], received)): every block of recv
        // is then written by a receive, and the input needs no copy first; a GPU reduces into its destination only
        final boolean direct = !tree && n > 1 && c.deviceReducer() == null;
        if (!direct) {
            RegisteredBuffer.copy(send, 0, recv, 0, count * t.size());
        }
        if (n == 1 || count == 0) {
            return;
        }
        if (tree) {
            treeReduce(c, recv, count, t, op);
            treeBroadcast(c, recv, count * t.size());
            return;
        }
        final int r = c.rank();
        final int next = (r + 1) % n;
        final int prev = (r + n - 1) % n;
        final int es = t.size();
        final RegisteredBuffer in = direct ? send : recv;
        for (int s = 0; s < n - 1; s++) {
            final int sb = Math.floorMod(r - s, n);
            final int rb = Math.floorMod(r - s - 1, n);
            // step 0 sends this rank's own block of the input; later steps send what the previous step reduced
            c.exchange(next, s == 0 ? in : recv, blockOff(count, n, sb) * es, (blockOff(count, n, sb + 1)
                - blockOff(count, n, sb)) * es, prev, recv, blockOff(count, n, rb) * es, (blockOff(count, n, rb + 1)
                - blockOff(count, n, rb)) * es, op, t, in, blockOff(count, n, rb) * es);
        }
        for (int s = 0; s < n - 1; s++) {
            final int sb = Math.floorMod(r + 1 - s, n);
            final int rb = Math.floorMod(r - s, n);
            c.exchange(next, recv, blockOff(count, n, sb) * es, (blockOff(count, n, sb + 1) - blockOff(count, n, sb))
                * es, prev, recv, blockOff(count, n, rb) * es, (blockOff(count, n, rb + 1) - blockOff(count, n, rb))
                * es, null, t);
        }
    }

    /**
     * Returns on each rank once every rank has called it: through shared memory when every rank is on this host (one
     * round of flags), else a one-element allreduce over the NICs (a direct round).
     *
     * @param c this rank's communicator
     */
    public static void barrier(final Communicator c) {
        if (c.nranks() == 1) {
            return;
        }
        if (c.shmPathOpen()) {
            final ShmCollectives s = c.shmColl();
            try {
                s.barrier();
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        final RegisteredBuffer b = c.barrierBuffer();
        allReduce(c, b, b, 1, DataType.INT32, RedOp.SUM);
    }

    /** Binomial tree rooted at 0: children r + 2^k for 2^k below r's lowest set bit. */
    private static void treeReduce(final Communicator c, final RegisteredBuffer buf, final long count, final DataType t,
                                   final RedOp op) {
        final int n = c.nranks();
        final int r = c.rank();
        final long bytes = count * t.size();
        int mask = 1;
        while (mask < n) {
            if ((r & mask) != 0) {
                c.exchange(r - mask, buf, 0, bytes, -1, buf, 0, 0, null, t);
                return;
            }
            if (r + mask < n) {
                c.exchange(-1, buf, 0, 0, r + mask, buf, 0, bytes, op, t);
            }
            mask <<= 1;
        }
    }

    private static void treeBroadcast(final Communicator c, final RegisteredBuffer buf, final long bytes) {
        final int n = c.nranks();
        final int r = c.rank();
        int mask = 1;
        while (mask < n && (r & mask) == 0) {
            mask <<= 1;
        }
        if (r != 0) {
            c.exchange(-1, buf, 0, 0, r - mask, buf, 0, bytes, null, DataType.INT8);
        }
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (r + mask < n) {
                c.exchange(r + mask, buf, 0, bytes, -1, buf, 0, 0, null, DataType.INT8);
            }
        }
    }

    /**
     * Each rank's {@code count} elements of send end up at block rank of recv (n x count).
     *
     * @param c     this rank's communicator
     * @param send  this rank's {@code count} elements
     * @param recv  the result, {@code n x count} elements
     * @param count the elements each rank contributes
     * @param t     the element type
     */
    public static void allGather(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer recv, final long count,
                                 final DataType t) {
        if (count == 0) {
            return; // nothing moves, and every rank calls with the same count: all skip alike, as MPI and NCCL do
        }
        final int n = c.nranks();
        final int r = c.rank();
        final long bb = count * t.size();
        final CollTuning.Choice ch = c.choose(CollOp.ALLGATHER, bb * n);
        if (ch.kind() == CollTuning.HIER) {
            final HierCollectives h = c.hier();
            try {
                h.allGather(c, send, recv, count, t, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        if (ch.round() > 0) {
            final ShmCollectives s = c.shmColl();
            try {
                s.allGather(send.seg(), recv.seg(), bb, t, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        RegisteredBuffer.copy(send, 0, recv, r * bb, bb);
        if (ch.kind() == CollTuning.NET_DIRECT) {
            try {
                c.directRound(send, 0, (int) bb, (int) bb, header(CollOp.ALLGATHER, t, null, 0), Communicator.ALL,
                    Communicator.ALL);
                for (int p = 0; p < n; p++) {
                    if (p != r) {
                        MemorySegment.copy(c.directSeg(p), c.directAt(p), recv.seg(), p * bb, bb);
                    }
                }
                c.directDone(Communicator.ALL);
            } catch (final InternalError e) {
                throw c.shmFault(e); // the direct round's slots are shm files when every rank is on this host
            }
            return;
        }
        final int next = (r + 1) % n;
        final int prev = (r + n - 1) % n;
        for (int s = 0; s < n - 1; s++) {
            final int sb = Math.floorMod(r - s, n);
            final int rb = Math.floorMod(r - s - 1, n);
            c.exchange(next, recv, sb * bb, bb, prev, recv, rb * bb, bb, null, t);
        }
    }

    /**
     * Reduces n blocks of {@code count} elements of send across ranks; block rank lands in recv. Works in a
     * scratch copy of send so that send is not modified.
     *
     * @param c       this rank's communicator
     * @param send    this rank's input, {@code n x count} elements
     * @param scratch a buffer as large as {@code send}, overwritten
     * @param recv    this rank's block of the result, {@code count} elements
     * @param count   the elements of each rank's block of the result
     * @param t       the element type
     * @param op      the reduction operator
     */
    public static void reduceScatter(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer scratch,
                                     final RegisteredBuffer recv, final long count, final DataType t, final RedOp op) {
        if (count == 0) {
            return; // nothing moves, and every rank calls with the same count: all skip alike, as MPI and NCCL do
        }
        final int n = c.nranks();
        final int r = c.rank();
        final long bb = count * t.size();
        final CollTuning.Choice ch = c.choose(CollOp.REDUCE_SCATTER, bb * n);
        if (ch.kind() == CollTuning.HIER) {
            final HierCollectives h = c.hier();
            try {
                h.reduceScatter(c, send, scratch, recv, count, t, op, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        if (ch.round() > 0) {
            final ShmCollectives s = c.shmColl();
            try {
                s.blocks(send.seg(), recv.seg(), bb, t, op, true, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        if (n > 1 && c.deviceReducer() == null) {
            // host: scratch[b] = op(send[b], received), the last step straight into recv; no copies
            final int next = (r + 1) % n;
            final int prev = (r + n - 1) % n;
            for (int s = 0; s < n - 1; s++) {
                final int sb = Math.floorMod(r - s - 1, n);
                final int rb = Math.floorMod(r - s - 2, n);
                final boolean last = s == n - 2; // rb == r
                c.exchange(next, s == 0 ? send : scratch, sb * bb, bb, prev, last ? recv : scratch, last ? 0 : rb * bb,
                    bb, op, t, send, rb * bb);
            }
            return;
        }
        RegisteredBuffer.copy(send, 0, scratch, 0, bb * n);
        final int next = (r + 1) % n;
        final int prev = (r + n - 1) % n;
        for (int s = 0; s < n - 1; s++) {
            final int sb = Math.floorMod(r - s - 1, n);
            final int rb = Math.floorMod(r - s - 2, n);
            c.exchange(next, scratch, sb * bb, bb, prev, scratch, rb * bb, bb, op, t);
        }
        RegisteredBuffer.copy(scratch, r * bb, recv, 0, bb);
    }

    /**
     * The root's {@code count} elements of send reach every rank's recv, along the chain root, root+1, ...
     *
     * @param c     this rank's communicator
     * @param send  the root's data (read on the root only)
     * @param recv  where the data lands on every rank
     * @param count the number of elements
     * @param t     the element type
     * @param root  the rank whose data is sent
     */
    public static void broadcast(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer recv, final long count,
                                 final DataType t, final int root) {
        if (count == 0) {
            return; // nothing moves, and every rank calls with the same count: all skip alike, as MPI and NCCL do
        }
        final int n = c.nranks();
        final int r = c.rank();
        final long bytes = count * t.size();
        final int pos = Math.floorMod(r - root, n);
        final CollTuning.Choice ch = c.choose(CollOp.BROADCAST, bytes);
        if (ch.kind() == CollTuning.HIER) {
            final HierCollectives h = c.hier();
            try {
                h.broadcast(c, send, recv, count, t, root, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        if (ch.round() > 0) {
            final ShmCollectives s = c.shmColl();
            try {
                s.broadcast(send.seg(), recv.seg(), bytes, t, root, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        if (ch.kind() == CollTuning.NET_DIRECT) {
            try {
                if (pos == 0) {
                    RegisteredBuffer.copy(send, 0, recv, 0, bytes);
                    c.directRound(send, 0, (int) bytes, 0, header(CollOp.BROADCAST, t, null, root), Communicator.ALL,
                        Communicator.NONE);
                } else {
                    c.directRound(send, 0, 0, (int) bytes, header(CollOp.BROADCAST, t, null, root), Communicator.NONE,
                        root);
                    MemorySegment.copy(c.directSeg(root), c.directAt(root), recv.seg(), 0, bytes);
                    c.directDone(root);
                }
            } catch (final InternalError e) {
                throw c.shmFault(e); // the direct round's slots are shm files when every rank is on this host
            }
            return;
        }
        if (pos == 0) {
            RegisteredBuffer.copy(send, 0, recv, 0, bytes);
        } else {
            c.exchange(-1, recv, 0, 0, Math.floorMod(r - 1, n), recv, 0, bytes, null, t);
        }
        if (pos < n - 1) {
            c.exchange((r + 1) % n, recv, 0, bytes, -1, recv, 0, 0, null, t);
        }
    }

    /**
     * Every rank's send reduced into the root's recv, along the chain root+1, root+2, ..., root.
     *
     * @param c     this rank's communicator
     * @param send  this rank's input
     * @param recv  where the result lands on the root (unused on the other ranks)
     * @param count the number of elements
     * @param t     the element type
     * @param op    the reduction operator
     * @param root  the rank that gets the result
     */
    public static void reduce(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer recv, final long count,
                              final DataType t, final RedOp op, final int root) {
        if (count == 0) {
            return; // nothing moves, and every rank calls with the same count: all skip alike, as MPI and NCCL do
        }
        final int n = c.nranks();
        final int r = c.rank();
        final long bytes = count * t.size();
        final int pos = Math.floorMod(r - root - 1, n); // root+1 is first, root last
        final CollTuning.Choice ch = c.choose(CollOp.REDUCE, bytes);
        if (ch.round() > 0) {
            final ShmCollectives s = c.shmColl();
            try {
                if (ch.kind() == CollTuning.SHM_TREE) {
                    s.reduceTree(send.seg(), recv.seg(), count, t, op, root, ch.round());
                } else {
                    s.allReduce(send.seg(), recv.seg(), count, t, op, ch.kind() == CollTuning.SHM_RSAG, root,
                        ch.round());
                }
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        if (ch.kind() == CollTuning.NET_DIRECT) {
            try {
                final long h = header(CollOp.REDUCE, t, op, root);
                if (r == root) {
                    c.directRound(send, 0, (int) bytes, (int) bytes, h, Communicator.NONE, Communicator.ALL);
                    reduceInRankOrder(c, recv, count, t, op);
                    c.directDone(Communicator.ALL);
                } else {
                    c.directRound(send, 0, (int) bytes, 0, h, root, Communicator.NONE);
                }
            } catch (final InternalError e) {
                throw c.shmFault(e); // the direct round's slots are shm files when every rank is on this host
            }
            return;
        }
        RegisteredBuffer.copy(send, 0, recv, 0, bytes);
        if (pos > 0) {
            c.exchange(-1, recv, 0, 0, Math.floorMod(r - 1, n), recv, 0, bytes, op, t);
        }
        if (pos < n - 1) {
            c.exchange((r + 1) % n, recv, 0, bytes, -1, recv, 0, 0, null, t);
        }
    }

    /**
     * Block p of send goes to rank p's block rank of recv (n blocks of count elements).
     *
     * @param c     this rank's communicator
     * @param send  this rank's input, n blocks of {@code count} elements, block p for rank p
     * @param recv  the result, n blocks of {@code count} elements, block p from rank p
     * @param count the elements of each block
     * @param t     the element type
     */
    public static void allToAll(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer recv, final long count,
                                final DataType t) {
        if (count == 0) {
            return; // nothing moves, and every rank calls with the same count: all skip alike, as MPI and NCCL do
        }
        final int n = c.nranks();
        final int r = c.rank();
        final long bb = count * t.size();
        final CollTuning.Choice ch = c.choose(CollOp.ALLTOALL, bb * n);
        if (ch.round() > 0) {
            final ShmCollectives s = c.shmColl();
            try {
                s.blocks(send.seg(), recv.seg(), bb, t, null, false, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        RegisteredBuffer.copy(send, r * bb, recv, r * bb, bb);
        for (int s = 1; s < n; s++) {
            final int to = (r + s) % n;
            final int from = Math.floorMod(r - s, n);
            c.exchange(to, send, to * bb, bb, from, recv, from * bb, bb, null, t);
        }
    }

    /**
     * send goes to rank+1, recv comes from rank-1 (nccl-tests' sendrecv).
     *
     * @param c     this rank's communicator
     * @param send  the data for the next rank
     * @param recv  where the previous rank's data lands
     * @param count the number of elements
     * @param t     the element type
     */
    public static void sendRecv(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer recv, final long count,
                                final DataType t) {
        if (count == 0) {
            return; // nothing moves, and every rank calls with the same count: all skip alike, as MPI and NCCL do
        }
        final int n = c.nranks();
        final int r = c.rank();
        final long bytes = count * t.size();
        if (n == 1) {
            RegisteredBuffer.copy(send, 0, recv, 0, bytes);
            return;
        }
        final CollTuning.Choice ch = c.choose(CollOp.SENDRECV, bytes);
        if (ch.round() > 0) {
            final ShmCollectives s = c.shmColl();
            try {
                s.sendRecv(send.seg(), recv.seg(), bytes, t, ch.round());
            } catch (final RuntimeException | InternalError e) {
                throw c.shmFailed(e);
            }
            return;
        }
        c.exchange((r + 1) % n, send, 0, bytes, Math.floorMod(r - 1, n), recv, 0, bytes, null, t);
    }
}
