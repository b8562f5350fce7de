/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import io.gdrkit.core.mem.DmaMemory;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.security.SecureRandom;

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
    static final int ENTRY = 32;
    static final int MAX_RECVS = IbTransportContext.MAX_RECVS;
    static final int SLOT_BYTES = MAX_RECVS * ENTRY;
    private static final int CHUNK_ALIGN = 128;
    static final long KIND_FIFO = 1L << 56;
    static final long KIND_SEND = 2L << 56;
    static final long KIND_RECV = 3L << 56;
    static final long KIND_FLUSH = 4L << 56;
    static final long KIND_MASK = 0xffL << 56;
    private static final VarHandle SEQ = ValueLayout.JAVA_LONG.varHandle();
    static final long NOT_WAITED = Long.MIN_VALUE;


    final IbTransportContext ctx;
    final SecureRandom random = new SecureRandom();
    final QpAttr qpAttr;
    /** The devices, in {@code dev} order; a registration holds one MR per entry (see {@link #regMr}). */
    private final NetNic[] nics;
    private final IbConnections connections = new IbConnections(this);

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

    NetNic nic(final int dev) {
        if (dev < 0 || dev >= nics.length) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "NET/IB device " + dev + " outside 0.."
                + (nics.length - 1));
        }
        return nics[dev];
    }

    /** {@code nic}'s index in {@link #nics}. */
    int devOf(final NetNic nic) {
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

    // ------------------------------------------------------------------ connection setup (IbConnections)

    @Override
    public ListenComm listen(final int dev, final byte[] handle) {
        return connections.listen(dev, handle);
    }

    @Override
    public SendComm connect(final int dev, final byte[] handle) {
        return connections.connect(dev, handle);
    }

    @Override
    public RecvComm accept(final ListenComm listenComm) {
        return connections.accept(listenComm);
    }

    /** Connections in setup a listener keeps at once; beyond them the oldest stranger is closed. */
    static final int MAX_PENDING_ACCEPTS = 16;

    /**
     * How {@code listenComm}'s accept failures (EMFILE and the like) were met: counted, remembered, backed off.
     *
     * @param listenComm a listener of this transport
     * @return its backoff
     */
    public io.gdrkit.core.net.AcceptBackoff acceptBackoff(final ListenComm listenComm) {
        return connections.acceptBackoff(listenComm);
    }

    /**
     * Connections to this transport's listeners that were dropped as strangers: they never named a listener of
     * this run (a message that is not a connect, another listener's id, silence past the timeout, a socket closed
     * half-way), or came when {@value #MAX_PENDING_ACCEPTS} setups were under way already.
     *
     * @return the count since the transport was made
     */
    public long strangersRefused() {
        return connections.strangersRefused();
    }

    /**
     * Why the last stranger was dropped.
     *
     * @return the reason, or null when none was
     */
    public String lastStrangerRefused() {
        return connections.lastStrangerRefused();
    }

    // ------------------------------------------------------------------ comms (IbComm, IbSend, IbRecv, IbRequest)

    private IbSend send(final SendComm c) {
        if (!(c instanceof IbSend s)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/IB send comm: " + c);
        }
        s.check();
        return s;
    }

    private IbRecv recv(final RecvComm c) {
        if (!(c instanceof IbRecv r)) {
            throw new NetTransportException(Reason.INVALID_ARGUMENT, "not a NET/IB receive comm: " + c);
        }
        r.check();
        return r;
    }

    private IbComm comm(final Object c) {
        if (c instanceof IbSend s) {
            s.check();
            return s;
        }
        if (c instanceof IbRecv r) {
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
    static final class IbMr implements MrHandle {
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
        final IbComm c = comm(comm);
        final IbMr m = mr(c, mhandle);
        m.released = true;
        for (final MemoryRegion r : m.byDev) {
            r.deregister();
        }
    }

    private static IbMr mr(final IbComm c, final MrHandle h) {
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
        final IbSend s = send(comm);
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
        return ((IbSend) comm).fifo;
    }

    private NetTransportException failSend(final IbSend s, final Reason reason, final String why) {
        s.fail(reason, why);
        return new NetTransportException(reason, why);
    }

    /** Posts the data, sizes and IMM writes of a fully matched slot. */
    private void postSlot(final IbSend s, final int slot, final int n) {
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
        final IbRecv r = recv(comm);
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
        final IbRecv r = recv(comm);
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
        final IbComm c = q.comm;
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
        final IbSend s = send(comm);
        s.closed = true;
        s.release();
    }

    @Override
    public void closeRecv(final RecvComm comm) {
        final IbRecv r = recv(comm);
        r.closed = true;
        r.release();
    }

    @Override
    public void closeListen(final ListenComm comm) {
        connections.closeListen(comm);
    }

    @Override
    public void close() {
        connections.close();
    }
}
