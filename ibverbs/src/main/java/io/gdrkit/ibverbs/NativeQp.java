/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static io.gdrkit.ibverbs.IbvLayouts.QP;
import static io.gdrkit.ibverbs.IbvLayouts.QP_ATTR;
import static io.gdrkit.ibverbs.IbvLayouts.QP_INIT_ATTR;
import static io.gdrkit.ibverbs.IbvLayouts.RECV_WR;
import static io.gdrkit.ibverbs.IbvLayouts.SEND_WR;
import static io.gdrkit.ibverbs.IbvLayouts.SGE;
import static io.gdrkit.ibverbs.IbvLayouts.offset;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.Sge;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * {@code struct ibv_qp}. Work requests are written into native {@code ibv_send_wr}/{@code ibv_recv_wr} arrays and
 * SGE lists allocated once per QP (a chain up to the queue depth), then handed to the provider's {@code post_send}
 * / {@code post_recv} through the ops table: no allocation per post.
 */
final class NativeQp implements QueuePair {
    private static final long SWR = SEND_WR.byteSize();
    private static final long RWR = RECV_WR.byteSize();
    private static final long SGE_SIZE = SGE.byteSize();
    private static final long S_NEXT = offset(SEND_WR, "next");
    private static final long S_SGL = offset(SEND_WR, "sg_list");
    private static final long S_NSGE = offset(SEND_WR, "num_sge");
    private static final long S_OPCODE = offset(SEND_WR, "opcode");
    private static final long S_FLAGS = offset(SEND_WR, "send_flags");
    private static final long S_IMM = offset(SEND_WR, "$imm", "imm_data");
    private static final long S_RADDR = offset(SEND_WR, "wr", "rdma", "remote_addr");
    private static final long S_RKEY = offset(SEND_WR, "wr", "rdma", "rkey");
    private static final long S_COMPARE = offset(SEND_WR, "wr", "atomic", "compare_add");
    private static final long S_SWAP = offset(SEND_WR, "wr", "atomic", "swap");
    private static final long S_ARKEY = offset(SEND_WR, "wr", "atomic", "rkey");
    private static final long R_NEXT = offset(RECV_WR, "next");
    private static final long R_SGL = offset(RECV_WR, "sg_list");
    private static final long R_NSGE = offset(RECV_WR, "num_sge");

    private final NativePd pd;
    private final MemorySegment qp;
    private final int qpType;
    private final Arena arena = Arena.ofShared();
    private final int sendChain;
    private final int sendSge;
    private final int recvChain;
    private final int recvSge;
    private final MemorySegment sendWrs;
    private final MemorySegment sendSges;
    private final MemorySegment recvWrs;
    private final MemorySegment recvSges;
    private final MemorySegment badWr;
    private final MemorySegment attr;
    private final long qpAddr;
    private final long sendWrsAddr;
    private final long recvWrsAddr;
    private final long badWrAddr;
    private final long sendSgesAddr;
    private final long recvSgesAddr;
    private boolean closed;

    NativeQp(final NativePd pd, final MemorySegment qp, final int qpType, final int maxSendWr, final int maxSendSge,
             final int maxRecvWr, final int maxRecvSge) {
        this.pd = pd;
        this.qp = qp;
        this.qpType = qpType;
        this.sendChain = Math.max(1, Math.min(maxSendWr, 256));
        this.sendSge = Math.max(1, maxSendSge);
        this.recvChain = Math.max(1, Math.min(maxRecvWr, 256));
        this.recvSge = Math.max(1, maxRecvSge);
        sendWrs = arena.allocate(SWR * sendChain, 8);
        sendSges = arena.allocate(SGE_SIZE * sendChain * sendSge, 8);
        recvWrs = arena.allocate(RWR * recvChain, 8);
        recvSges = arena.allocate(SGE_SIZE * recvChain * recvSge, 8);
        badWr = arena.allocate(ADDRESS);
        attr = arena.allocate(QP_ATTR);
        qpAddr = qp.address();
        sendWrsAddr = sendWrs.address();
        recvWrsAddr = recvWrs.address();
        badWrAddr = badWr.address();
        sendSgesAddr = sendSges.address();
        recvSgesAddr = recvSges.address();
    }

    /** The {@code struct ibv_qp *} (benchmarks call the ops table with it). */
    MemorySegment qpPointer() {
        return qp;
    }

