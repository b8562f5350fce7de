/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.transport.NetTransport;
import io.gdrkit.comm.transport.NetTransportException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The eager connections' slots and requests: every ordered pair of ranks has one more connection (column
 * {@code channels}) whose receives are posted {@value #DEPTH} messages ahead into slots of their own, so the head of
 * an exchange (and a whole direct round) costs one one-way trip. Message k between a pair (1-based, counted alike
 * at both ends) uses slot k mod {@value #DEPTH}; a send slot is reused only once its earlier send completed.
 *
 * <pre>
 * in / out: one region each, n peers x DEPTH slots of E bytes (E = gdrkit.coll.eager.bytes)
 *   +-----------------+-----------------+-----+---------------------+
 *   | peer 0, slot 0  | peer 0, slot 1  | ... | peer n-1, slot D-1  |
 *   +-----------------+-----------------+-----+---------------------+
 *   a direct round's own message lies in this rank's own (otherwise unused) out slots
 * </pre>
 */
final class EagerPath {
    /** Receives posted ahead on each eager connection: two keep the next CTS at the sender before it is needed. */
    static final int DEPTH = 4;

    /** Bytes per slot; 0: no eager path. */
    final int bytes;
    final MemorySegment in;
    final MemorySegment out;
    final NetTransport.MrHandle inMr;
    final NetTransport.MrHandle outMr;
    private final NetTransport.MrHandle[] inMh;
    /** Per peer and slot: the receive posted ahead / the send not yet known complete (null: none). */
    final Pending[][] recvReq;
    final Pending[][] sendReq;
    /** Eager messages consumed from / sent to each peer so far. */
    final long[] recvCount;
    final long[] sendCount;
    private final NetTransport net;
    private final NetTransport.RecvComm[][] recv;
    private final int channels;
    private final int n;
    private final Pacer pace;
    private final long timeoutNanos;
    private final long[] addr = new long[1];
    private final int[] size = new int[1];
    private final int[] tag = new int[1];

    /**
     * Slots of {@code bytes} for every peer in {@code arena}, registered through {@code anyComm}, with the first
     * {@value #DEPTH} receives from every peer posted. With {@code bytes} 0 nothing is allocated.
     */
    EagerPath(final NetTransport net, final Object anyComm, final NetTransport.RecvComm[][] recv, final int channels,
              final int rank, final int n, final int bytes, final Arena arena, final Pacer pace,
              final long timeoutNanos) {
        this.net = net;
        this.recv = recv;
        this.channels = channels;
        this.n = n;
        this.bytes = bytes;
        this.pace = pace;
        this.timeoutNanos = timeoutNanos;
        this.recvReq = Pending.grid(n, DEPTH);
        this.sendReq = Pending.grid(n, DEPTH);
        this.recvCount = new long[n];
        this.sendCount = new long[n];
        if (bytes > 0) {
            in = arena.allocate((long) n * DEPTH * bytes, 4096);
            out = arena.allocate((long) n * DEPTH * bytes, 4096);
            inMr = net.regMr(anyComm, in);
            inMh = new NetTransport.MrHandle[] {inMr};
            outMr = net.regMr(anyComm, out);
            for (int p = 0; p < n; p++) {
                for (int k = 1; p != rank && k <= DEPTH; k++) {
                    postRecv(p, k);
                }
            }
        } else {
            in = null;
            out = null;
            inMr = null;
            outMr = null;
            inMh = null;
        }
    }

    /** The tag of eager message {@code k} (1-based) between a pair: the exchange's number, as the chunks carry it. */
    static int tag(final long k) {
        return (int) (k & 0x7fff) << 16;
    }

    /** Where message {@code k} with {@code peer} lies in {@link #in} or {@link #out}. */
    long slot(final int peer, final long k) {
        return ((long) peer * DEPTH + k % DEPTH) * bytes;
    }

    /** Posts the receive of eager message {@code k} from {@code peer} into its slot. */
    void postRecv(final int peer, final long k) {
        addr[0] = in.address() + slot(peer, k);
        size[0] = bytes;
        tag[0] = tag(k);
        recvReq[peer][(int) (k % DEPTH)].req = net.irecv(recv[peer][channels], 1, addr, size, tag, inMh);
    }

    /**
     * Waits for the eager send in {@code peer}'s slot to complete before the slot is written again (normally long
     * complete: {@value #DEPTH} messages ago). Builds no message unless it waits long enough to check.
     */
    void reapSend(final int peer, final int slot, final long deadline) {
        int idle = 0;
        while (!net.test(sendReq[peer][slot].req, null)) {
            if (++idle > pace.spins && pace.due(deadline)) {
                pace.check(deadline, "the eager send to rank " + peer + " of an earlier exchange, before reusing "
                    + "its slot");
            }
            pace.idle(idle);
        }
        sendReq[peer][slot].req = null;
    }

    /** At close: lets the eager sends still in flight complete (bounded), so the peers' receives are not cut. */
    void drain() {
        final long deadline = System.nanoTime() + Math.min(timeoutNanos, 1_000_000_000L);
        for (int p = 0; p < n; p++) {
            for (int s = 0; s < DEPTH; s++) {
                try {
                    while (sendReq[p][s].req != null && !net.test(sendReq[p][s].req, null)) {
                        if (System.nanoTime() > deadline) {
                            return;
                        }
                        Thread.onSpinWait();
                    }
                } catch (final NetTransportException e) {
                    // closing: a peer that is gone already makes no difference now
                }
                sendReq[p][s].req = null;
            }
        }
    }

    /** Gives back the slots' registrations (the arena that holds them is the communicator's). */
    void deregister(final Object anyComm) {
        if (inMr != null) {
            net.deregMr(anyComm, inMr);
        }
        if (outMr != null) {
            net.deregMr(anyComm, outMr);
        }
    }
}
