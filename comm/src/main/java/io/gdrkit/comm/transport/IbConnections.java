/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static io.gdrkit.comm.transport.IbTransport.HANDLE_MAGIC;
import static io.gdrkit.comm.transport.IbTransport.MAX_PENDING_ACCEPTS;

import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.comm.transport.NetTransport.ListenComm;
import io.gdrkit.comm.transport.NetTransport.RecvComm;
import io.gdrkit.comm.transport.NetTransport.SendComm;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.VerbsException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * {@link IbTransport}'s connection setup: the listener, the connect and accept handshakes (each a non-blocking step
 * per call) and the checks of every field the peer sends, with the count of strangers refused.
 */
final class IbConnections {
    static final int CONNECT_MAGIC = 0x47494243; // "GIBC"
    static final int ACCEPT_MAGIC = 0x47494241; // "GIBA"
    static final int READY_MAGIC = 0x47494252; // "GIBR"
    /**
     * The connect message's fixed part (big-endian), then nq QP numbers (u32 each); the accept answers alike without
     * the listen id and with the sizes array's address and rkey, then nq QP numbers:
     * <pre>
     *  connect: 0 magic "GIBC" | 4 listen id (u64) | 12 LID (u16) | 14 nq (u8) | 15 PSN | 19 FIFO addr (u64)
     *           | 27 FIFO rkey | 31 software MTU (0: path MTU) | 35
     *  accept:  0 magic "GIBA" | 4 LID (u16) | 6 nq (u8) | 7 PSN | 11 sizes addr (u64) | 19 sizes rkey
     *           | 23 software MTU | 27
     * </pre>
     * Every field is checked before use: magic, listen id, LID range, nq (1..MAX_QPS, and the sender's own count in
     * the accept), QP numbers, and the MTU equal to this end's.
     */
    static final int CONNECT_BYTES = 35;
    /** The accept message's fixed part; see {@link #CONNECT_BYTES}. */
    static final int ACCEPT_BYTES = 27;

    private final IbTransport t;
    private final Map<byte[], Connecting> connecting = new IdentityHashMap<>();

    IbConnections(final IbTransport transport) {
        this.t = transport;
    }

    private static final class Listen implements ListenComm {
        final int dev;
        final ServerSocketChannel server;
        final long id;
        /** Connections whose setup is under way, each at its own pace (a silent one holds up no other). */
        final java.util.ArrayList<Accepting> pending = new java.util.ArrayList<>();
        /** Accept failures (EMFILE): the listener skips accepting for a pause, serving what is in setup meanwhile. */
        final io.gdrkit.core.net.AcceptBackoff acceptBackoff = new io.gdrkit.core.net.AcceptBackoff();
        boolean closed;

        Listen(final int dev, final ServerSocketChannel server, final long id) {
            this.dev = dev;
            this.server = server;
            this.id = id;
        }
    }

    private static final class Connecting {
        final int dev;
        final Handshake.Listen target;
        final SocketChannel ch;
        final long started = System.nanoTime();
        Handshake hs;
        IbSend comm;
        int stage;

        Connecting(final int dev, final Handshake.Listen target) {
            this.dev = dev;
            this.target = target;
            this.ch = Handshake.startConnect(target.address());
        }
    }

    private static final class Accepting {
        final long started = System.nanoTime();
        /** The connect message named this listener (its magic and random id): from here on it is a real sender. */
        boolean identified;
        Handshake hs;
        IbRecv comm;
        int stage;
        int nqps;
        /** The sender's software MTU differs from ours: named once our accept (with our MTU) is on its way. */
        String mtuMismatch;
    }

    ListenComm listen(final int dev, final byte[] handle) {
        t.nic(dev);
        final ServerSocketChannel s = Handshake.listen(t.ctx.bind());
        final long id = t.random.nextLong();
        try {
            Handshake.writeHandle(handle, HANDLE_MAGIC, (InetSocketAddress) s.getLocalAddress(), id);
        } catch (final java.io.IOException e) {
            throw new NetTransportException(Reason.SYSTEM, "listener address: " + e.getMessage(), e);
        }
        return new Listen(dev, s, id);
    }

