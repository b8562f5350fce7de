/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import io.gdrkit.comm.config.CommConfiguration;
import io.gdrkit.core.mem.DmaMemory;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * NCCL's net_ib protocol over gdrkit verbs (any provider: the software NIC, or a real HCA through the native
 * provider).
 *
 * <p>Per connection: {@code NCCL_IB_QPS_PER_CONNECTION} RC QPs, one CQ, on the sender a CTS FIFO of
 * {@link NetTransport#MAX_REQUESTS} slots of {@link IbTransportContext#MAX_RECVS} entries, and on the receiver a
 * sizes array of the same shape and a flush QP connected to itself.
 *
 * <pre>
 *  receiver                                            sender
 *  irecv(n bufs) --post RECV(s) on the data QP(s)
 *               --RDMA WRITE fifo slot [head % 32] ---&gt; fifo entry: addr | rkey | size | tag | n | seq
 *                                                       isend(tag): null until the slot's seq = head + 1;
 *                                                       matches the entry by tag; once all n are matched:
 *  data lands   &lt;--RDMA WRITE data (chunk per QP with NCCL_IB_SPLIT_DATA_ON_QPS, else one QP round robin)
 *  sizes land   &lt;--RDMA WRITE sizes[n] (only n &gt; 1, on QP 0, before its IMM)
 *  RECV_RDMA_WITH_IMM &lt;--WRITE_WITH_IMM (imm = size for n = 1): the last data WRITE carries it when the
 *                        message is at most NCCL_IB_AR_THRESHOLD, else a separate 0-byte WRITE_WITH_IMM
 *  test(): done when every QP used has delivered its IMM
 *  iflush: 1-byte RDMA READ of the buffer on the flush QP (only when the flush gate said so)
 * </pre>
 *
 * FIFO entry (32 bytes, little-endian as the host writes it):
 * <pre>
 *  0               8        12       16       20       24
 *  +---------------+--------+--------+--------+--------+----------------+
 *  | addr (u64)    | rkey   | size   | tag    | n      | seq (u64)      |
 *  +---------------+--------+--------+--------+--------+----------------+
 * </pre>
 * The sender trusts none of it: n outside 1..MAX_RECVS, a negative size, a seq of another slot or an n that
 * changes between the first and the last match of a slot (kept per slot at the first match) is a REMOTE error; a send larger than the matched receive is INVALID_USAGE (truncation), as NCCL reports it.
 */
public final class IbTransport implements NetTransport {
    static final int HANDLE_MAGIC = 0x47494231; // "GIB1"
    private static final int CONNECT_MAGIC = 0x47494243; // "GIBC"
    private static final int ACCEPT_MAGIC = 0x47494241; // "GIBA"
    private static final int READY_MAGIC = 0x47494252; // "GIBR"
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
    private static final int CONNECT_BYTES = 35;
    /** The accept message's fixed part; see {@link #CONNECT_BYTES}. */
    private static final int ACCEPT_BYTES = 27;
    static final int ENTRY = 32;
    private static final int MAX_RECVS = IbTransportContext.MAX_RECVS;
    private static final int SLOT_BYTES = MAX_RECVS * ENTRY;
    private static final int CHUNK_ALIGN = 128;
    private static final long KIND_FIFO = 1L << 56;
    private static final long KIND_SEND = 2L << 56;
    private static final long KIND_RECV = 3L << 56;
    private static final long KIND_FLUSH = 4L << 56;
    private static final long KIND_MASK = 0xffL << 56;
    private static final VarHandle SEQ = ValueLayout.JAVA_LONG.varHandle();
    private static final long NOT_WAITED = Long.MIN_VALUE;

    private final IbTransportContext ctx;
    private final SecureRandom random = new SecureRandom();
    private final Map<byte[], Connecting> connecting = new IdentityHashMap<>();
    private final QpAttr qpAttr;
    /** The devices, in {@code dev} order; a registration holds one MR per entry (see {@link #regMr}). */
    private final NetNic[] nics;

    /**
     * Creates the transport with a context's settings, concluding the context first
     * ({@link IbTransportContext#conclude()}).
     *
     * @param context the devices and InfiniBand settings to use
     * @throws IllegalArgumentException naming a malformed setting
     */
    public IbTransport(final IbTransportContext context) {
        this.ctx = context.concludeOnce();
        this.nics = ctx.nics().toArray(new NetNic[0]);
        final QpAttr a = QpBringUp.rcDefaults().timeout(ctx.ibTimeout()).retryCnt(ctx.ibRetryCnt());
        this.qpAttr = ctx.softwareMtu() > 0 ? a.softwareMtu(ctx.softwareMtu()) : a;
    }

    /** {@return the concluded context this transport runs with} */
    public IbTransportContext context() {
        return ctx;
    }

    @Override
    public String name() {
        return "IB";
    }

    @Override
    public int devices() {
        return nics.length;
    }

    private NetNic nic(final int dev) {
        if (dev < 0 || dev >= nics.length) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "NET/IB device " + dev + " outside 0.."
                + (nics.length - 1));
        }
        return nics[dev];
    }

    /** {@code nic}'s index in {@link #nics}. */
    private int devOf(final NetNic nic) {
        for (int d = 0; d < nics.length; d++) {
            if (nics[d] == nic) {
                return d;
            }
        }
        throw new NetTransportException(Reason.INTERNAL, nic + " is not a device of this transport");
    }

    @Override
    public NetProperties getProperties(final int dev) {
        final NetNic n = nic(dev);
        final int ptr = NetProperties.PTR_HOST | (n.caps().peermem() ? NetProperties.PTR_CUDA : 0)
            | (n.caps().dmabufProvider() ? NetProperties.PTR_DMABUF : 0);
        // a software NIC has no PCI path and no rated speed: unknown (0), never invented
        return new NetProperties(n.context().device().name(), "unknown", n.context().device().guid(), ptr, true, 0,
            1, 0f, 65536, MAX_RECVS, NetProperties.NetDeviceType.HOST, n.context().device().isSimulated());
    }

    // ------------------------------------------------------------------ connection setup

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

    private final class Connecting {
        final int dev;
        final Handshake.Listen target;
        final SocketChannel ch;
        final long started = System.nanoTime();
        Handshake hs;
        Send comm;
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
        Recv comm;
        int stage;
        int nqps;
        /** The sender's software MTU differs from ours: named once our accept (with our MTU) is on its way. */
        String mtuMismatch;
    }

    @Override
    public ListenComm listen(final int dev, final byte[] handle) {
        nic(dev);
        final ServerSocketChannel s = Handshake.listen(ctx.bind());
        final long id = random.nextLong();
        try {
            Handshake.writeHandle(handle, HANDLE_MAGIC, (InetSocketAddress) s.getLocalAddress(), id);
        } catch (final java.io.IOException e) {
            throw new NetTransportException(Reason.SYSTEM, "listener address: " + e.getMessage(), e);
        }
        return new Listen(dev, s, id);
    }

    @Override
    public SendComm connect(final int dev, final byte[] handle) {
        final NetNic nic = nic(dev);
        Connecting c = connecting.get(handle);
        if (c == null) {
            final Handshake.Listen target = Handshake.readHandle(handle, HANDLE_MAGIC, "NET/IB");
            c = new Connecting(dev, target);
            connecting.put(handle, c);
        }
        try {
            final Send s = stepConnect(c, nic);
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

    private Send stepConnect(final Connecting c, final NetNic nic) {
        checkAge(c.started, "connect to " + c.target.address() + " (stage " + c.stage + ")");
        switch (c.stage) {
            case 0 -> {
                if (!Handshake.finishConnect(c.ch, c.target.address())) {
                    return null;
                }
                c.hs = new Handshake(c.ch, "NET/IB listener " + c.target.address());
                c.comm = new Send(nic, ctx.qpsPerConnection());
                final ByteBuffer m = ByteBuffer.allocate(CONNECT_BYTES + 4 * c.comm.qps.length)
                    .putInt(CONNECT_MAGIC).putLong(c.target.id()).putShort((short) c.comm.lid)
                    .put((byte) c.comm.qps.length).putInt(c.comm.psn).putLong(c.comm.fifoMr.address())
                    .putInt(c.comm.fifoMr.rkey()).putInt(ctx.softwareMtu());
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
            if (theirMtu != ctx.softwareMtu()) {
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

    @Override
    public RecvComm accept(final ListenComm listenComm) {
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
                final Recv r = stepAccept(l, a);
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

    /** Connections in setup a listener keeps at once; beyond them the oldest stranger is closed. */
    static final int MAX_PENDING_ACCEPTS = 16;

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

    /**
     * How {@code listenComm}'s accept failures (EMFILE and the like) were met: counted, remembered, backed off.
     *
     * @param listenComm a listener of this transport
     * @return its backoff
     */
    public io.gdrkit.core.net.AcceptBackoff acceptBackoff(final ListenComm listenComm) {
        return listen(listenComm).acceptBackoff;
    }

    /**
     * Connections to this transport's listeners that were dropped as strangers: they never named a listener of
     * this run (a message that is not a connect, another listener's id, silence past the timeout, a socket closed
     * half-way), or came when {@value #MAX_PENDING_ACCEPTS} setups were under way already.
     *
     * @return the count since the transport was made
     */
    public long strangersRefused() {
        return strangers;
    }

    /**
     * Why the last stranger was dropped.
     *
     * @return the reason, or null when none was
     */
    public String lastStrangerRefused() {
        return lastStranger;
    }

    private Recv stepAccept(final Listen l, final Accepting a) {
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
            if (theirMtu != ctx.softwareMtu()) {
                // answered first, with our MTU, so the sender names the mismatch too instead of a closed socket
                a.mtuMismatch = mtuMismatch("the sender", theirMtu);
            }
            if (nq < 1 || nq > IbTransportContext.MAX_QPS) {
                throw new NetTransportException(Reason.REMOTE, "the sender asks for " + nq + " QPs (1.."
                    + IbTransportContext.MAX_QPS + ")");
            }
            checkLid(lid);
            a.nqps = nq;
            a.comm = new Recv(nic(l.dev), nq);
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
            final Recv r = a.comm;
            for (int i = 0; i < a.nqps; i++) {
                toRts(r.qps[i], checkQpn(q.getInt()), r.remLid, r.psn, r.remPsn);
            }
            final ByteBuffer m = ByteBuffer.allocate(ACCEPT_BYTES + 4 * a.nqps).putInt(ACCEPT_MAGIC)
                .putShort((short) r.lid).put((byte) a.nqps).putInt(r.psn).putLong(r.sizesMr.address())
                .putInt(r.sizesMr.rkey()).putInt(ctx.softwareMtu());
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
        return peer + " uses software MTU " + describeMtu(theirs) + ", this end " + describeMtu(ctx.softwareMtu())
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
        if (System.nanoTime() - started > ctx.timeout().toNanos()) {
            throw new NetTransportException(Reason.TIMEOUT, what + " did not finish within "
                + ctx.timeout().toMillis() + " ms");
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
            QpBringUp.toRts(qp, remoteQpn, lid, sqPsn, rqPsn, qpAttr);
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

    // ------------------------------------------------------------------ comms

    /** What both ends share: QPs, one CQ, the request pool and the first error. */
    private abstract class Comm {
        final NetNic nic;
        /** {@link #nic}'s device index: which MR of a registration this comm's work requests name. */
        final int dev;
        final Arena arena = Arena.ofShared();
        final CompletionQueue cq;
        final QueuePair[] qps;
        final int lid;
        final int psn = random.nextInt(0x1000000);
        final WorkCompletion[] wcs = new WorkCompletion[16];
        final IbRequest[] pool;
        /** Free requests in [0, pool.length - inFlight), taken from the top. */
        final IbRequest[] freeList;
        int inFlight;
        long head;
        String error;
        Reason errorReason;
        boolean closed;

        Comm(final NetNic nic, final int nqps, final int poolSize) {
            this.nic = nic;
            this.dev = devOf(nic);
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new WorkCompletion();
            }
            pool = new IbRequest[poolSize];
            freeList = new IbRequest[poolSize];
            for (int i = 0; i < poolSize; i++) {
                pool[i] = new IbRequest(this, i);
                freeList[i] = pool[i];
            }
            try {
                this.lid = nic.context().queryPort(1).lid();
                this.cq = nic.context().createCq(nqps * (MAX_REQUESTS * (MAX_RECVS + 3) + MAX_REQUESTS) + 64);
                this.qps = new QueuePair[nqps];
                for (int i = 0; i < nqps; i++) {
                    final QpInitAttr init = new QpInitAttr().cqs(cq, cq);
                    init.cap.maxSendWr(MAX_REQUESTS * (MAX_RECVS + 3)).maxRecvWr(MAX_REQUESTS).maxSendSge(1)
                        .maxRecvSge(1).maxInlineData(0);
                    qps[i] = nic.pd().createQp(init);
                }
            } catch (final VerbsException e) {
                release();
                throw new NetTransportException(Reason.SYSTEM, "creating the connection's CQ/QPs on " + nic + ": "
                    + e.getMessage(), e);
            }
        }

        IbRequest take(final int kind) {
            if (inFlight >= pool.length) {
                throw new NetTransportException(Reason.INVALID_USAGE, "more than " + pool.length
                    + " requests in flight on one comm");
            }
            // a stack of free requests: O(1), where a scan of the pool grew with the requests in flight
            final IbRequest r = freeList[pool.length - 1 - inFlight];
            if (r.used) {
                throw new NetTransportException(Reason.INTERNAL, "request pool accounting");
            }
            r.reset(kind);
            inFlight++;
            return r;
        }

        void free(final IbRequest r) {
            if (!r.used) {
                throw new NetTransportException(Reason.INTERNAL, "request freed twice");
            }
            r.used = false;
            inFlight--;
            freeList[pool.length - 1 - inFlight] = r;
        }

        void fail(final Reason reason, final String why) {
            if (error == null) {
                error = why;
                errorReason = reason;
            }
        }

        void check() {
            if (closed) {
                throw new NetTransportException(Reason.INVALID_USAGE, "comm is closed");
            }
        }

        /** Polls the CQ once and applies what completed. */
        void progress() {
            final int n;
            try {
                n = cq.poll(wcs);
            } catch (final VerbsException e) {
                fail(Reason.SYSTEM, "polling the CQ: " + e.getMessage());
                return;
            }
            for (int i = 0; i < n; i++) {
                final WorkCompletion wc = wcs[i];
                if (wc.status != WcStatus.SUCCESS) {
                    fail(Reason.REMOTE, "QP " + wc.qpNum + ": completion " + WcStatus.name(wc.status)
                        + " (vendor error " + wc.vendorErr + ") for a " + kindName(wc.wrId)
                        + " on the connection to LID " + remoteLid());
                    continue;
                }
                completed(wc);
            }
        }

        abstract void completed(WorkCompletion wc);

        abstract int remoteLid();

        void release() {
            if (qps != null) {
                for (final QueuePair q : qps) {
                    if (q != null) {
                        closeQuietly(q);
                    }
                }
            }
            if (cq != null) {
                closeQuietly(cq);
            }
            arena.close();
        }
    }

    private static String kindName(final long wrId) {
        final long k = wrId & KIND_MASK;
        return k == KIND_FIFO ? "CTS FIFO write" : k == KIND_SEND ? "data write" : k == KIND_RECV ? "receive"
            : k == KIND_FLUSH ? "flush read" : "work request";
    }

    private static void dereg(final MemoryRegion mr) {
        if (mr != null) {
            closeQuietly(mr::deregister);
        }
    }

    private static void closeQuietly(final AutoCloseable c) {
        try {
            c.close();
        } catch (final Exception ignored) {
            // releasing after a failure: the first error is what matters
        }
    }

    /** The sending end: its FIFO (written by the receiver), per-slot matching state and the WR chain. */
    private final class Send extends Comm implements SendComm {
        final MemorySegment fifo;
        final MemoryRegion fifoMr;
        final MemorySegment sizes;
        final MemoryRegion sizesSrcMr;
        long sizesAddr;
        int sizesRkey;
        int remLid;
        int qpRound;
        /** Per slot: the requests matched so far for entry i (null: not yet). */
        final IbRequest[][] matched = new IbRequest[MAX_REQUESTS][MAX_RECVS];
        final int[] matchedCount = new int[MAX_REQUESTS];
        /** Per slot: the receive count n read at its first match (the peer's later rewrites are not used). */
        final int[] slotN = new int[MAX_REQUESTS];
        final int[] pendingQps = new int[MAX_REQUESTS];
        final SendWorkRequest[] chain = new SendWorkRequest[MAX_RECVS + 2];
        /** Per pending send request: its source address and lkey. */
        final long[] src = new long[MAX_REQUESTS * MAX_RECVS];
        final int[] key = new int[MAX_REQUESTS * MAX_RECVS];

        Send(final NetNic nic, final int nqps) {
            super(nic, nqps, MAX_REQUESTS * MAX_RECVS);
            try {
                fifo = arena.allocate((long) MAX_REQUESTS * SLOT_BYTES, 4096);
                fifoMr = nic.pd().registerMr(fifo, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
                sizes = arena.allocate((long) MAX_REQUESTS * MAX_RECVS * 4, 64);
                sizesSrcMr = nic.pd().registerMr(sizes, AccessFlags.LOCAL_WRITE);
            } catch (final VerbsException e) {
                release();
                throw new NetTransportException(Reason.SYSTEM, "registering the CTS FIFO: " + e.getMessage(), e);
            }
            for (int i = 0; i < chain.length; i++) {
                chain[i] = new SendWorkRequest(1);
            }
        }

        @Override
        int remoteLid() {
            return remLid;
        }

        @Override
        void completed(final WorkCompletion wc) {
            if ((wc.wrId & KIND_MASK) != KIND_SEND) {
                return;
            }
            final int slot = (int) (wc.wrId & 0xffff);
            if (--pendingQps[slot] == 0) {
                for (int i = 0; i < MAX_RECVS; i++) {
                    final IbRequest r = matched[slot][i];
                    if (r != null) {
                        r.done = true;
                        matched[slot][i] = null;
                    }
                }
                matchedCount[slot] = 0;
            }
        }

        @Override
        void release() {
            dereg(fifoMr);
            dereg(sizesSrcMr);
            super.release();
        }
    }

    /** The receiving end: FIFO staging, the sizes the sender writes, the flush QP. */
    private final class Recv extends Comm implements RecvComm {
        final MemorySegment staging;
        final MemoryRegion stagingMr;
        final MemorySegment sizes;
        final MemoryRegion sizesMr;
        final MemorySegment flushBuf;
        final MemoryRegion flushMr;
        final QueuePair flushQp;
        int remLid;
        int remPsn;
        long fifoAddr;
        int fifoRkey;
        int qpRound;
        final IbRequest[] slots = new IbRequest[MAX_REQUESTS];
        final IbMr[] mrs = new IbMr[MAX_RECVS];
        final SendWorkRequest wr = new SendWorkRequest(1);
        final RecvWorkRequest rwr = new RecvWorkRequest(1);

        Recv(final NetNic nic, final int nqps) {
            super(nic, nqps, MAX_REQUESTS * 2);
            try {
                staging = arena.allocate((long) MAX_REQUESTS * SLOT_BYTES, 4096);
                stagingMr = nic.pd().registerMr(staging, AccessFlags.LOCAL_WRITE);
                sizes = arena.allocate((long) MAX_REQUESTS * MAX_RECVS * 4, 4096);
                sizesMr = nic.pd().registerMr(sizes, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
                flushBuf = arena.allocate(64, 64);
                flushMr = nic.pd().registerMr(flushBuf, AccessFlags.LOCAL_WRITE);
                if (ctx.flush()) {
                    final QpInitAttr init = new QpInitAttr().cqs(cq, cq);
                    init.cap.maxSendWr(MAX_REQUESTS).maxRecvWr(1).maxSendSge(1).maxInlineData(0);
                    flushQp = nic.pd().createQp(init);
                    // connected to itself: the READ takes the path the NIC's writes into the buffer took
                    QpBringUp.toRts(flushQp, flushQp.qpNum(), lid, 0, 0, qpAttr);
                } else {
                    flushQp = null;
                }
            } catch (final VerbsException e) {
                release();
                throw new NetTransportException(Reason.SYSTEM, "setting up the receive side: " + e.getMessage(), e);
            }
        }

        @Override
        int remoteLid() {
            return remLid;
        }

        @Override
        void completed(final WorkCompletion wc) {
            final long kind = wc.wrId & KIND_MASK;
            if (kind == KIND_RECV) {
                final IbRequest r = slots[(int) (wc.wrId & 0xffff)];
                if (r == null || wc.opcode != WcOpcode.RECV_RDMA_WITH_IMM) {
                    fail(Reason.REMOTE, "the sender completed a receive that was not posted (opcode " + wc.opcode
                        + ")");
                    return;
                }
                if (r.n == 1) {
                    if (wc.immData < 0 || wc.immData > r.capacity[0]) {
                        r.fail(Reason.REMOTE, "the sender reports " + Integer.toUnsignedString(wc.immData)
                            + " bytes for a receive of " + r.capacity[0] + " (tag " + r.tags[0] + ")");
                    } else {
                        r.received[0] = wc.immData;
                    }
                }
                if (++r.arrived == r.expected) {
                    finishRecv(r);
                }
            } else if (kind == KIND_FLUSH) {
                pool[(int) (wc.wrId & 0xffff)].done = true;
            }
        }

        private void finishRecv(final IbRequest r) {
            if (r.n > 1) {
                final long base = (long) r.slot * MAX_RECVS * 4;
                for (int i = 0; i < r.n; i++) {
                    final int s = sizes.get(ValueLayout.JAVA_INT_UNALIGNED, base + 4L * i);
                    if (s < 0 || s > r.capacity[i]) {
                        r.fail(Reason.REMOTE, "the sender reports " + Integer.toUnsignedString(s) + " bytes for "
                            + "receive " + i + " of " + r.capacity[i] + " (tag " + r.tags[i] + ")");
                    }
                    r.received[i] = s;
                }
            }
            slots[r.slot] = null;
            r.done = true;
        }

        @Override
        void release() {
            if (flushQp != null) {
                closeQuietly(flushQp);
            }
            dereg(stagingMr);
            dereg(sizesMr);
            dereg(flushMr);
            super.release();
        }
    }

    /** One request; pooled per comm (no allocation per message). */
    private static final class IbRequest implements Request {
        final Comm comm;
        final int index;
        int kind;
        boolean used;
        boolean done;
        int slot;
        int n;
        int expected;
        int arrived;
        int size;
        /** When test() first saw it in flight ({@link #NOT_WAITED} before): the request's timeout runs from there. */
        long waitingSince;
        String error;
        Reason errorReason;
        final int[] capacity = new int[MAX_RECVS];
        final int[] tags = new int[MAX_RECVS];
        final int[] received = new int[MAX_RECVS];

        IbRequest(final Comm comm, final int index) {
            this.comm = comm;
            this.index = index;
        }

        void reset(final int k) {
            kind = k;
            used = true;
            done = false;
            arrived = 0;
            expected = 0;
            error = null;
            errorReason = null;
            waitingSince = NOT_WAITED;
        }

        void fail(final Reason reason, final String why) {
            if (error == null) {
                error = why;
                errorReason = reason;
            }
        }
    }

    private Send send(final SendComm c) {
        if (!(c instanceof Send s)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/IB send comm: " + c);
        }
        s.check();
        return s;
    }

    private Recv recv(final RecvComm c) {
        if (!(c instanceof Recv r)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/IB receive comm: " + c);
        }
        r.check();
        return r;
    }

    private Comm comm(final Object c) {
        if (c instanceof Send s) {
            s.check();
            return s;
        }
        if (c instanceof Recv r) {
            r.check();
            return r;
        }
        throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/IB comm: " + c);
    }

    // ------------------------------------------------------------------ registration

    /**
     * A registration: one MR per device of the transport ({@code byDev[dev]}), all of the same range, so any comm of
     * this transport may use it whatever its device (regIsGlobal), as NCCL's net_ib registers a merged device's
     * buffers on each of its NICs.
     */
    private static final class IbMr implements MrHandle {
        final NetNic[] nics;
        final MemoryRegion[] byDev;
        /** byDev[0]: the range every entry covers. */
        final MemoryRegion mr;
        boolean released;

        IbMr(final NetNic[] nics, final MemoryRegion[] byDev) {
            this.nics = nics;
            this.byDev = byDev;
            this.mr = byDev[0];
        }

        @Override
        public long address() {
            return mr.address();
        }

        @Override
        public long length() {
            return mr.length();
        }
    }

    @Override
    public MrHandle regMr(final Object comm, final MemorySegment host) {
        comm(comm);
        return register(n -> n.pd().registerMr(host, NetNic.MR_ACCESS), "regMr of " + host.byteSize()
            + " host bytes");
    }

    /** One verbs registration, for {@link #register}. */
    private interface Registration {
        MemoryRegion on(NetNic nic);
    }

    /** Registers on every device; a failure on one deregisters those made before it. */
    private IbMr register(final Registration how, final String what) {
        final MemoryRegion[] byDev = new MemoryRegion[nics.length];
        int d = 0;
        try {
            for (; d < nics.length; d++) {
                byDev[d] = how.on(nics[d]);
            }
            return new IbMr(nics, byDev);
        } catch (final RuntimeException e) {
            for (int i = 0; i < d; i++) {
                try {
                    byDev[i].deregister();
                } catch (final RuntimeException ignored) {
                    // the registration's failure is what the caller hears about
                }
            }
            if (!(e instanceof VerbsException)) {
                throw e;
            }
            throw new NetTransportException(Reason.SYSTEM, what + (nics.length > 1 ? " on " + nics[d] : "") + ": "
                + e.getMessage(), e);
        }
    }

    @Override
    public MrHandle regMr(final Object comm, final DmaMemory device) {
        comm(comm);
        for (final NetNic n : nics) {
            if (!n.caps().peermem()) {
                throw new NetTransportException(Reason.INVALID_USAGE, "regMr of device memory on " + n
                    + ": ptrSupport has no CUDA (" + n.caps().peermemEvidence() + ")");
            }
        }
        return register(n -> n.pd().registerMr(device, NetNic.MR_ACCESS), "regMr of " + device.describe());
    }

    @Override
    public MrHandle regMrDmaBuf(final Object comm, final long address, final long length, final long offset,
                                final int fd) {
        comm(comm);
        for (final NetNic n : nics) {
            if (!n.caps().dmabufProvider()) {
                throw new NetTransportException(Reason.INVALID_USAGE, "regMrDmaBuf on " + n + ": ptrSupport has no "
                    + "DMABUF (" + n.caps().dmabufEvidence() + ")");
            }
        }
        return register(n -> n.pd().registerDmaBufMr(offset, length, address, fd, NetNic.MR_ACCESS),
            "regMrDmaBuf(fd " + fd + ", offset " + offset + ", " + length + " bytes)");
    }

    @Override
    public void deregMr(final Object comm, final MrHandle mhandle) {
        final Comm c = comm(comm);
        final IbMr m = mr(c, mhandle);
        m.released = true;
        for (final MemoryRegion r : m.byDev) {
            r.deregister();
        }
    }

    private static IbMr mr(final Comm c, final MrHandle h) {
        if (!(h instanceof IbMr m)) {
            throw new NetTransportException(Reason.INVALID_USAGE, "not a NET/IB registration: " + h);
        }
        if (m.released) {
            throw new NetTransportException(Reason.INVALID_USAGE, "registration at 0x" + Long.toHexString(
                m.mr.address()) + " was already deregistered");
        }
        if (c.dev >= m.nics.length || m.nics[c.dev] != c.nic) {
            throw new NetTransportException(Reason.INVALID_USAGE, "registration made on " + m.nics[0]
                + (m.nics.length > 1 ? " (and " + (m.nics.length - 1) + " more devices)" : "") + " used on "
                + c.nic);
        }
        return m;
    }

    private static void inside(final IbMr m, final long data, final long size, final String what) {
        inside(m, data, size, what, -1);
    }

    /** {@code what} and, when {@code index >= 0}, the index name the buffer only if the check fails. */
    private static void inside(final IbMr m, final long data, final long size, final String what, final int index) {
        if (size < 0 || data < m.mr.address() || data + size > m.mr.address() + m.mr.length()) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, what + (index >= 0 ? index : "") + " [0x" + Long.toHexString(data) + ", +"
                + size + ") is outside its registration [0x" + Long.toHexString(m.mr.address()) + ", +"
                + m.mr.length() + ")");
        }
    }

    // ------------------------------------------------------------------ data path

    @Override
    public Request isend(final SendComm comm, final long data, final int size, final int tag,
                         final MrHandle mhandle) {
        final Send s = send(comm);
        if (s.error != null) {
            throw new NetTransportException(s.errorReason, s.error);
        }
        final IbMr m = mr(s, mhandle);
        inside(m, data, size, "isend buffer");
        final int slot = (int) (s.head % MAX_REQUESTS);
        final long base = (long) slot * SLOT_BYTES;
        final long seq = (long) SEQ.getAcquire(s.fifo, base + 24);
        if (seq != s.head + 1) {
            s.progress();
            return null; // the receiver has not posted this receive yet
        }
        final int posted = s.fifo.get(ValueLayout.JAVA_INT_UNALIGNED, base + 20);
        if (posted < 1 || posted > MAX_RECVS) {
            throw failSend(s, Reason.REMOTE, "the receiver posted a FIFO entry with " + posted + " receives (1.."
                + MAX_RECVS + ")");
        }
        // the peer can rewrite its FIFO entry at any time: the count read at a slot's first match is the one used
        if (s.matchedCount[slot] == 0) {
            s.slotN[slot] = posted;
        } else if (posted != s.slotN[slot]) {
            throw failSend(s, Reason.REMOTE, "the receiver changed request " + (s.head + 1) + "'s receive count from "
                + s.slotN[slot] + " to " + posted + " while its sends were being matched");
        }
        final int n = s.slotN[slot];
        int match = -1;
        for (int i = 0; i < n; i++) {
            final long e = base + (long) i * ENTRY;
            if ((long) SEQ.getAcquire(s.fifo, e + 24) != s.head + 1) {
                return null; // a grouped slot not fully written yet
            }
            if (s.matched[slot][i] == null && s.fifo.get(ValueLayout.JAVA_INT_UNALIGNED, e + 16) == tag) {
                match = i;
                break;
            }
        }
        if (match < 0) {
            throw new NetTransportException(Reason.INVALID_USAGE, "isend with tag " + tag + ": the receiver posted "
                + "no receive with that tag in request " + (s.head + 1) + " (mismatched operations?)");
        }
        final long e = base + (long) match * ENTRY;
        final int cap = s.fifo.get(ValueLayout.JAVA_INT_UNALIGNED, e + 12);
        if (cap < 0) {
            throw failSend(s, Reason.REMOTE, "the receiver posted a receive of " + Integer.toUnsignedString(cap)
                + " bytes");
        }
        if (size > cap) {
            throw new NetTransportException(Reason.INVALID_USAGE, "message truncated: isend of " + size
                + " bytes (tag " + tag + ") into a receive of " + cap + " bytes");
        }
        final IbRequest r = s.take(1);
        r.slot = slot;
        r.size = size;
        r.n = n;
        // remember where the data comes from: the chain is built once the whole group is matched
        r.capacity[0] = match;
        r.received[0] = size;
        s.src[r.index] = data;
        s.key[r.index] = m.byDev[s.dev].lkey();
        s.matched[slot][match] = r;
        if (++s.matchedCount[slot] == n) {
            postSlot(s, slot, n);
            s.head++;
        }
        return r;
    }

    /** The CTS FIFO a receiver RDMA-writes into on this send side; tests play a hostile receiver with it. */
    static MemorySegment ctsFifo(final SendComm comm) {
        return ((Send) comm).fifo;
    }

    private NetTransportException failSend(final Send s, final Reason reason, final String why) {
        s.fail(reason, why);
        return new NetTransportException(reason, why);
    }

    /** Posts the data, sizes and IMM writes of a fully matched slot. */
    private void postSlot(final Send s, final int slot, final int n) {
        final long base = (long) slot * SLOT_BYTES;
        long total = 0;
        for (int i = 0; i < n; i++) {
            total += s.matched[slot][i].size;
            s.sizes.set(ValueLayout.JAVA_INT_UNALIGNED, (long) slot * MAX_RECVS * 4 + 4L * i,
                s.matched[slot][i].size);
        }
        final int nq = s.qps.length;
        final boolean split = ctx.splitDataOnQps() && nq > 1;
        final int first = split ? 0 : s.qpRound;
        final int used = split ? nq : 1;
        if (!split) {
            s.qpRound = (s.qpRound + 1) % nq;
        }
        s.pendingQps[slot] = used;
        final boolean separateImm = total > ctx.arThreshold();
        final int imm = n == 1 ? s.matched[slot][0].size : 0;
        for (int u = 0; u < used; u++) {
            final int q = first + u;
            int w = 0;
            for (int i = 0; i < n; i++) {
                final IbRequest r = s.matched[slot][i];
                final long e = base + (long) i * ENTRY;
                final long raddr = s.fifo.get(ValueLayout.JAVA_LONG_UNALIGNED, e);
                final int rkey = s.fifo.get(ValueLayout.JAVA_INT_UNALIGNED, e + 8);
                long off = 0;
                long len = r.size;
                if (split) {
                    final long chunk = Math.max(CHUNK_ALIGN, ((r.size + nq - 1L) / nq + CHUNK_ALIGN - 1)
                        / CHUNK_ALIGN * CHUNK_ALIGN);
                    off = Math.min(r.size, chunk * u);
                    len = Math.min(r.size - off, chunk);
                }
                if (len > 0) {
                    s.chain[w++].clear().opcode(WrOpcode.RDMA_WRITE).sge(s.src[r.index] + off, (int) len,
                        s.key[r.index]).remote(raddr + off, rkey);
                }
            }
            if (n > 1 && u == 0) {
                s.chain[w++].clear().opcode(WrOpcode.RDMA_WRITE).sge(s.sizesSrcMr, (long) slot * MAX_RECVS * 4,
                    n * 4).remote(s.sizesAddr + (long) slot * MAX_RECVS * 4, s.sizesRkey);
            }
            if (w == 0 || separateImm) {
                final long e0 = base;
                s.chain[w++].clear().opcode(WrOpcode.RDMA_WRITE_WITH_IMM).numSge(0)
                    .remote(s.fifo.get(ValueLayout.JAVA_LONG_UNALIGNED, e0),
                        s.fifo.get(ValueLayout.JAVA_INT_UNALIGNED, e0 + 8));
            } else {
                s.chain[w - 1].opcode(WrOpcode.RDMA_WRITE_WITH_IMM);
            }
            final SendWorkRequest last = s.chain[w - 1];
            last.imm(imm).flags(SendFlags.SIGNALED).wrId(KIND_SEND | slot);
            for (int k = 0; k < w; k++) {
                s.chain[k].next(k + 1 < w ? s.chain[k + 1] : null);
            }
            try {
                s.qps[q].postSend(s.chain[0]);
            } catch (final VerbsException e) {
                throw failSend(s, Reason.SYSTEM, "posting the data of request " + (s.head + 1) + " on QP "
                    + s.qps[q].qpNum() + ": " + e.getMessage());
            }
        }
    }

    @Override
    public Request irecv(final RecvComm comm, final int n, final long[] data, final int[] sizes, final int[] tags,
                         final MrHandle[] mhandles) {
        final Recv r = recv(comm);
        if (r.error != null) {
            throw new NetTransportException(r.errorReason, r.error);
        }
        if (n < 1 || n > MAX_RECVS) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "irecv of " + n + " buffers (1.." + MAX_RECVS
                + ")");
        }
        if (data.length < n || sizes.length < n || tags.length < n || mhandles.length < n) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "irecv arrays shorter than n = " + n);
        }
        final int slot = (int) (r.head % MAX_REQUESTS);
        if (r.slots[slot] != null) {
            throw new NetTransportException(Reason.INVALID_USAGE, "more than " + MAX_REQUESTS
                + " receives in flight on one comm");
        }
        final IbMr[] mrs = r.mrs; // validated first, before anything is posted; no array or text per call
        for (int i = 0; i < n; i++) {
            mrs[i] = mr(r, mhandles[i]);
            inside(mrs[i], data[i], sizes[i], "irecv buffer ", i);
        }
        final IbRequest q = r.take(2);
        q.slot = slot;
        q.n = n;
        for (int i = 0; i < n; i++) {
            q.capacity[i] = sizes[i];
            q.tags[i] = tags[i];
            q.received[i] = 0;
        }
        final int nq = r.qps.length;
        final boolean split = ctx.splitDataOnQps() && nq > 1;
        q.expected = split ? nq : 1;
        try {
            if (split) {
                for (final QueuePair qp : r.qps) {
                    r.rwr.wrId = KIND_RECV | slot;
                    qp.postRecv(r.rwr.numSge(0));
                }
            } else {
                r.rwr.wrId = KIND_RECV | slot;
                r.qps[r.qpRound].postRecv(r.rwr.numSge(0));
                r.qpRound = (r.qpRound + 1) % nq;
            }
            final long base = (long) slot * SLOT_BYTES;
            final long seq = r.head + 1;
            for (int i = 0; i < n; i++) {
                final long e = base + (long) i * ENTRY;
                r.staging.set(ValueLayout.JAVA_LONG_UNALIGNED, e, data[i]);
                r.staging.set(ValueLayout.JAVA_INT_UNALIGNED, e + 8, mrs[i].byDev[r.dev].rkey());
                r.staging.set(ValueLayout.JAVA_INT_UNALIGNED, e + 12, sizes[i]);
                r.staging.set(ValueLayout.JAVA_INT_UNALIGNED, e + 16, tags[i]);
                r.staging.set(ValueLayout.JAVA_INT_UNALIGNED, e + 20, n);
                r.staging.set(ValueLayout.JAVA_LONG_UNALIGNED, e + 24, seq);
            }
            r.slots[slot] = q;
            r.wr.clear().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).wrId(KIND_FIFO | slot)
                .sge(r.stagingMr, base, n * ENTRY).remote(r.fifoAddr + base, r.fifoRkey);
            r.qps[0].postSend(r.wr);
        } catch (final VerbsException e) {
            r.fail(Reason.SYSTEM, "posting receive " + (r.head + 1) + ": " + e.getMessage());
            throw new NetTransportException(Reason.SYSTEM, r.error, e);
        }
        r.head++;
        return q;
    }

    @Override
    public Request iflush(final RecvComm comm, final int n, final long[] data, final int[] sizes,
                          final MrHandle[] mhandles) {
        final Recv r = recv(comm);
        if (!ctx.flush()) {
            return null;
        }
        int last = -1;
        for (int i = 0; i < n; i++) {
            if (sizes[i] > 0) {
                last = i;
            }
        }
        if (last < 0) {
            return null;
        }
        final IbMr m = mr(r, mhandles[last]);
        inside(m, data[last], 1, "iflush buffer");
        final IbRequest q = r.take(3);
        try {
            r.wr.clear().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).wrId(KIND_FLUSH | q.index)
                .sge(r.flushMr, 0, 1).remote(data[last], m.byDev[r.dev].rkey());
            r.flushQp.postSend(r.wr);
        } catch (final VerbsException e) {
            r.free(q);
            throw new NetTransportException(Reason.SYSTEM, "posting the flush read: " + e.getMessage(), e);
        }
        return q;
    }

    @Override
    public boolean test(final Request request, final int[] sizes) {
        if (!(request instanceof IbRequest q) || !q.used) {
            throw new NetTransportException(Reason.INVALID_USAGE, "test of a request that is not in flight: "
                + request);
        }
        final Comm c = q.comm;
        c.check();
        if (!q.done) {
            c.progress();
        }
        if (q.error != null || (!q.done && c.error != null)) {
            final Reason why = q.error != null ? q.errorReason : c.errorReason;
            final String msg = q.error != null ? q.error : c.error;
            c.free(q);
            throw new NetTransportException(why, msg);
        }
        if (!q.done) {
            // the timeout runs from the first test: a receive posted ahead (a collective keeps the next ones posted,
            // as NCCL's proxy does) is not late while nobody waits for it
            final long now = System.nanoTime();
            if (q.waitingSince == NOT_WAITED) {
                q.waitingSince = now;
            } else if (now - q.waitingSince > ctx.timeout().toNanos()) {
                final String what = q.kind == 1 ? "isend of " + q.size + " bytes" : q.kind == 2
                    ? "irecv (tag " + q.tags[0] + ", " + q.n + " buffer(s))" : "iflush";
                c.fail(Reason.TIMEOUT, what + " did not complete within " + ctx.timeout().toMillis()
                    + " ms (the peer stopped? mismatched operations?)");
                c.free(q);
                throw new NetTransportException(Reason.TIMEOUT, c.error);
            }
            return false;
        }
        if (sizes != null) {
            if (q.kind == 2) {
                System.arraycopy(q.received, 0, sizes, 0, Math.min(q.n, sizes.length));
            } else if (q.kind == 1 && sizes.length > 0) {
                sizes[0] = q.size;
            }
        }
        c.free(q);
        return true;
    }

    // ------------------------------------------------------------------ close

    @Override
    public void closeSend(final SendComm comm) {
        final Send s = send(comm);
        s.closed = true;
        s.release();
    }

    @Override
    public void closeRecv(final RecvComm comm) {
        final Recv r = recv(comm);
        r.closed = true;
        r.release();
    }

    @Override
    public void closeListen(final ListenComm comm) {
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

    @Override
    public void close() {
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
