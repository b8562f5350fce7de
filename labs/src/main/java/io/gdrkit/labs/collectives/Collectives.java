/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.collectives;

import io.gdrkit.labs.collectives.Communicator.Buffer;

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
 * </ul>
 */
public final class Collectives {
    private Collectives() {
    }

    private static long blockOff(final long count, final int n, final int b) {
        return count * b / n;
    }

    public static void allReduce(final Communicator c, final Buffer send, final Buffer recv, final long count,
                                 final DataType t, final RedOp op) {
        final int n = c.nranks();
        final boolean tree = c.context().algo() == CollContext.Algo.TREE;
        // on the host the ring reads its input where it lies (recv[b] = op(send[b], received)): every block of recv
        // is then written by a receive, and the input needs no copy first; a GPU reduces into its destination only
        final boolean direct = !tree && n > 1 && c.deviceReducer() == null;
        if (!direct) {
            Communicator.copy(send, 0, recv, 0, count * t.size());
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
        final Buffer in = direct ? send : recv;
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

    /** Binomial tree rooted at 0: children r + 2^k for 2^k below r's lowest set bit. */
    private static void treeReduce(final Communicator c, final Buffer buf, final long count, final DataType t,
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

    private static void treeBroadcast(final Communicator c, final Buffer buf, final long bytes) {
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

    /** Each rank's {@code count} elements of send end up at block rank of recv (n x count). */
    public static void allGather(final Communicator c, final Buffer send, final Buffer recv, final long count,
                                 final DataType t) {
        final int n = c.nranks();
        final int r = c.rank();
        final long bb = count * t.size();
        Communicator.copy(send, 0, recv, r * bb, bb);
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
     */
    public static void reduceScatter(final Communicator c, final Buffer send, final Buffer scratch,
                                     final Buffer recv, final long count, final DataType t, final RedOp op) {
        final int n = c.nranks();
        final int r = c.rank();
        final long bb = count * t.size();
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
        Communicator.copy(send, 0, scratch, 0, bb * n);
        final int next = (r + 1) % n;
        final int prev = (r + n - 1) % n;
        for (int s = 0; s < n - 1; s++) {
            final int sb = Math.floorMod(r - s - 1, n);
            final int rb = Math.floorMod(r - s - 2, n);
            c.exchange(next, scratch, sb * bb, bb, prev, scratch, rb * bb, bb, op, t);
        }
        Communicator.copy(scratch, r * bb, recv, 0, bb);
    }

    /** The root's {@code count} elements of send reach every rank's recv, along the chain root, root+1, ... */
    public static void broadcast(final Communicator c, final Buffer send, final Buffer recv, final long count,
                                 final DataType t, final int root) {
        final int n = c.nranks();
        final int r = c.rank();
        final long bytes = count * t.size();
        final int pos = Math.floorMod(r - root, n);
        if (pos == 0) {
            Communicator.copy(send, 0, recv, 0, bytes);
        } else {
            c.exchange(-1, recv, 0, 0, Math.floorMod(r - 1, n), recv, 0, bytes, null, t);
        }
        if (pos < n - 1) {
            c.exchange((r + 1) % n, recv, 0, bytes, -1, recv, 0, 0, null, t);
        }
    }

    /** Every rank's send reduced into the root's recv, along the chain root+1, root+2, ..., root. */
    public static void reduce(final Communicator c, final Buffer send, final Buffer recv, final long count,
                              final DataType t, final RedOp op, final int root) {
        final int n = c.nranks();
        final int r = c.rank();
        final long bytes = count * t.size();
        final int pos = Math.floorMod(r - root - 1, n); // root+1 is first, root last
        Communicator.copy(send, 0, recv, 0, bytes);
        if (pos > 0) {
            c.exchange(-1, recv, 0, 0, Math.floorMod(r - 1, n), recv, 0, bytes, op, t);
        }
        if (pos < n - 1) {
            c.exchange((r + 1) % n, recv, 0, bytes, -1, recv, 0, 0, null, t);
        }
    }

    /** Block p of send goes to rank p's block rank of recv (n blocks of count elements). */
    public static void allToAll(final Communicator c, final Buffer send, final Buffer recv, final long count,
                                final DataType t) {
        final int n = c.nranks();
        final int r = c.rank();
        final long bb = count * t.size();
        Communicator.copy(send, r * bb, recv, r * bb, bb);
        for (int s = 1; s < n; s++) {
            final int to = (r + s) % n;
            final int from = Math.floorMod(r - s, n);
            c.exchange(to, send, to * bb, bb, from, recv, from * bb, bb, null, t);
        }
    }

    /** send goes to rank+1, recv comes from rank-1 (nccl-tests' sendrecv). */
    public static void sendRecv(final Communicator c, final Buffer send, final Buffer recv, final long count,
                                final DataType t) {
        final int n = c.nranks();
        final int r = c.rank();
        final long bytes = count * t.size();
        if (n == 1) {
            Communicator.copy(send, 0, recv, 0, bytes);
            return;
        }
        c.exchange((r + 1) % n, send, 0, bytes, Math.floorMod(r - 1, n), recv, 0, bytes, null, t);
    }
}
