/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.comm.transport.NetTransport;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;

/**
 * A communicator's connections, set up as NCCL's transport setup does: every rank listens once per peer and column,
 * the listen handles travel through the bootstrap (behind this rank's device count, which every rank checks), and
 * connect and accept are driven without blocking until every connection is up, within the timeout. Column c of a
 * pair is channel c on device c mod devices at both ends (device k of one rank reaches only device k of the others:
 * the software NICs' rail k is a fabric of its own); the eager column, when there is one, is on device 0.
 *
 * <pre>
 * the blob each rank gathers (n peers, cols columns, H = NetTransport.HANDLE_MAXSIZE):
 *   0        4                                    4 + n * cols * H
 *   +--------+-----------------------------------+
 *   | devs   | handle[p][c] for p, c (own: zero) |
 *   +--------+-----------------------------------+
 * </pre>
 */
final class Connections {
    /** Where the listen handles start in the blob each rank gathers: after its device count. */
    static final int HANDLES_AT = 4;

    final NetTransport.SendComm[][] send;
    final NetTransport.RecvComm[][] recv;
    private final NetTransport.ListenComm[][] listens;
    private final NetTransport net;
    private final int rank;
    private final int n;
    private final int cols;
    private final int channels;
    private final int devs;

    private Connections(final NetTransport net, final int rank, final int n, final int cols, final int channels,
                        final int devs) {
        this.net = net;
        this.rank = rank;
        this.n = n;
        this.cols = cols;
        this.channels = channels;
        this.devs = devs;
        this.send = new NetTransport.SendComm[n][cols];
        this.recv = new NetTransport.RecvComm[n][cols];
        this.listens = new NetTransport.ListenComm[n][cols];
    }

    /**
     * Connects this rank to every peer: {@code channels} columns, plus the eager column when {@code cols} is one
     * more. Collective.
     *
     * @throws CollException naming a peer whose device count or handle blob differs, or the connections still down
     *                       at the timeout
     */
    static Connections open(final Bootstrap bootstrap, final NetTransport net, final int cols, final int channels,
                            final Pacer pace, final Duration timeout) {
        final Connections k = new Connections(net, bootstrap.rank(), bootstrap.nranks(), cols, channels,
            net.devices());
        try {
            k.connect(bootstrap, pace, timeout);
            return k;
        } catch (final RuntimeException e) {
            k.close();
            throw e;
        }
    }

    private void connect(final Bootstrap bootstrap, final Pacer pace, final Duration timeout) {
        final byte[] mine = new byte[HANDLES_AT + n * cols * NetTransport.HANDLE_MAXSIZE];
        ByteBuffer.wrap(mine).putInt(devs);
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < cols; c++) {
                if (p != rank) {
                    final byte[] h = new byte[NetTransport.HANDLE_MAXSIZE];
                    listens[p][c] = net.listen(devOf(c), h);
                    System.arraycopy(h, 0, mine, HANDLES_AT + (p * cols + c) * NetTransport.HANDLE_MAXSIZE,
                        h.length);
                }
            }
        }
        final byte[][] all = bootstrap.allGather(mine);
        for (int p = 0; p < n; p++) {
            // the device count first: a different count also means a different channel count
            final int theirs = all[p].length >= HANDLES_AT ? ByteBuffer.wrap(all[p]).getInt() : -1;
            if (theirs != devs) {
                throw new CollException("rank " + p + " has " + theirs + " network devices, rank " + rank + " has "
                    + devs + ": channels are spread over the devices alike on every rank (a different "
                    + CommConfiguration.COLL_NICS.name() + "?)");
            }
            if (all[p].length != mine.length) {
                throw new CollException("rank " + p + " sent " + all[p].length + " bytes of listen handles, expected "
                    + mine.length + " (a different channel count or eager setting?)");
            }
        }
        final long deadline = System.nanoTime() + timeout.toNanos();
        final byte[][][] handles = new byte[n][cols][];
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < cols; c++) {
                if (p != rank) {
                    handles[p][c] = Arrays.copyOfRange(all[p], HANDLES_AT + (rank * cols + c)
                        * NetTransport.HANDLE_MAXSIZE, HANDLES_AT + (rank * cols + c
                            + 1) * NetTransport.HANDLE_MAXSIZE);
                }
            }
        }
        int missing = 2 * (n - 1) * cols;
        while (missing > 0) {
            for (int p = 0; p < n; p++) {
                for (int c = 0; c < cols; c++) {
                    if (p == rank) {
                        continue;
                    }
                    if (send[p][c] == null && (send[p][c] = net.connect(devOf(c), handles[p][c])) != null) {
                        missing--;
                    }
                    if (recv[p][c] == null && (recv[p][c] = net.accept(listens[p][c])) != null) {
                        missing--;
                    }
                }
            }
            if (missing > 0) {
                pace.check(deadline, "connections to every peer (" + missing + " of " + 2 * (n - 1) * cols
                    + " not up)");
                pace.idle(pace.yields());
            }
        }
        closeListens();
    }

    /**
     * The device connection column {@code col} uses: channel c on device c mod devices, as NCCL spreads its
     * channels over the NICs; the eager column on device 0.
     */
    int devOf(final int col) {
        return col < channels ? col % devs : 0;
    }

    private void closeListens() {
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < cols; c++) {
                if (listens[p][c] != null) {
                    net.closeListen(listens[p][c]);
                    listens[p][c] = null;
                }
            }
        }
    }

    /** Closes every connection and listener that is open. */
    void close() {
        for (int p = 0; p < n; p++) {
            for (int c = 0; c < cols; c++) {
                if (send[p][c] != null) {
                    net.closeSend(send[p][c]);
                }
                if (recv[p][c] != null) {
                    net.closeRecv(recv[p][c]);
                }
            }
        }
        closeListens();
    }
}
