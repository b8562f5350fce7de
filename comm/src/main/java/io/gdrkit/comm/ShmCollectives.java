/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.lang.foreign.MemorySegment;

/**
 * Every collective, at every size, through the shared-memory slots of {@link ShmDirect}, among the ranks of a group
 * on this host: every rank of the world when all are on this host, or the ranks of this host when the world spans
 * several ({@link HierCollectives} runs the host's share of its collectives here). Ranks are the group's indexes
 * ({@code rank} of {@code n}); errors name world ranks ({@link ShmDirect#world}). No NIC, no system call, no thread
 * but the ranks' own (and their reduce threads). As
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
 * <p>With {@link CmaPull} (every rank agreed at open), rounds of at least its threshold per block move with one copy
 * where one reader pulls each region ({@link CmaPull#oneReaderPerRegion}: sendrecv and alltoall; allgather and
 * broadcast between 2 ranks). At 8 ranks on the H200 host sendrecv went from 1.02-1.13x OpenMPI's time to
 * 0.32-0.65x at 256 KiB and 16 MiB, and allgather with 7 readers per region took 1.1-1.4x the copy path from 2 MiB.
 * A writer whose source is native and does not overlap what it writes
 * publishes a record (address, length) under the round's header with its phase's top bit flipped, each reader pulls
 * with process_vm_readv straight into its destination, and the writer returns only when every peer's done word has
 * passed its last such round. Readers take either form of each round.
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
    /** The single-copy rounds (null: every round copies through the slots). */
    private final CmaPull cma;
    /** The last round this rank offered for pulling (0: none since the collective began). */
    private long lastOffer;

    /** Over {@code shm}'s group: this rank is its index there, {@link ShmDirect#index()}, of its size. */
    ShmCollectives(final ShmDirect shm, final Pacer pace, final long timeoutNanos, final ParallelReducer reducer) {
        this(shm, pace, timeoutNanos, reducer, null);
    }

    /** As above, with single-copy rounds through {@code cma} (null: none). */
    ShmCollectives(final ShmDirect shm, final Pacer pace, final long timeoutNanos, final ParallelReducer reducer,
                   final CmaPull cma) {
        this.cma = cma;
        this.shm = shm;
        this.rank = shm.index();
        this.n = shm.size();
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
    static long header(final CollOp what, final DataType t, final RedOp op, final int phase, final int root) {
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
        awaitAs(p, d, what, bytes, what, bytes);
    }

    /**
     * Waits for rank {@code p}'s round {@code d}, published as its data ({@code what}, {@code bytes}: answers 1) or
     * as a single-copy record ({@code alt}, {@code altBytes}: answers 2).
     */
    private int awaitAs(final int p, final long d, final long what, final int bytes, final long alt,
                        final int altBytes) {
        long deadline = 0;
        int idle = 0;
        int got;
        while ((got = shm.arrivedAs(p, d, what, bytes, alt, altBytes)) == 0) {
            if (++idle > pace.spins) {
                deadline = deadline == 0 ? System.nanoTime() + timeoutNanos : deadline;
                if (pace.due(deadline)) {
                    pace.check(deadline, "rank " + shm.world(p) + "'s shared-memory round " + d + " (" + bytes
                        + " B)");
                }
            }
            pace.idle(idle);
        }
        return got;
    }

    // ---------------------------------------------------------------- single-copy rounds (CmaPull)

    /** The single-copy record's bytes in a slot: the address, then the length. */
    private static final int RECORD = 16;

    /** The header of a round's single-copy record: the data round's header with its phase's top bit flipped. */
    static long cmaHeader(final long h) {
        return h ^ 0x80L << 16;
    }

    /** Whether this rank offers {@code len} bytes of {@code src} (pullable: native, no overlap) for pulling. */
    private boolean offers(final boolean pullable, final MemorySegment src, final long len) {
        return pullable && cma != null && cma.offers(src, len);
    }

    /** Publishes round {@code d} as a record: readers pull {@code len} bytes at {@code src + off} (and beyond). */
    private void offer(final long d, final long h, final MemorySegment src, final long off, final int len) {
        final MemorySegment own = shm.own();
        own.set(java.lang.foreign.ValueLayout.JAVA_LONG, at(d), src.address() + off);
        own.set(java.lang.foreign.ValueLayout.JAVA_LONG, at(d) + 8, len);
        shm.publishWritten(d, cmaHeader(h), RECORD);
        lastOffer = d;
    }

    /**
     * Rank {@code p}'s part of round {@code d} into {@code dst}: copied from its slot ({@code slotBytes} published,
     * this rank's part at {@code inSlot}), or pulled from its buffer ({@code delta} past the offered address).
     */
    private void take(final int p, final long d, final long h, final int slotBytes, final long inSlot,
                      final long delta, final MemorySegment dst, final long dstOff, final int len, final String op) {
        if (awaitAs(p, d, h, slotBytes, cmaHeader(h), RECORD) == 1) {
            MemorySegment.copy(seg(p), at(d) + inSlot, dst, dstOff, len);
        } else {
            cma.pull(p, d, at(d), delta, dst, dstOff, len, op);
        }
    }

    /**
     * Before the collective returns: every peer is through with the rounds this rank offered for pulling (their done
     * words passed the last), so the caller may change its buffer.
     */
    private void drainOffers() {
        final long d = lastOffer;
        if (d == 0) {
            return;
        }
        long deadline = 0;
        int idle = 0;
        while (!shm.slotFree(d + ShmDirect.DEPTH)) {
            if (++idle > pace.spins) {
                deadline = deadline == 0 ? System.nanoTime() + timeoutNanos : deadline;
                if (pace.due(deadline)) {
                    pace.check(deadline, "every rank to finish pulling single-copy round " + d + " from this rank's "
                        + "buffer");
                }
            }
            pace.idle(idle);
        }
        lastOffer = 0;
    }

    /** Whether bytes [aOff, aOff + aLen) of {@code a} and [bOff, bOff + bLen) of {@code b} share memory. */
    private static boolean overlaps(final MemorySegment a, final long aOff, final long aLen, final MemorySegment b,
                                    final long bOff, final long bLen) {
        if (aLen <= 0 || bLen <= 0 || a.isNative() != b.isNative()) {
            return false;
        }
        if (!a.isNative()) {
            return true; // heap segments are never offered: the answer does not matter
        }
        final long x = a.address() + aOff;
        final long y = b.address() + bOff;
        return x < y + bLen && y < x + aLen;
    }

    /** Whether {@code a} and {@code b} start at the same native address (a heap segment: no, whatever it is). */
    private static boolean samePlace(final MemorySegment a, final MemorySegment b) {
        return a.isNative() && b.isNative() && a.address() == b.address();
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
        reduceRankOrder(out, outOff, d, off, count, t, op, null, 0);
    }

    /**
     * As above, with this rank's own input read at {@code mine + mineOff} instead of its slot (null: its slot): a
     * reduce's root publishes nothing, since no other rank reads its input. The order, and so every bit of the
     * result, is the same.
     */
    private void reduceRankOrder(final MemorySegment out, final long outOff, final long d, final long off,
                                 final long count, final DataType t, final RedOp op, final MemorySegment mine,
                                 final long mineOff) {
        final long a = at(d) + off;
        reducer.reduce(out, outOff, in(0, mine), inAt(0, a, mine, mineOff), in(1, mine), inAt(1, a, mine, mineOff),
            count, t, op);
        for (int p = 2; p < n; p++) {
            reducer.reduce(out, outOff, out, outOff, in(p, mine), inAt(p, a, mine, mineOff), count, t, op);
        }
    }

    private MemorySegment in(final int p, final MemorySegment mine) {
        return p == rank && mine != null ? mine : seg(p);
    }

    private long inAt(final int p, final long a, final MemorySegment mine, final long mineOff) {
        return p == rank && mine != null ? mineOff : a;
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
            if (!rsag && root == rank && (rank < 2 && samePlace(send, recv) || !overlaps(send, off, len, recv, off,
                len))) {
                // a direct reduce's root: nobody reads its input, so it is not copied into a slot; the root reads
                // it where it lies (at 2 ranks and 16 MiB on the H200 host the root's copy was a third of its time).
                // In place, only ranks 0 and 1 may: their inputs are read by the first step, element by element
                // before it writes the result; a later rank's would already be overwritten when its turn comes, and
                // buffers shared in part would have the first step overwrite input it has yet to read
                final long d = skip();
                awaitAll(d, hA, len);
                reduceRankOrder(recv, off, d, 0, cnt, t, op, send, off);
                shm.done(d);
                continue;
            }
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

    /**
     * Reduce up a binomial tree, for small sizes at 4 or more ranks (the tuning's {@code tree}): rank v (counted
     * from the root) reduces the partial results of its children v + 1, v + 2, v + 4, ... below its lowest set bit
     * into its slot and publishes it; the root reduces its children's into {@code recv}. A direct round has the root
     * read n - 1 slots, two cache lines or more each, one after the other; here it reads log2(n), and the other
     * ranks' reads run in parallel (Open MPI's small reduce is a binomial tree too: at 8 ranks on the H200 host its
     * 64 B reduce took 0.78 µs, the direct round 1.44). Every rank takes one round per chunk, as in the direct rounds.
     * Elements are combined in the order of the ranks counted from the root, grouped by subtree.
     */
    void reduceTree(final MemorySegment send, final MemorySegment recv, final long count, final DataType t,
                    final RedOp op, final int root, final int cap) {
        final int es = t.size();
        final long h = header(CollOp.REDUCE, t, op, 2, root);
        final long bytes = count * es;
        final int c = round(cap, es);
        final int v = Math.floorMod(rank - root, n);
        // the children: v + mask for every mask below v's lowest set bit (every mask, for the root)
        final int span = v == 0 ? Integer.MAX_VALUE : Integer.lowestOneBit(v);
        for (long off = 0; off < bytes; off += c) {
            final int len = (int) Math.min(c, bytes - off);
            final long cnt = len / es;
            final long d;
            MemorySegment in = send;
            long inOff = off;
            final MemorySegment acc;
            final long accOff;
            if (v != 0) {
                d = begin();
                acc = shm.own();
                accOff = at(d);
            } else if (overlaps(send, off, len, recv, off, len) && !samePlace(send, recv)) {
                // a root whose send and recv share memory in part: its first step would overwrite input it has yet
                // to read, so its input goes into its own slot first (nobody reads the root's slot)
                d = begin();
                MemorySegment.copy(send, off, shm.own(), at(d), len);
                in = shm.own();
                inOff = at(d);
                acc = recv;
                accOff = off;
            } else {
                d = skip();
                acc = recv;
                accOff = off;
            }
            for (int mask = 1; mask < span && v + mask < n; mask <<= 1) {
                final int p = (v + mask + root) % n;
                await(p, d, h, len);
                reducer.reduce(acc, accOff, in, inOff, seg(p), at(d), cnt, t, op);
                in = acc;
                inOff = accOff;
            }
            if (in != acc) {
                MemorySegment.copy(in, inOff, acc, accOff, len); // a leaf: its input is its partial result
            }
            if (v != 0) {
                shm.publishWritten(d, h, len);
            }
            shm.done(d);
        }
    }

    /** Broadcast: the root publishes chunks, every other rank copies them. */
    void broadcast(final MemorySegment send, final MemorySegment recv, final long bytes, final DataType t,
                   final int root, final int cap) {
        final long h = header(CollOp.BROADCAST, t, null, 0, root);
        final int c = round(cap, 1);
        // out of place, the root's own copy of each chunk follows its publication and runs while the peers read it
        // (at 2 ranks and 2 MiB on the H200 host, done first it added half to the call); send and recv that share
        // memory only in part are copied whole first (a chunk's copy would overwrite input not yet published), and
        // the chunks then go out from recv
        final boolean ownCopy = rank == root && send != recv;
        final boolean copyFirst = ownCopy && overlaps(send, 0, bytes, recv, 0, bytes);
        if (copyFirst) {
            MemorySegment.copy(send, 0, recv, 0, bytes);
        }
        final MemorySegment src = copyFirst ? recv : send;
        lastOffer = 0;
        for (long off = 0; off < bytes; off += c) {
            final int len = (int) Math.min(c, bytes - off);
            if (rank == root) {
                final long d = begin();
                if (offers(CmaPull.oneReaderPerRegion(CollOp.BROADCAST, n), src, len)) {
                    offer(d, h, src, off, len);
                } else {
                    MemorySegment.copy(src, off, shm.own(), at(d), len);
                    shm.publishWritten(d, h, len);
                }
                if (ownCopy && !copyFirst) {
                    MemorySegment.copy(send, off, recv, off, len);
                }
                shm.done(d);
            } else {
                final long d = skip();
                take(root, d, h, len, 0, 0, recv, off, len, "broadcast");
                shm.done(d);
            }
        }
        drainOffers();
    }

    /** Allgather: each round every rank publishes a chunk of its block and copies every peer's. */
    void allGather(final MemorySegment send, final MemorySegment recv, final long bb, final DataType t,
                   final int cap) {
        final long h = header(CollOp.ALLGATHER, t, null, 0, 0);
        final int c = round(cap, 1);
        MemorySegment.copy(send, 0, recv, rank * bb, bb); // in place (send is recv's block) copies onto itself
        // the input may be pulled while this rank writes the other blocks of recv: not if they share memory
        final boolean pullable = CmaPull.oneReaderPerRegion(CollOp.ALLGATHER, n)
            && !overlaps(send, 0, bb, recv, 0, rank * bb)
            && !overlaps(send, 0, bb, recv, (rank + 1) * bb, (n - rank - 1) * bb);
        lastOffer = 0;
        for (long off = 0; off < bb; off += c) {
            final int len = (int) Math.min(c, bb - off);
            final long d = begin();
            if (offers(pullable, send, len)) {
                offer(d, h, send, off, len);
            } else {
                MemorySegment.copy(send, off, shm.own(), at(d), len);
                shm.publishWritten(d, h, len);
            }
            for (int s = 1; s < n; s++) {
                final int p = (rank + s) % n;
                take(p, d, h, len, 0, 0, recv, p * bb + off, len, "allgather");
            }
            shm.done(d);
        }
        drainOffers();
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
        // alltoall's blocks may be pulled while this rank writes recv: not if they share memory (in place)
        final boolean pullable = !reduce && !overlaps(send, 0, bb * n, recv, 0, bb * n);
        lastOffer = 0;
        for (long off = 0; off < bb; off += piece) {
            final int len = (int) Math.min(piece, bb - off);
            final long d = begin();
            final MemorySegment own = shm.own();
            // in place (recv is send's block rank) only ranks 0 and 1 reduce their own input from send: the first
            // step reads it before writing; a later rank's turn would come after the writes, so it takes its slot's
            final boolean fromSend = !reduce || rank < 2 || !overlaps(send, rank * bb + off, len, recv, off, len);
            if (offers(pullable, send, len)) {
                offer(d, h, send, off, len); // block b's piece lies b bb past it
            } else {
                // this rank's own piece is not copied: no peer reads it (each reads its own piece of every slot),
                // and this rank takes it from send (at 2 ranks that is half the copying)
                for (int b = 0; b < n; b++) {
                    if (b != rank || !fromSend) {
                        MemorySegment.copy(send, b * bb + off, own, at(d) + (long) b * len, len);
                    }
                }
                shm.publishWritten(d, h, len * n);
            }
            if (reduce) {
                awaitAll(d, h, len * n);
                reduceRankOrder(recv, off, d, (long) rank * len, len / es, t, op, fromSend ? send : null,
                    rank * bb + off);
            } else {
                for (int s = 1; s < n; s++) {
                    final int p = (rank + s) % n;
                    take(p, d, h, len * n, (long) rank * len, rank * bb, recv, p * bb + off, len, "alltoall");
                }
            }
            shm.done(d);
        }
        drainOffers();
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
        final boolean pullable = !overlaps(send, 0, bytes, recv, 0, bytes);
        lastOffer = 0;
        for (long off = 0; off < bytes; off += c) {
            final int len = (int) Math.min(c, bytes - off);
            final long d = begin();
            if (offers(pullable, send, len)) {
                offer(d, h, send, off, len);
            } else {
                MemorySegment.copy(send, off, shm.own(), at(d), len);
                shm.publishWritten(d, h, len);
            }
            take(prev, d, h, len, 0, 0, recv, off, len, "sendrecv");
            shm.done(d);
        }
        drainOffers();
    }

    // ---------------------------------------------------------------- the hierarchical path's steps

    /** The first element of slice {@code b} of {@code count} over the group: [count b / n, count (b + 1) / n). */
    private long sliceLo(final long count, final int b) {
        return count * b / n;
    }

    /** The bytes of a slice's round at {@code off}: what is left of the slice's {@code bytes}, at most a piece. */
    private static int pieceLen(final long bytes, final long off, final int piece) {
        return (int) Math.max(0, Math.min(piece, bytes - off));
    }

    /** The largest slice in bytes: the number of a slice's rounds follows from it, the same on every rank. */
    private long largestSlice(final long count, final int es) {
        long most = 0;
        for (int b = 0; b < n; b++) {
            most = Math.max(most, (sliceLo(count, b + 1) - sliceLo(count, b)) * es);
        }
        return most;
    }

    /**
     * Reduce-scatter by slices, the hierarchical allreduce's first step: the group's rank b ends with slice b of
     * the group's reduction (in rank order) at the slice's own place in {@code recv}; recv's other slices are left as
     * they are (in place they still hold the input, which the last step overwrites). Each round every rank publishes,
     * side by side, one piece of each slice of its input, and reduces piece b of every rank's slot.
     */
    void reduceScatterSlices(final MemorySegment send, final MemorySegment recv, final long count, final DataType t,
                             final RedOp op, final int cap) {
        final int es = t.size();
        final long h = header(CollOp.ALLREDUCE, t, op, 2, 0);
        final int piece = round(Math.min(cap, slot) / n, es);
        final long most = largestSlice(count, es);
        final long myLo = sliceLo(count, rank) * es;
        final long myBytes = sliceLo(count, rank + 1) * es - myLo;
        for (long off = 0; off < most; off += piece) {
            final long d = begin();
            final MemorySegment own = shm.own();
            int total = 0;
            for (int b = 0; b < n; b++) {
                final long lo = sliceLo(count, b) * es;
                final int len = pieceLen(sliceLo(count, b + 1) * es - lo, off, piece);
                MemorySegment.copy(send, lo + off, own, at(d) + (long) b * piece, len);
                total += len;
            }
            // the total is a function of the count and the round alone: every rank publishes and expects the same
            shm.publishWritten(d, h, total);
            awaitAll(d, h, total);
            final int mine = pieceLen(myBytes, off, piece);
            if (mine > 0) {
                reduceRankOrder(recv, myLo + off, d, (long) rank * piece, mine / es, t, op);
            }
            shm.done(d);
        }
    }

    /**
     * All-gather by slices, the hierarchical allreduce's last step: the group's rank b publishes slice b of
     * {@code recv} (where {@link #reduceScatterSlices} left it, reduced across hosts since), every rank copies every
     * peer's slice to its place.
     */
    void allGatherSlices(final MemorySegment recv, final long count, final DataType t, final int cap) {
        final int es = t.size();
        final long h = header(CollOp.ALLREDUCE, t, null, 3, 0);
        final int c = round(cap, es);
        final long most = largestSlice(count, es);
        final long myLo = sliceLo(count, rank) * es;
        final long myBytes = sliceLo(count, rank + 1) * es - myLo;
        for (long off = 0; off < most; off += c) {
            final long d = begin();
            final int mine = pieceLen(myBytes, off, c);
            MemorySegment.copy(recv, myLo + off, shm.own(), at(d), mine);
            shm.publishWritten(d, h, mine);
            for (int s = 1; s < n; s++) {
                final int p = (rank + s) % n;
                final long lo = sliceLo(count, p) * es;
                final int len = pieceLen(sliceLo(count, p + 1) * es - lo, off, c);
                await(p, d, h, len);
                MemorySegment.copy(seg(p), at(d), recv, lo + off, len);
            }
            shm.done(d);
        }
    }

    /**
     * All-gather of blocks that already lie where they belong, the hierarchical allgather's last step: the group's
     * rank j contributes the blocks {@code blocks[j]} of {@code bb} bytes each (block k at {@code recv + k bb}; every
     * rank the same number of them), published as one run of bytes cut in rounds; every rank copies every peer's
     * blocks to the same places.
     */
    void allGatherPlaced(final MemorySegment recv, final long bb, final int[][] blocks, final DataType t,
                         final int cap) {
        final long h = header(CollOp.ALLGATHER, t, null, 2, 0);
        final int c = round(cap, 1);
        final long total = blocks[rank].length * bb;
        for (long off = 0; off < total; off += c) {
            final int len = (int) Math.min(c, total - off);
            final long d = begin();
            placed(recv, blocks[rank], bb, off, len, shm.own(), at(d), true);
            shm.publishWritten(d, h, len);
            for (int s = 1; s < n; s++) {
                final int p = (rank + s) % n;
                await(p, d, h, len);
                placed(recv, blocks[p], bb, off, len, seg(p), at(d), false);
            }
            shm.done(d);
        }
    }

    /**
     * Reduce-scatter of blocks that lie where they belong, the hierarchical reduce-scatter's first step: the group's
     * rank j ends with the group's reduction (in rank order) of the blocks {@code blocks[j]} (block k at
     * {@code send + k bb}), at the same places in {@code out}. Each round every rank publishes, side by side, one
     * piece of each rank's run of blocks, and reduces its own piece of every rank's slot.
     */
    void reduceScatterPlaced(final MemorySegment send, final MemorySegment out, final long bb, final int[][] blocks,
                             final DataType t, final RedOp op, final int cap) {
        final int es = t.size();
        final long h = header(CollOp.REDUCE_SCATTER, t, op, 2, 0);
        final int piece = round(Math.min(cap, slot) / n, es);
        final long total = blocks[rank].length * bb;
        for (long off = 0; off < total; off += piece) {
            final int len = (int) Math.min(piece, total - off);
            final long d = begin();
            final MemorySegment own = shm.own();
            for (int j = 0; j < n; j++) {
                placed(send, blocks[j], bb, off, len, own, at(d) + (long) j * len, true);
            }
            shm.publishWritten(d, h, len * n);
            awaitAll(d, h, len * n);
            // this rank's piece of every slot, part by part where it spans blocks (parts are whole elements: the
            // piece, the block and the offset are multiples of the element size)
            int i = (int) (off / bb);
            long within = off % bb;
            for (long moved = 0; moved < len; i++, within = 0) {
                final long part = Math.min(bb - within, len - moved);
                reduceRankOrder(out, blocks[rank][i] * bb + within, d, (long) rank * len + moved, part / es, t, op);
                moved += part;
            }
            shm.done(d);
        }
    }

    /**
     * Copies bytes [off, off + len) of the run made of {@code blocks} (each {@code bb} bytes at recv + block bb)
     * into the slot at {@code slot + at} ({@code out}) or back from it.
     */
    private static void placed(final MemorySegment recv, final int[] blocks, final long bb, final long off,
                               final int len, final MemorySegment slot, final long at, final boolean out) {
        int i = (int) (off / bb);
        long within = off % bb;
        for (long moved = 0; moved < len; i++, within = 0) {
            final long part = Math.min(bb - within, len - moved);
            if (out) {
                MemorySegment.copy(recv, blocks[i] * bb + within, slot, at + moved, part);
            } else {
                MemorySegment.copy(slot, at + moved, recv, blocks[i] * bb + within, part);
            }
            moved += part;
        }
    }
}