    @Override
    public int qpNum() {
        return qp.get(JAVA_INT, offset(QP, "qp_num"));
    }

    @Override
    public int qpType() {
        return qpType;
    }

    @Override
    public int state() {
        return qp.get(JAVA_INT, offset(QP, "state"));
    }

    @Override
    public void modify(final QpAttr a, final int mask) {
        if ((mask & QpAttrMask.SOFTWARE_MTU) != 0) {
            throw new VerbsException(Errno.EOPNOTSUPP, "ibv_modify_qp: a software MTU exists only on the software NIC");
        }
        attr.fill((byte) 0);
        attr.set(JAVA_INT, offset(QP_ATTR, "qp_state"), a.qpState);
        attr.set(JAVA_INT, offset(QP_ATTR, "cur_qp_state"), a.curQpState);
        attr.set(JAVA_INT, offset(QP_ATTR, "path_mtu"), a.pathMtu);
        attr.set(JAVA_INT, offset(QP_ATTR, "rq_psn"), a.rqPsn);
        attr.set(JAVA_INT, offset(QP_ATTR, "sq_psn"), a.sqPsn);
        attr.set(JAVA_INT, offset(QP_ATTR, "dest_qp_num"), a.destQpNum);
        attr.set(JAVA_INT, offset(QP_ATTR, "qp_access_flags"), a.qpAccessFlags);
        attr.set(JAVA_INT, offset(QP_ATTR, "cap", "max_send_wr"), a.cap.maxSendWr);
        attr.set(JAVA_INT, offset(QP_ATTR, "cap", "max_recv_wr"), a.cap.maxRecvWr);
        attr.set(JAVA_INT, offset(QP_ATTR, "cap", "max_send_sge"), a.cap.maxSendSge);
        attr.set(JAVA_INT, offset(QP_ATTR, "cap", "max_recv_sge"), a.cap.maxRecvSge);
        attr.set(JAVA_INT, offset(QP_ATTR, "cap", "max_inline_data"), a.cap.maxInlineData);
        attr.set(JAVA_SHORT, offset(QP_ATTR, "ah_attr", "dlid"), (short) a.dlid);
        attr.set(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "port_num"), (byte) a.portNum);
        attr.set(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "sl"), (byte) a.sl);
        if (a.isGlobal) {
            // RoCE: the GRH routes the packet (the port has no LID); the provider resolves the DGID to a MAC
            attr.set(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "is_global"), (byte) 1);
            MemorySegment.copy(a.grh.dgid, 0, attr, JAVA_BYTE, offset(QP_ATTR, "ah_attr", "grh", "dgid"), 16);
            attr.set(JAVA_INT, offset(QP_ATTR, "ah_attr", "grh", "flow_label"), a.grh.flowLabel);
            attr.set(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "grh", "sgid_index"), (byte) a.grh.sgidIndex);
            attr.set(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "grh", "hop_limit"), (byte) a.grh.hopLimit);
            attr.set(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "grh", "traffic_class"), (byte) a.grh.trafficClass);
        }
        attr.set(JAVA_SHORT, offset(QP_ATTR, "pkey_index"), (short) a.pkeyIndex);
        attr.set(JAVA_BYTE, offset(QP_ATTR, "max_rd_atomic"), (byte) a.maxRdAtomic);
        attr.set(JAVA_BYTE, offset(QP_ATTR, "max_dest_rd_atomic"), (byte) a.maxDestRdAtomic);
        attr.set(JAVA_BYTE, offset(QP_ATTR, "min_rnr_timer"), (byte) a.minRnrTimer);
        attr.set(JAVA_BYTE, offset(QP_ATTR, "port_num"), (byte) a.portNum);
        attr.set(JAVA_BYTE, offset(QP_ATTR, "timeout"), (byte) a.timeout);
        attr.set(JAVA_BYTE, offset(QP_ATTR, "retry_cnt"), (byte) a.retryCnt);
        attr.set(JAVA_BYTE, offset(QP_ATTR, "rnr_retry"), (byte) a.rnrRetry);
        final MemorySegment p = attr;
        Native.check("ibv_modify_qp", Native.call(() -> (int) pd.ctx.lib.modifyQp.invokeExact(qp, p, mask)));
    }

    @Override
    public QpAttr queryQp() {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment init = a.allocate(QP_INIT_ATTR);
            Native.check("ibv_query_qp", Native.call(() -> (int) pd.ctx.lib.queryQp.invokeExact(qp, attr, -1, init)));
        }
        final QpAttr q = new QpAttr();
        q.qpState = attr.get(JAVA_INT, offset(QP_ATTR, "qp_state"));
        q.curQpState = attr.get(JAVA_INT, offset(QP_ATTR, "cur_qp_state"));
        q.pathMtu = attr.get(JAVA_INT, offset(QP_ATTR, "path_mtu"));
        q.rqPsn = attr.get(JAVA_INT, offset(QP_ATTR, "rq_psn"));
        q.sqPsn = attr.get(JAVA_INT, offset(QP_ATTR, "sq_psn"));
        q.destQpNum = attr.get(JAVA_INT, offset(QP_ATTR, "dest_qp_num"));
        q.qpAccessFlags = attr.get(JAVA_INT, offset(QP_ATTR, "qp_access_flags"));
        q.dlid = Short.toUnsignedInt(attr.get(JAVA_SHORT, offset(QP_ATTR, "ah_attr", "dlid")));
        q.sl = Byte.toUnsignedInt(attr.get(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "sl")));
        q.isGlobal = attr.get(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "is_global")) != 0;
        MemorySegment.copy(attr, JAVA_BYTE, offset(QP_ATTR, "ah_attr", "grh", "dgid"), q.grh.dgid, 0, 16);
        q.grh.flowLabel = attr.get(JAVA_INT, offset(QP_ATTR, "ah_attr", "grh", "flow_label"));
        q.grh.sgidIndex = Byte.toUnsignedInt(attr.get(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "grh", "sgid_index")));
        q.grh.hopLimit = Byte.toUnsignedInt(attr.get(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "grh", "hop_limit")));
        q.grh.trafficClass = Byte.toUnsignedInt(attr.get(JAVA_BYTE, offset(QP_ATTR, "ah_attr", "grh",
            "traffic_class")));
        q.portNum = attr.get(JAVA_BYTE, offset(QP_ATTR, "port_num"));
        q.timeout = attr.get(JAVA_BYTE, offset(QP_ATTR, "timeout"));
        q.retryCnt = attr.get(JAVA_BYTE, offset(QP_ATTR, "retry_cnt"));
        q.rnrRetry = attr.get(JAVA_BYTE, offset(QP_ATTR, "rnr_retry"));
        q.minRnrTimer = attr.get(JAVA_BYTE, offset(QP_ATTR, "min_rnr_timer"));
        q.maxRdAtomic = attr.get(JAVA_BYTE, offset(QP_ATTR, "max_rd_atomic"));
        q.maxDestRdAtomic = attr.get(JAVA_BYTE, offset(QP_ATTR, "max_dest_rd_atomic"));
        q.cap.maxSendWr = attr.get(JAVA_INT, offset(QP_ATTR, "cap", "max_send_wr"));
        q.cap.maxRecvWr = attr.get(JAVA_INT, offset(QP_ATTR, "cap", "max_recv_wr"));
        q.cap.maxSendSge = attr.get(JAVA_INT, offset(QP_ATTR, "cap", "max_send_sge"));
        q.cap.maxRecvSge = attr.get(JAVA_INT, offset(QP_ATTR, "cap", "max_recv_sge"));
        q.cap.maxInlineData = attr.get(JAVA_INT, offset(QP_ATTR, "cap", "max_inline_data"));
        return q;
    }

    @Override
    public void postSend(final SendWorkRequest first) {
        int i = 0;
        for (SendWorkRequest wr = first; wr != null; wr = wr.next, i++) {
            if (i == sendChain) {
                throw new PostException(Errno.ENOMEM, i, "ibv_post_send: a chain longer than " + sendChain
                    + " work requests");
            }
            if (wr.numSge() > sendSge) {
                throw new PostException(Errno.EINVAL, i, "ibv_post_send: " + wr.numSge() + " SGEs > max_send_sge "
                    + sendSge);
            }
            final long b = i * SWR;
            sendWrs.asSlice(b, SWR).fill((byte) 0);
            sendWrs.set(JAVA_LONG, b, wr.wrId);
            // pointers are stored as addresses (8 bytes on x86-64): no segment view per WR
            sendWrs.set(JAVA_LONG, b + S_NEXT, wr.next == null ? 0L : sendWrsAddr + b + SWR);
            final long sb = (long) i * sendSge * SGE_SIZE;
            for (int s = 0; s < wr.numSge(); s++) {
                writeSge(sendSges, sb + s * SGE_SIZE, wr.sge(s));
            }
            sendWrs.set(JAVA_LONG, b + S_SGL, sendSgesAddr + sb);
            sendWrs.set(JAVA_INT, b + S_NSGE, wr.numSge());
            sendWrs.set(JAVA_INT, b + S_OPCODE, wr.opcode);
            sendWrs.set(JAVA_INT, b + S_FLAGS, wr.sendFlags);
            sendWrs.set(JAVA_INT, b + S_IMM, Integer.reverseBytes(wr.immData)); // host order -> __be32
            if (io.gdrkit.verbs.WrOpcode.isAtomic(wr.opcode)) {
                sendWrs.set(JAVA_LONG, b + S_RADDR, wr.remoteAddr);
                sendWrs.set(JAVA_LONG, b + S_COMPARE, wr.compareAdd);
                sendWrs.set(JAVA_LONG, b + S_SWAP, wr.swap);
                sendWrs.set(JAVA_INT, b + S_ARKEY, wr.rkey);
            } else {
                sendWrs.set(JAVA_LONG, b + S_RADDR, wr.remoteAddr);
                sendWrs.set(JAVA_INT, b + S_RKEY, wr.rkey);
            }
        }
        final int rc;
        try {
            rc = (int) IbvLibrary.OPS_POST_SEND.invokeExact(pd.ctx.postSendFn, qpAddr, sendWrsAddr, badWrAddr);
        } catch (final Throwable t) {
            throw new IllegalStateException("post_send: " + t, t);
        }
        if (rc != 0) {
            throw new PostException(rc < 0 ? -rc : rc, badIndex(sendWrs, SWR), "ibv_post_send: " + Errno.name(
                rc < 0 ? -rc : rc));
        }
    }

    @Override
    public void postRecv(final RecvWorkRequest first) {
        int i = 0;
        for (RecvWorkRequest wr = first; wr != null; wr = wr.next, i++) {
            if (i == recvChain || wr.numSge() > recvSge) {
                throw new PostException(i == recvChain ? Errno.ENOMEM : Errno.EINVAL, i, "ibv_post_recv: chain "
                    + "longer than " + recvChain + " or more than " + recvSge + " SGEs");
            }
            final long b = i * RWR;
            recvWrs.set(JAVA_LONG, b, wr.wrId);
            recvWrs.set(JAVA_LONG, b + R_NEXT, wr.next == null ? 0L : recvWrsAddr + b + RWR);
            final long sb = (long) i * recvSge * SGE_SIZE;
            for (int s = 0; s < wr.numSge(); s++) {
                writeSge(recvSges, sb + s * SGE_SIZE, wr.sge(s));
            }
            recvWrs.set(JAVA_LONG, b + R_SGL, recvSgesAddr + sb);
            recvWrs.set(JAVA_INT, b + R_NSGE, wr.numSge());
        }
        final int rc;
        try {
            rc = (int) IbvLibrary.OPS_POST_RECV.invokeExact(pd.ctx.postRecvFn, qpAddr, recvWrsAddr, badWrAddr);
        } catch (final Throwable t) {
            throw new IllegalStateException("post_recv: " + t, t);
        }
        if (rc != 0) {
            throw new PostException(rc < 0 ? -rc : rc, badIndex(recvWrs, RWR), "ibv_post_recv: " + Errno.name(
                rc < 0 ? -rc : rc));
        }
    }

    /** One {@code struct ibv_sge}: addr, length, lkey. */
    private static void writeSge(final MemorySegment sges, final long at, final Sge g) {
        sges.set(JAVA_LONG, at, g.addr);
        sges.set(JAVA_INT, at + 8, g.length);
        sges.set(JAVA_INT, at + 12, g.lkey);
    }

    private int badIndex(final MemorySegment wrs, final long size) {
        final long bad = badWr.get(ADDRESS, 0).address();
        return bad == 0 ? 0 : (int) ((bad - wrs.address()) / size);
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Native.check("ibv_destroy_qp", Native.call(() -> (int) pd.ctx.lib.destroyQp.invokeExact(qp)));
            arena.close();
        }
    }
}