    SendComm connect(final int dev, final byte[] handle) {
        final NetNic nic = t.nic(dev);
        Connecting c = connecting.get(handle);
        if (c == null) {
            final Handshake.Listen target = Handshake.readHandle(handle, HANDLE_MAGIC, "NET/IB");
            c = new Connecting(dev, target);
            connecting.put(handle, c);
        }
        try {
            final IbSend s = stepConnect(c, nic);
            if (s != null) {
                connecting.remove(handle);
            }
            return s;
        } catch (final RuntimeException e) {
            connecting.remove(handle);
            if (c.comm != null) {
                c.comm.release();
            }
            try {
                c.ch.close();
            } catch (final java.io.IOException ignored) {
                // failing anyway
            }
            throw e;
        }
    }

    private IbSend stepConnect(final Connecting c, final NetNic nic) {
        checkAge(c.started, "connect to " + c.target.address() + " (stage " + c.stage + ")");
        switch (c.stage) {
            case 0 -> {
                if (!Handshake.finishConnect(c.ch, c.target.address())) {
                    return null;
                }
                c.hs = new Handshake(c.ch, "NET/IB listener " + c.target.address());
                c.comm = new IbSend(t, nic, t.ctx.qpsPerConnection());
                final ByteBuffer m = ByteBuffer.allocate(CONNECT_BYTES + 4 * c.comm.qps.length)
                    .putInt(CONNECT_MAGIC).putLong(c.target.id()).putShort((short) c.comm.lid)
                    .put((byte) c.comm.qps.length).putInt(c.comm.psn).putLong(c.comm.fifoMr.address())
                    .putInt(c.comm.fifoMr.rkey()).putInt(t.ctx.softwareMtu());
                for (final QueuePair q : c.comm.qps) {
                    m.putInt(q.qpNum());
                }
                c.hs.send(m);
                c.stage = 1;
            }
            case 1, 2, 3 -> {
            }
            default -> throw new NetTransportException(Reason.INTERNAL, "connect stage " + c.stage);
        }
        if (c.stage == 1) {
            if (!c.hs.flush()) {
                return null;
            }
            c.stage = 2;
        }
        if (c.stage == 2) {
            final int nq = c.comm.qps.length;
            final ByteBuffer a = c.hs.read(ACCEPT_BYTES + 4 * nq);
            if (a == null) {
                return null;
            }
            if (a.getInt() != ACCEPT_MAGIC) {
                throw new NetTransportException(Reason.REMOTE, "the NET/IB listener at " + c.target.address()
                    + " answered with a message that is not an accept");
            }
            final int lid = a.getShort() & 0xffff;
            final int theirQps = a.get() & 0xff;
            final int psn = a.getInt();
            final long sizesAddr = a.getLong();
            final int sizesRkey = a.getInt();
            final int theirMtu = a.getInt();
            if (theirMtu != t.ctx.softwareMtu()) {
                throw new NetTransportException(Reason.REMOTE, mtuMismatch("the receiver at "
                    + c.target.address(), theirMtu));
            }
            if (theirQps != nq) {
                throw new NetTransportException(Reason.REMOTE, "the receiver made " + theirQps + " QPs for "
                    + nq);
            }
            checkLid(lid);
            final int[] qpns = new int[nq];
            for (int i = 0; i < nq; i++) {
                qpns[i] = checkQpn(a.getInt());
            }
            c.comm.sizesAddr = sizesAddr;
            c.comm.remLid = lid;
            c.comm.sizesRkey = sizesRkey;
            for (int i = 0; i < nq; i++) {
                toRts(c.comm.qps[i], qpns[i], lid, c.comm.psn, psn & 0xffffff);
            }
            c.hs.send(ByteBuffer.allocate(4).putInt(READY_MAGIC));
            c.stage = 3;
        }
        if (!c.hs.flush()) {
            return null;
        }
        c.hs.close();
        return c.comm;
    }

