/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.comm.transport.NetTransport;
import java.lang.foreign.MemorySegment;

/**
 * The small collectives' single step: one direct round, in which every rank's whole input goes to every rank that
 * needs it in one message, through shared memory ({@link ShmDirect}) when every rank is on this host, else as one
 * eager message per peer ({@link EagerPath}). Counts as one exchange with each peer involved, in the communicator's
 * own counters (tags, sequence numbers and footprint stay in step with its exchanges).
 */
final class DirectRounds {
    private final int rank;
    private final int n;
    private final int channels;
    private final int eager;
    private final NetTransport net;
    private final NetTransport.SendComm[][] send;
    private final EagerPath eg;
    /** Direct rounds through shared memory when every rank is on this host (null: over the eager connections). */
    private final ShmDirect shm;
    private final Pacer pace;
    private final long timeoutNanos;
    // the communicator's counters, shared
    private final int[] sendSeq;
    private final int[] recvSeq;
    private final long[] sentTo;
    private final long[] receivedFrom;
    /** A direct round's open sends and receives, per peer. */
    private final boolean[] dSend;
    private final boolean[] dRecv;
    private final int[] got = new int[1];
    /**
     * Direct rounds so far: round d's message (header and input) lies once in this rank's own send slot
     * {@code eg.slot(rank, d)}, and every peer's send reads it there; {@code directSentK[d mod DEPTH][p]} is
     * the eager message number that sent it to peer p (0: not sent), whose request must be complete before the
     * slot is written again.
     */
    private long directRounds;
    private final long[][] directSentK;

    DirectRounds(final int rank, final int n, final int channels, final NetTransport net,
                 final NetTransport.SendComm[][] send, final EagerPath eg, final ShmDirect shm, final Pacer pace,
                 final long timeoutNanos, final int[] sendSeq, final int[] recvSeq, final long[] sentTo,
                 final long[] receivedFrom) {
        this.rank = rank;
        this.n = n;
        this.channels = channels;
        this.eager = eg.bytes;
        this.net = net;
        this.send = send;
        this.eg = eg;
        this.shm = shm;
        this.pace = pace;
        this.timeoutNanos = timeoutNanos;
        this.sendSeq = sendSeq;
        this.recvSeq = recvSeq;
        this.sentTo = sentTo;
        this.receivedFrom = receivedFrom;
        this.dSend = new boolean[n];
        this.dRecv = new boolean[n];
        this.directSentK = new long[EagerPath.DEPTH][n];
    }

    /**
     * The direct round through shared memory ({@link ShmDirect}): this rank's input is written once into its own
     * slot (when it has any: a reduce's root reads its own from there too), and every input this rank needs is read
     * where its writer put it. Counts as the eager path's round does.
     */
    private void shmRound(final RegisteredBuffer src, final long srcOff, final int bytes, final int recvBytes,
                              final long what, final int sendTo, final int recvFrom) {
        if (bytes < 0 || recvBytes < 0 || Math.max(bytes, recvBytes) > shm.slotBytes()) {
            throw new IllegalArgumentException("a direct round of " + bytes + "/" + recvBytes + " bytes with shared "
                + "slots of " + shm.slotBytes());
        }
        // the deadline is read from the clock only once a wait outlasts its spins: a round that finds its inputs
        // there costs no clock read (this path is a few hundred nanoseconds)
        long deadline = 0;
        final long d = shm.nextRound();
        if (bytes > 0) {
            int idle = 0;
            while (!shm.slotFree(d)) {
                if (++idle > pace.spins) {
                    deadline = deadline == 0 ? System.nanoTime() + timeoutNanos : deadline;
                    if (pace.due(deadline)) {
                        pace.check(deadline, "every rank to finish reading direct round " + (d - ShmDirect.DEPTH)
                            + " (shared memory) before its slot is written again");
                    }
                }
                pace.idle(idle);
            }
            shm.publish(d, what, src.seg(), srcOff, bytes);
        }
        for (int s = 1; s < n; s++) {
            final int p = (rank + s) % n;
            if (sendTo == Communicator.ALL || sendTo == p) {
                sendSeq[p] = (sendSeq[p] + 1) & 0x7fff;
                sentTo[p]++;
            }
            if (recvFrom == Communicator.ALL || recvFrom == p) {
                recvSeq[p] = (recvSeq[p] + 1) & 0x7fff;
                receivedFrom[p]++;
                int idle = 0;
                while (!shm.arrived(p, d, what, recvBytes)) {
                    if (++idle > pace.spins) {
                        deadline = deadline == 0 ? System.nanoTime() + timeoutNanos : deadline;
                        if (pace.due(deadline)) {
                            pace.check(deadline, "rank " + p + "'s input of direct round " + d + " (" + recvBytes
                                + " B, shared memory)");
                        }
                    }
                    pace.idle(idle);
                }
            }
        }
        if (recvFrom == Communicator.NONE) {
            shm.done(d);
        }
    }

