/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import static io.gdrkit.comm.transport.IbTransport.KIND_FLUSH;
import static io.gdrkit.comm.transport.IbTransport.KIND_MASK;
import static io.gdrkit.comm.transport.IbTransport.KIND_RECV;
import static io.gdrkit.comm.transport.IbTransport.MAX_RECVS;
import static io.gdrkit.comm.transport.IbTransport.SLOT_BYTES;
import static io.gdrkit.comm.transport.NetTransport.MAX_REQUESTS;

import io.gdrkit.comm.transport.NetTransport.RecvComm;
import io.gdrkit.comm.transport.NetTransportException.Reason;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.QpBringUp;
import io.gdrkit.verbs.QpInitAttr;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** The receiving end: FIFO staging, the sizes the sender writes, the flush QP. */
final class IbRecv extends IbComm implements RecvComm {
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
    final IbTransport.IbMr[] mrs = new IbTransport.IbMr[MAX_RECVS];
    final SendWorkRequest wr = new SendWorkRequest(1);
    final RecvWorkRequest rwr = new RecvWorkRequest(1);

    IbRecv(final IbTransport owner, final NetNic nic, final int nqps) {
        super(owner, nic, nqps, MAX_REQUESTS * 2);
        try {
            staging = arena.allocate((long) MAX_REQUESTS * SLOT_BYTES, 4096);
            stagingMr = nic.pd().registerMr(staging, AccessFlags.LOCAL_WRITE);
            sizes = arena.allocate((long) MAX_REQUESTS * MAX_RECVS * 4, 4096);
            sizesMr = nic.pd().registerMr(sizes, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            flushBuf = arena.allocate(64, 64);
            flushMr = nic.pd().registerMr(flushBuf, AccessFlags.LOCAL_WRITE);
            if (owner.ctx.flush()) {
                final QpInitAttr init = new QpInitAttr().cqs(cq, cq);
                init.cap.maxSendWr(MAX_REQUESTS).maxRecvWr(1).maxSendSge(1).maxInlineData(0);
                flushQp = nic.pd().createQp(init);
                // connected to itself: the READ takes the path the NIC's writes into the buffer took
                QpBringUp.toRts(flushQp, flushQp.qpNum(), lid, 0, 0, owner.qpAttr);
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