    RecvComm accept(final ListenComm listenComm) {
        final Listen l = listen(listenComm);
        while (l.acceptBackoff.mayTry()) {
            final SocketChannel ch;
            try {
                ch = l.server.accept();
                if (ch == null) {
                    break;
                }
                l.acceptBackoff.succeeded();
            } catch (final java.nio.channels.ClosedChannelException e) {
                throw new NetTransportException(Reason.SYSTEM, "accept: " + e.getMessage(), e);
            } catch (final java.io.IOException e) {
                // out of descriptors (EMFILE) the connection stays in the backlog: pause accepting (the caller's
                // deadline still runs) rather than fail the communicator or spin
                l.acceptBackoff.failed(e);
                break;
            }
            if (l.pending.size() >= MAX_PENDING_ACCEPTS && !evictStranger(l)) {
                // every slot holds a sender of this run: the newest waits no longer
                refuse("more than " + MAX_PENDING_ACCEPTS + " connections in setup at once; " + remote(ch)
                    + " closed");
                closeQuietly(ch);
                continue;
            }
            try {
                ch.configureBlocking(false);
                ch.setOption(java.net.StandardSocketOptions.TCP_NODELAY, true);
            } catch (final java.io.IOException e) {
                closeQuietly(ch);
                continue; // gone already: nobody to serve
            }
            final Accepting a = new Accepting();
            a.hs = new Handshake(ch, "NET/IB sender " + remote(ch));
            l.pending.add(a);
        }
        for (int i = 0; i < l.pending.size(); i++) {
            final Accepting a = l.pending.get(i);
            try {
                final IbRecv r = stepAccept(l, a);
                if (r != null) {
                    l.pending.remove(i);
                    return r;
                }
            } catch (final RuntimeException e) {
                l.pending.remove(i--);
                a.hs.close();
                if (a.comm != null) {
                    a.comm.release();
                }
                if (a.identified) {
                    throw e; // a sender of this run that failed its setup: its named error
                }
                // a stranger (garbage, another protocol, a wrong listener id, silence, a half-open socket): dropped
                // and counted; the listener goes on waiting for its real senders until the caller's deadline
                refuse(e.getMessage());
            }
        }
        return null;
    }

    /**
     * Makes room by closing the oldest connection that has not named this listener yet: a flood of strangers churns
     * among themselves and a real sender, whose connect message comes at once, still gets a slot.
     */
    private boolean evictStranger(final Listen l) {
        for (int i = 0; i < l.pending.size(); i++) {
            final Accepting a = l.pending.get(i);
            if (!a.identified) {
                l.pending.remove(i);
                a.hs.close();
                refuse("more than " + MAX_PENDING_ACCEPTS + " connections in setup at once: the oldest that had "
                    + "named no listener closed");
                return true;
            }
        }
        return false;
    }

    private long strangers;
    private volatile String lastStranger;

    private void refuse(final String why) {
        strangers++;
        lastStranger = why;
    }

    private static void closeQuietly(final SocketChannel ch) {
        try {
            ch.close();
        } catch (final java.io.IOException ignored) {
            // a stranger's socket: nothing to report
        }
    }

    io.gdrkit.core.net.AcceptBackoff acceptBackoff(final ListenComm listenComm) {
        return listen(listenComm).acceptBackoff;
    }

    long strangersRefused() {
        return strangers;
    }

    String lastStrangerRefused() {
        return lastStranger;
    }

    private IbRecv stepAccept(final Listen l, final Accepting a) {
        checkAge(a.started, "accept of a NET/IB connection (stage " + a.stage + ")");
        if (a.stage == 0) {
            final ByteBuffer h = a.hs.read(CONNECT_BYTES);
            if (h == null) {
                return null;
            }
            if (h.getInt() != CONNECT_MAGIC) {
                throw new NetTransportException(Reason.REMOTE, "a peer connected to the NET/IB listener with a "
                    + "message that is not a connect");
            }
            if (h.getLong() != l.id) {
                throw new NetTransportException(Reason.REMOTE, "a peer connected with the handle of another "
                    + "listener (another run?)");
            }
            a.identified = true;
            final int lid = h.getShort() & 0xffff;
            final int nq = h.get() & 0xff;
            final int psn = h.getInt();
            final long fifoAddr = h.getLong();
            final int fifoRkey = h.getInt();
            final int theirMtu = h.getInt();
            if (theirMtu != t.ctx.softwareMtu()) {
                // answered first, with our MTU, so the sender names the mismatch too instead of a closed socket
                a.mtuMismatch = mtuMismatch("the sender", theirMtu);
            }
            if (nq < 1 || nq > IbTransportContext.MAX_QPS) {
                throw new NetTransportException(Reason.REMOTE, "the sender asks for " + nq + " QPs (1.."
                    + IbTransportContext.MAX_QPS + ")");
            }
            checkLid(lid);
            a.nqps = nq;
            a.comm = new IbRecv(t, t.nic(l.dev), nq);
            a.comm.remLid = lid;
            a.comm.remPsn = psn & 0xffffff;
            a.comm.fifoAddr = fifoAddr;
            a.comm.fifoRkey = fifoRkey;
            a.stage = 1;
        }
        if (a.stage == 1) {
            final ByteBuffer q = a.hs.read(4 * a.nqps);
            if (q == null) {
                return null;
            }
            final IbRecv r = a.comm;
            for (int i = 0; i < a.nqps; i++) {
                toRts(r.qps[i], checkQpn(q.getInt()), r.remLid, r.psn, r.remPsn);
            }
            final ByteBuffer m = ByteBuffer.allocate(ACCEPT_BYTES + 4 * a.nqps).putInt(ACCEPT_MAGIC)
                .putShort((short) r.lid).put((byte) a.nqps).putInt(r.psn).putLong(r.sizesMr.address())
                .putInt(r.sizesMr.rkey()).putInt(t.ctx.softwareMtu());
            for (final QueuePair qp : r.qps) {
                m.putInt(qp.qpNum());
            }
            a.hs.send(m);
            a.stage = 2;
        }
        if (a.stage == 2) {
            if (!a.hs.flush()) {
                return null;
            }
            a.stage = 3;
            if (a.mtuMismatch != null) {
                throw new NetTransportException(Reason.REMOTE, a.mtuMismatch);
            }
        }
        final ByteBuffer ready = a.hs.read(4);
        if (ready == null) {
            return null;
        }
        if (ready.getInt() != READY_MAGIC || a.hs.buffered() != 0) {
            throw new NetTransportException(Reason.REMOTE, "the sender's ready message is wrong");
        }
        a.hs.close();
        return a.comm;
    }