    void round(final RegisteredBuffer src, final long srcOff, final int bytes, final int recvBytes,
                                 final long what, final int sendTo, final int recvFrom) {
        if (shm != null) {
            shmRound(src, srcOff, bytes, recvBytes, what, sendTo, recvFrom);
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
        // (in-place). The slot is written again EagerPath.DEPTH rounds later, once the sends that read it completed.
        final long d = ++directRounds;
        final long[] sentK = directSentK[(int) (d % EagerPath.DEPTH)];
        for (int p = 0; p < n; p++) {
            final long k = sentK[p];
            if (k != 0 && eg.sendCount[p] - k < EagerPath.DEPTH
                && eg.sendReq[p][(int) (k % EagerPath.DEPTH)].req != null) {
                eg.reapSend(p, (int) (k % EagerPath.DEPTH), deadline); // else reaped when its request slot was reused
            }
            sentK[p] = 0;
        }
        final long own = eg.slot(rank, d);
        eg.out.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, own, what);
        MemorySegment.copy(src.seg(), srcOff, eg.out, own + CollContext.DIRECT_HEADER, bytes);
        int pending = 0;
        for (int s = 1; s < n; s++) {
            final int p = (rank + s) % n; // each rank starts with its next neighbour: the sends spread
            if (sendTo == Communicator.ALL || sendTo == p) {
                sendSeq[p] = (sendSeq[p] + 1) & 0x7fff;
                sentTo[p]++;
                final long k = ++eg.sendCount[p];
                final int slot = (int) (k % EagerPath.DEPTH);
                if (eg.sendReq[p][slot].req != null) {
                    eg.reapSend(p, slot, deadline);
                }
                sentK[p] = k;
                dSend[p] = true;
                pending++;
            }
            if (recvFrom == Communicator.ALL || recvFrom == p) {
                recvSeq[p] = (recvSeq[p] + 1) & 0x7fff;
                receivedFrom[p]++;
                ++eg.recvCount[p];
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
                    final long k = eg.sendCount[p];
                    final NetTransport.Request r = net.isend(send[p][channels], eg.out.address() + own,
                        len, EagerPath.tag(k), eg.outMr);
                    if (r != null) {
                        eg.sendReq[p][(int) (k % EagerPath.DEPTH)].req = r;
                        dSend[p] = false;
                        pending--;
                        progress = true;
                    }
                }
                if (dRecv[p]) {
                    final long k = eg.recvCount[p];
                    final int slot = (int) (k % EagerPath.DEPTH);
                    if (net.test(eg.recvReq[p][slot].req, got)) {
                        eg.recvReq[p][slot].req = null;
                        dRecv[p] = false;
                        pending--;
                        progress = true;
                        final long head = got[0] >= CollContext.DIRECT_HEADER ? eg.in.get(
                            java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, eg.slot(p, k)) : 0;
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
                if (++idle > pace.spins && pace.due(deadline)) {
                    pace.check(deadline, "a direct round of " + bytes + " B (" + pending
                        + " sends and receives open)");
                }
                pace.idle(idle);
            } else {
                idle = 0;
            }
        }
    }

    /**
     * Where rank {@code p}'s data of the last direct round lies: the segment (this rank's own input: the one copy in
     * its own send slot that every peer was sent from; another's: its receive slot), at {@link #at(int)}.
     */
    MemorySegment seg(final int p) {
        if (shm != null) {
            return shm.seg(p);
        }
        return p == rank ? eg.out : eg.in;
    }

    /** The offset of rank {@code p}'s data of the last direct round in {@link #seg(int)}. */
    long at(final int p) {
        if (shm != null) {
            return shm.dataAt(shm.lastRound());
        }
        return (p == rank ? eg.slot(rank, directRounds) : eg.slot(p, eg.recvCount[p]))
            + CollContext.DIRECT_HEADER;
    }

    /** After a direct round's data was read: posts the next receives into the slots it used. */
    void done(final int recvFrom) {
        if (shm != null) {
            shm.done(shm.lastRound());
            return;
        }
        for (int p = 0; p < n; p++) {
            if (p != rank && (recvFrom == Communicator.ALL || recvFrom == p)) {
                eg.postRecv(p, eg.recvCount[p] + EagerPath.DEPTH);
            }
        }
    }
}
