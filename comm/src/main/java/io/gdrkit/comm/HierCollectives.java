/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.util.Arrays;

/**
 * The hierarchical path, for ranks on several hosts with as many on each (NCCL's intra-node then inter-node phases,
 * Open MPI's han): within a host the ranks meet in shared memory ({@link ShmCollectives} over the host's own
 * {@link ShmDirect} group), between hosts only the ranks of the same local index talk, over the transport
 * ({@link Communicator#exchange}). The NIC then carries 1/L of an allreduce (L ranks per host) to H - 1 peers
 * instead of the whole of it to n - 1, and no byte crosses a NIC between two ranks of one host.
 *
 * <ul>
 * <li>allreduce: reduce-scatter through shared memory (local rank i reduces slice i of its host's data, in local
 * rank order), an allreduce of slice i around a ring of the H ranks of local index i (its column; every block is
 * reduced once and copied around, so every rank of the column holds the same bits), then an all-gather of the
 * slices through shared memory. Every rank ends with the same bits: the order of the reduction is fixed (local rank
 * order within each host, then the column ring's), though it differs from the flat ring's, so float results may
 * differ from it in the last bits, as NCCL's algorithms differ from one another.</li>
 * <li>allgather: each rank's block goes around its column's ring (each rank then holds the blocks of its column),
 * then every rank publishes its column's blocks through shared memory and copies the other columns'.</li>
 * <li>reduce-scatter: each local rank reduces, through shared memory, its host's inputs of the blocks of its
 * column's ranks, then the column's ring reduce-scatters those H blocks over the transport (each block is reduced
 * on the one rank that gets it).</li>
 * <li>broadcast: the root's column relays the data host to host along a chain from the root's host, then each
 * host's rank of that column broadcasts it through shared memory.</li>
 * </ul>
 *
 * <p>The layout is the same on every rank: it follows from {@link HostRanks}, which every rank works out from the
 * same records.
 */
final class HierCollectives {
    /**
     * Where the ranks are, when the hierarchical path applies.
     *
     * @param members {@code [host][local index]} the world rank, hosts in order of their lowest rank and each host's
     *                ranks ascending; null when the path does not apply
     * @param why     the layout ("2 hosts x 3 ranks"), or why the path does not apply
     */
    record Layout(int[][] members, String why) {
        /** The why of a world on one host: the shm path of the world applies instead. */
        static final String ONE_HOST = "every rank on one host";

        /** The layout of ranks on the hosts {@code hostOf} says (rank -> host, hosts numbered by lowest rank). */
        static Layout of(final int[] hostOf) {
            final int hosts = Arrays.stream(hostOf).max().orElse(0) + 1;
            final int[] count = new int[hosts];
            for (final int h : hostOf) {
                count[h]++;
            }
            if (hosts < 2) {
                return new Layout(null, ONE_HOST);
            }
            for (int h = 1; h < hosts; h++) {
                if (count[h] != count[0]) {
                    return new Layout(null, "ranks per host differ (" + describe(count) + "): the hierarchical path "
                        + "needs as many on each host");
                }
            }
            if (count[0] < 2) {
                return new Layout(null, "one rank per host: nothing to share within a host");
            }
            final int[][] m = new int[hosts][count[0]];
            final int[] next = new int[hosts];
            for (int r = 0; r < hostOf.length; r++) {
                m[hostOf[r]][next[hostOf[r]]++] = r;
            }
            return new Layout(m, hosts + " hosts x " + count[0] + " ranks");
        }

        private static String describe(final int[] count) {
            final StringBuilder b = new StringBuilder();
            for (int h = 0; h < count.length && h < 8; h++) {
                b.append(h == 0 ? "" : ", ").append("host ").append(h).append(": ").append(count[h]);
            }
            return b.append(count.length > 8 ? ", ..." : "").toString();
        }
    }

    private final ShmCollectives local;
    private final int hosts;
    private final int perHost;
    /** This rank's host and its index there. */
    private final int host;
    private final int index;
    /** World rank -> its host, and its index there. */
    private final int[] hostOf;
    private final int[] indexOf;
    /** The world ranks of this rank's local index, by host: its ring between hosts. */
    private final int[] column;
    /** {@code [local index][host]} the world rank: the blocks each local rank holds after an allgather's ring. */
    private final int[][] columns;

    /**
     * @param local  this host's ranks' shared-memory collectives (this rank's index there is its local index)
     * @param layout the hosts' ranks ({@link Layout#members} not null)
     * @param rank   this rank's world rank
     */
    HierCollectives(final ShmCollectives local, final Layout layout, final int rank) {
        final int[][] m = layout.members();
        this.local = local;
        this.hosts = m.length;
        this.perHost = m[0].length;
        final int n = hosts * perHost;
        this.hostOf = new int[n];
        this.indexOf = new int[n];
        this.columns = new int[perHost][hosts];
        for (int h = 0; h < hosts; h++) {
            for (int i = 0; i < perHost; i++) {
                hostOf[m[h][i]] = h;
                indexOf[m[h][i]] = i;
                columns[i][h] = m[h][i];
            }
        }
        this.host = hostOf[rank];
        this.index = indexOf[rank];
        this.column = columns[index];
    }

    /** {@return the ranks of each host} */
    int perHost() {
        return perHost;
    }

    /** {@return the hosts} */
    int hosts() {
        return hosts;
    }