    /**
     * Both ends of a connection must cut packets alike: a responder checks every payload against its own QP's MTU,
     * so a mismatch would show only later, as a NAK on the first packet larger than the smaller MTU.
     */
    private String mtuMismatch(final String peer, final int theirs) {
        return peer + " uses software MTU " + describeMtu(theirs) + ", this end " + describeMtu(t.ctx.softwareMtu())
            + ": both ends of a connection need the same " + CommConfiguration.IB_SOFTWARE_MTU.name();
    }

    private static String describeMtu(final int mtu) {
        return mtu == 0 ? "0 (the path MTU)" : mtu + " B";
    }

    private static String remote(final SocketChannel ch) {
        try {
            return String.valueOf(ch.getRemoteAddress());
        } catch (final java.io.IOException e) {
            return "(unknown address)";
        }
    }

    private void checkAge(final long started, final String what) {
        if (System.nanoTime() - started > t.ctx.timeout().toNanos()) {
            throw new NetTransportException(Reason.TIMEOUT, what + " did not finish within "
                + t.ctx.timeout().toMillis() + " ms");
        }
    }

    /** A unicast LID, as the connection manager requires (0 is reserved, 0xC000 and up are multicast/permissive). */
    private static void checkLid(final int lid) {
        if (lid < 1 || lid > 0xBFFF) {
            throw new NetTransportException(Reason.REMOTE, "the peer sent LID " + lid + " (a unicast LID is 1..0xBFFF)");
        }
    }

    /** QPs 0 and 1 are the special management QPs; QP numbers are 24 bits. */
    private static int checkQpn(final int qpn) {
        if (qpn < 2 || qpn > 0xffffff) {
            throw new NetTransportException(Reason.REMOTE, "the peer sent QP number " + qpn);
        }
        return qpn;
    }

    private void toRts(final QueuePair qp, final int remoteQpn, final int lid, final int sqPsn, final int rqPsn) {
        try {
            QpBringUp.toRts(qp, remoteQpn, lid, sqPsn, rqPsn, t.qpAttr);
        } catch (final VerbsException e) {
            throw new NetTransportException(Reason.SYSTEM, "bringing QP " + qp.qpNum() + " to RTS: "
                + e.getMessage(), e);
        }
    }

    private static Listen listen(final ListenComm c) {
        if (!(c instanceof Listen l)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/IB listen comm: " + c);
        }
        if (l.closed) {
            throw new NetTransportException(Reason.INVALID_USAGE, "listen comm is closed");
        }
        return l;
    }


    void closeListen(final ListenComm comm) {
        final Listen l = listen(comm);
        l.closed = true;
        for (final Accepting a : l.pending) {
            a.hs.close();
            if (a.comm != null) {
                a.comm.release();
            }
        }
        l.pending.clear();
        try {
            l.server.close();
        } catch (final java.io.IOException ignored) {
            // closing
        }
    }

    void close() {
        for (final Connecting c : connecting.values()) {
            try {
                c.ch.close();
            } catch (final java.io.IOException ignored) {
                // closing
            }
            if (c.comm != null) {
                c.comm.release();
            }
        }
        connecting.clear();
    }
}