    /**
     * Allreduce: shared-memory reduce-scatter by slices, a ring over each slice's column, shared-memory all-gather.
     *
     * @param cap the largest shared-memory round (the proto's)
     */
    void allReduce(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer recv, final long count,
                   final DataType t, final RedOp op, final int cap) {
        local.reduceScatterSlices(send.seg(), recv.seg(), count, t, op, cap);
        final long lo = count * index / perHost;
        final long hi = count * (index + 1) / perHost;
        columnRing(c, recv, lo * t.size(), hi - lo, t, op);
        local.allGatherSlices(recv.seg(), count, t, cap);
    }

    /**
     * Allreduce of {@code count} elements at {@code base} of {@code buf}, in place, around this rank's column: the
     * flat ring's reduce-scatter and all-gather among the H ranks of its local index.
     */
    private void columnRing(final Communicator c, final RegisteredBuffer buf, final long base, final long count,
                            final DataType t, final RedOp op) {
        if (count == 0) {
            return; // the same on every rank of the column: its slice is empty on every host
        }
        final int es = t.size();
        final int next = column[(host + 1) % hosts];
        final int prev = column[(host + hosts - 1) % hosts];
        for (int s = 0; s < hosts - 1; s++) {
            final int sb = Math.floorMod(host - s, hosts);
            final int rb = Math.floorMod(host - s - 1, hosts);
            c.exchange(next, buf, base + off(count, sb) * es, (off(count, sb + 1) - off(count, sb)) * es, prev, buf,
                base + off(count, rb) * es, (off(count, rb + 1) - off(count, rb)) * es, op, t);
        }
        for (int s = 0; s < hosts - 1; s++) {
            final int sb = Math.floorMod(host + 1 - s, hosts);
            final int rb = Math.floorMod(host - s, hosts);
            c.exchange(next, buf, base + off(count, sb) * es, (off(count, sb + 1) - off(count, sb)) * es, prev, buf,
                base + off(count, rb) * es, (off(count, rb + 1) - off(count, rb)) * es, null, t);
        }
    }

    private long off(final long count, final int b) {
        return count * b / hosts;
    }

    /**
     * Allgather: each block around its column's ring, then the columns' blocks through shared memory.
     *
     * @param cap the largest shared-memory round
     */
    void allGather(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer recv, final long count,
                   final DataType t, final int cap) {
        final long bb = count * t.size();
        final int rank = column[host];
        RegisteredBuffer.copy(send, 0, recv, rank * bb, bb); // in place (send is recv's block) copies onto itself
        if (bb == 0) {
            return;
        }
        final int next = column[(host + 1) % hosts];
        final int prev = column[(host + hosts - 1) % hosts];
        for (int s = 0; s < hosts - 1; s++) {
            final int sb = Math.floorMod(host - s, hosts);
            final int rb = Math.floorMod(host - s - 1, hosts);
            c.exchange(next, recv, column[sb] * bb, bb, prev, recv, column[rb] * bb, bb, null, t);
        }
        local.allGatherPlaced(recv.seg(), bb, columns, t, cap);
    }

    /**
     * Reduce-scatter: each local rank reduces, through shared memory, its host's inputs of the blocks of its column
     * (the H ranks of its local index) into {@code scratch}, then the column's ring reduce-scatters them over the
     * transport, the last step into {@code recv}.
     *
     * @param cap the largest shared-memory round
     */
    void reduceScatter(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer scratch,
                       final RegisteredBuffer recv, final long count, final DataType t, final RedOp op,
                       final int cap) {
        final long bb = count * t.size();
        if (bb == 0) {
            return;
        }
        local.reduceScatterPlaced(send.seg(), scratch.seg(), bb, columns, t, op, cap);
        final int next = column[(host + 1) % hosts];
        final int prev = column[(host + hosts - 1) % hosts];
        for (int s = 0; s < hosts - 1; s++) {
            final int sb = Math.floorMod(host - s - 1, hosts);
            final int rb = Math.floorMod(host - s - 2, hosts);
            final boolean last = s == hosts - 2; // rb == host: this rank's own block, into recv
            c.exchange(next, scratch, column[sb] * bb, bb, prev, last ? recv : scratch, last ? 0 : column[rb] * bb,
                bb, op, t, scratch, column[rb] * bb);
        }
    }

    /**
     * Broadcast: a chain of the root's column from the root's host, then each host through shared memory from its
     * rank of that column.
     *
     * @param cap the largest shared-memory round
     */
    void broadcast(final Communicator c, final RegisteredBuffer send, final RegisteredBuffer recv, final long count,
                   final DataType t, final int root, final int cap) {
        final long bytes = count * t.size();
        final int rootHost = hostOf[root];
        final int rootIndex = indexOf[root];
        if (index == rootIndex) {
            final int pos = Math.floorMod(host - rootHost, hosts);
            if (pos == 0) {
                RegisteredBuffer.copy(send, 0, recv, 0, bytes);
            } else {
                c.exchange(-1, recv, 0, 0, column[Math.floorMod(host - 1, hosts)], recv, 0, bytes, null, t);
            }
            if (pos < hosts - 1) {
                c.exchange(column[(host + 1) % hosts], recv, 0, bytes, -1, recv, 0, 0, null, t);
            }
        }
        local.broadcast(recv.seg(), recv.seg(), bytes, t, rootIndex, cap);
    }
}
