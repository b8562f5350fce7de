/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.softnic.queue.SendQueue;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.softnic.wire.Psn;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WrOpcode;

/**
 * Turns WQEs into request packets (rxe_req.c): segmentation by MTU, PSN assignment, AckReq coalescing, FENCE
 * and max_rd_atomic gating, and the restart point that go-back-N rewinds to.
 */
final class Requester implements Agent {
    /** Response packets per READ request; a longer READ WQE is requested in pieces. */
    static final int READ_PIECE_PACKETS = 64;
    private final SoftDevice dev;
    private final Transmitter tx;
    private final Packet pkt;
    /** The references of the packet being built (one walk of the gather list per packet). */
    private final Sgl.Refs refScratch = new Sgl.Refs();
    private final int burst;
    private final int ackReqInterval;
    /** Most packets per segment-offload record (SoftNicContext.BATCH_PROP). */
    private final int batch;
    /** Most packets per reference record within this process (gdrkit.nic.ref.batch). */
    private final int refBatch;

    Requester(final SoftDevice dev) {
        this.dev = dev;
        this.tx = new Transmitter(dev);
        this.pkt = tx.pkt;
        this.burst = dev.driver().context().burst();
        this.ackReqInterval = dev.driver().context().ackReqInterval();
        this.batch = Math.min(dev.driver().context().batch(), Packet.MAX_PACKETS);
        this.refBatch = Math.min(dev.driver().context().refBatch(), Packet.MAX_PACKETS);

    }

    @Override
    public String roleName() {
        return "requester";
    }

    @Override
    public int doWork() {
        int work = 0;
        final SoftQp[] qps = dev.scan.qps();
        final int count = dev.scan.count();
        long now = Long.MIN_VALUE;
        for (int i = 0; i < count; i++) {
            final SoftQp qp = qps[i];
            final int s = qp.state;
            if ((s != QpState.RTS && s != QpState.SQD) || qp.ud) {
                continue; // UD QPs: the UdEngine sends
            }
            if (qp.rnrWaitUntil != 0) {
                if (now == Long.MIN_VALUE) {
                    now = dev.now();
                }
                if (now - qp.rnrWaitUntil < 0) {
                    continue;
                }
                qp.rnrWaitUntil = 0;
            }
            work += process(qp, s);
        }
        return work;
    }

    private int process(final SoftQp qp, final int state) {
        final SendQueue sq = qp.sq;
        final long producer = sq.doorbell().producer();
        if (producer != qp.lastSeenProducer) {
            qp.lastSeenProducer = producer;
            if (qp.directOwned) {
                qp.directDoorbells++;
            }
        }
        int sent = 0;
        while (qp.reqHead < producer && sent < burst) {
            if (Psn.diff(qp.nextPsn, qp.compPsn) >= qp.cwnd) {
                break; // window full: wait for acknowledgements
            }
            final long index = qp.reqHead;
            final int slot = sq.slot(index);
            final int op = sq.opcode(index);
            final int flags = sq.flags(index);
            if ((qp.wqeState[slot] & SoftQp.LOCAL_ERROR) != 0) {
                break; // nothing after a failed WQE is sent; the completer reports it and errors the QP
            }
            if ((qp.wqeState[slot] & SoftQp.STARTED) == 0) {
                if (state == QpState.SQD) {
                    break; // SQD: finish what was started, start nothing new
                }
                if (qp.stampPickups) {
                    qp.pickupNanos[slot] = System.nanoTime();
                    qp.pickupIndex[slot] = index;
                }
                if (qp.directOwned && sq.stamp(index) != (int) (index + 1)) {
                    // a WQE written by a direct poster that is not all there: the doorbell overtook it
                    qp.staleWqes++;
                    localError(qp, slot, WcStatus.LOC_QP_OP_ERR);
                    break;
                }
                if ((flags & SendFlags.FENCE) != 0 && qp.outstandingRdAtomic > 0) {
                    break;
                }
                final boolean rdAtomic = WrOpcode.isReadOrAtomic(op);
                if (rdAtomic && qp.outstandingRdAtomic >= Math.max(1, qp.maxRdAtomic)) {
                    break;
                }
                final int status = (flags & SendFlags.INLINE) != 0 ? inlineStatus(qp, sq, index, op)
                    : Sgl.checkSend(dev, qp, sq, index, WrOpcode.writesLocal(op));
                if (status != WcStatus.SUCCESS || (rdAtomic && qp.maxRdAtomic == 0)) {
                    localError(qp, slot, status != WcStatus.SUCCESS ? status : WcStatus.LOC_QP_OP_ERR);
                    break;
                }
                qp.wqeState[slot] = SoftQp.STARTED;
                qp.firstPsn[slot] = qp.nextPsn;
                if (op == WrOpcode.RDMA_READ) {
                    // known up front: responses may complete the WQE before its last request piece is sent
                    qp.lastPsn[slot] = Psn.add(qp.nextPsn, qp.packets(sq.length(index)) - 1);
                }
                if (rdAtomic) {
                    qp.outstandingRdAtomic++;
                }
            }
            final int r = switch (op) {
                case WrOpcode.RDMA_READ -> sendRead(qp, index, slot);
                case WrOpcode.ATOMIC_CMP_AND_SWP, WrOpcode.ATOMIC_FETCH_AND_ADD -> sendAtomic(qp, index, slot, op);
                case WrOpcode.ATOMIC_WRITE, WrOpcode.FLUSH -> sendPlacement(qp, index, slot, op);
                case WrOpcode.BIND_MW, WrOpcode.LOCAL_INV -> localOp(qp, index, slot, op);
                default -> sendData(qp, index, slot, op, flags, producer);
            };
            if (r < 0) {
                break; // link full, or a local error stopped the QP
            }
            if (Psn.diff(qp.nextPsn, qp.sentPsn) > 0) {
                qp.sentPsn = qp.nextPsn;
            }
            sent++;
            armTimer(qp);
        }
        return sent;
    }

    /**
     * An INLINE WQE: postSend checked it, a direct poster (a GPU) did not, so its data must fit the QP's
     * max_inline_data (else the copy would read the next slots, or past the ring) and its opcode carry data out.
     */
    private static int inlineStatus(final SoftQp qp, final SendQueue sq, final long index, final int op) {
        if (WrOpcode.isReadOrAtomic(op)) {
            return WcStatus.LOC_QP_OP_ERR;
        }
        final int len = sq.length(index);
        return len < 0 || len > qp.cap.maxInlineData ? WcStatus.LOC_LEN_ERR : WcStatus.SUCCESS;
    }

    private void localError(final SoftQp qp, final int slot, final int status) {
        qp.wqeState[slot] = SoftQp.STARTED | SoftQp.SENT | SoftQp.LOCAL_ERROR;
        qp.wqeError[slot] = (byte) status;
        qp.curOffset = 0;
    }

    private void armTimer(final SoftQp qp) {
        if (qp.timerDeadline == 0) {
            final long rto = qp.retransmitNanos();
            if (rto > 0) {
                qp.timerDeadline = dev.now() + rto;
            }
        }
    }

    private boolean claim(final SoftQp qp, final int opcode, final int payload, final int psn, final boolean ackReq,
                          final boolean solicited) {
        return tx.claim(qp.dlid, qp.destQpn, opcode, payload, psn, ackReq, solicited);
    }

    private int sendData(final SoftQp qp, final long index, final int slot, final int op, final int flags,
                         final long producer) {
        final SendQueue sq = qp.sq;
        final int total = sq.length(index);
        final long offset = qp.curOffset;
        final long remaining = total - offset;
        final int mtu = qp.mtu;
        final int psn = qp.nextPsn;
        // single copy: reference the source MR instead of copying it into the link, where the port and the MRs
        // allow it; asked per packet, so a retransmission references the source again (or copies it, if a hook
        // that looks at payloads was installed meanwhile). Where the link takes whole spans, one record stands
        // for up to `batch` packets of this WR (segment offload); their PSNs, window and AckReq count as packets.
        int packets = 1;
        int payload = (int) Math.min(mtu, remaining);
        int refs = 0;
        boolean ringEnd = false;
        if (remaining >= dev.oneCopyMin && remaining > 0 && dev.oneCopy && (flags & SendFlags.INLINE) == 0
            && dev.port.carriesReferences(qp.dlid, payload)) {
            // within one process a record refers to the sender's memory where it lies: a long span is one copy at
            // the receiver (gdrkit.nic.ref.batch); across processes the span is pulled or copied (gdrkit.nic.batch)
            final boolean local = !dev.port.pullsReferences();
            packets = spanPackets(qp, remaining, psn, dev.port.carriesBatches(), local ? refBatch : batch);
            if (packets > 1) {
                payload = (int) Math.min((long) packets * mtu, remaining);
            }
            refScratch.dmaViews = local;
            refs = Sgl.references(dev, qp, sq, index, offset, payload, refScratch);
            if (refs == 0 && dev.sourceRing && local) {
                if (packets > batch) {
                    // the source ring holds what it references until the ACK: its spans stay gdrkit.nic.batch long
                    packets = batch;
                    payload = (int) Math.min((long) packets * mtu, remaining);
                }
                // memory read by bulk copies (a CUDA GPU): read into the NIC's pinned ring and referenced there
                refs = qp.sourceRing.references(dev, qp, sq, index, offset, payload, psn, packets, refScratch);
                if (refs == DmaSourceRing.WAIT) {
                    return -1; // the ring is full until the ACKs of what it holds come back
                }
                ringEnd = refs > 0 && qp.sourceRing.endsExtent();
            }
            if (refs == 0 && packets > 1) {
                packets = 1; // not referable: the bytes travel, a packet at a time (the copy path reports errors)
                payload = (int) Math.min(mtu, remaining);
            }
        }
        if (refs == 0 && packets == 1 && remaining > mtu && (flags & SendFlags.INLINE) == 0
            && dev.port.carriesInlineBatches()) {
            // segment offload with the bytes inline (TCP): one record, one header and one copy for up to `batch`
            // packets of this WR; the receiver counts them from the length
            packets = spanPackets(qp, remaining, psn, true, batch);
            // the bytes travel in the record: it must fit the link's largest packet, whatever gdrkit.nic.batch says
            final int fit = (dev.port.maxPacket() - Packet.lengthFor(BthOpcode.RDMA_WRITE_ONLY_WITH_IMM, 0)) / mtu;
            packets = Math.max(1, Math.min(packets, fit));
            payload = (int) Math.min((long) packets * mtu, remaining);
        }
        // zero copy onto a socket: the record holds the headers, the payload is written from the MR when the link
        // sends it (registered host memory any thread may read; the same walk and checks as a reference)
        int deferred = 0;
        final int deferrable = refs == 0 && payload >= dev.oneCopyMin && dev.oneCopy && (flags & SendFlags.INLINE) == 0
            ? dev.port.deferrablePieces(qp.dlid, qp.destQpn) : 0;
        if (deferrable > 0) {
            refScratch.dmaViews = false;
            deferred = Sgl.references(dev, qp, sq, index, offset, payload, refScratch);
        }
        final boolean first = offset == 0;
        final boolean last = remaining <= payload;
        final boolean send = WrOpcode.isSend(op);
        final boolean imm = WrOpcode.hasImmediate(op);
        final boolean inv = op == WrOpcode.SEND_WITH_INV;
        final int opcode = inv ? BthOpcode.sendWithInvalidate(first, last) : BthOpcode.forPosition(send, first, last, imm);
        // ask for an ACK when the window closes behind this packet too: nothing else may be sent until one
        // comes (after a timeout the window is a single probe packet, which must not go unanswered)
        final boolean windowClosing = Psn.diff(Psn.add(psn, packets), qp.compPsn) >= qp.cwnd;
        final int since = qp.pktsSinceAckReq + packets;
        // the packet that ends a source-ring extent asks too: the ACK frees the extent
        final boolean ackReq = since >= ackReqInterval || windowClosing || ringEnd
            || (last && (qp.isSignaled(flags) || index + 1 == producer || since >= 16));
        final boolean solicited = last && (flags & SendFlags.SOLICITED) != 0;
        if (deferred > deferrable || deferred > 0 && Packet.lengthFor(opcode, payload) > dev.port.maxPacket()) {
            deferred = 0; // more pieces than the link holds now, or longer than a frame: the bytes go into the link
        }
        if (!tx.claim(qp.dlid, qp.destQpn, opcode, refs > 0 ? Packet.referenceLength(refs) : payload, psn, ackReq,
            solicited, deferred > 0)) {
            return -1;
        }
        {
            if (first && !send) {
                pkt.reth(sq.remoteAddr(index), sq.rkey(index), total);
            }
            if (last && imm) {
                pkt.imm(sq.imm(index));
            }
            if (last && inv) {
                pkt.ieth(sq.imm(index)); // the rkey to invalidate, kept in the WQE's imm_data field
            }
            if (refs > 0) {
                // collected and checked by the one walk above, in this duty cycle; deregistration takes the duty, so
                // no MR can go between the walk and here (the responder resolves each reference again anyway)
                // (across processes the token is this process's id, checked by the receiver against the peer)
                refScratch.writeInto(pkt.reference(payload, refs, packets).refToken(dev.port.referenceToken()), refs);
            } else if (deferred > 0) {
                for (int i = 0; i < deferred; i++) {
                    final SoftMr mr = refScratch.mr[i];
                    tx.deferPayload(mr.segment, refScratch.va[i] - mr.address, refScratch.length[i]);
                }
            } else if (payload > 0) {
                if ((flags & SendFlags.INLINE) != 0) {
                    java.lang.foreign.MemorySegment.copy(sq.ring(), sq.inlineDataOffset(index) + offset,
                        pkt.buffer(), pkt.payloadOffset(), payload);
                } else {
                    final int status = Sgl.gather(dev, qp, sq, index, offset, pkt.buffer(), pkt.payloadOffset(),
                        payload);
                    if (status != WcStatus.SUCCESS) {
                        tx.abort();
                        localErrorMidMessage(qp, slot, status);
                        return -1;
                    }
                }
            }
        }
        tx.commit();
        qp.pktsSinceAckReq = ackReq ? 0 : since;
        qp.nextPsn = Psn.add(psn, packets);
        if (last) {
            qp.lastPsn[slot] = Psn.add(psn, packets - 1);
            qp.wqeState[slot] |= SoftQp.SENT;
            qp.reqHead++;
            qp.curOffset = 0;
        } else {
            qp.curOffset = offset + payload;
        }
        return 1;
    }

    /**
     * How many packets the next record of a WR may stand for: 1 unless the link takes spans ({@code spans}); else as
     * many as are left of the WR, the window allows and {@code most} caps ({@link SoftNicContext#batch()} or, for
     * references within this process, {@link SoftNicContext#refBatch()}; at most 1 GiB).
     */
    private int spanPackets(final SoftQp qp, final long remaining, final int psn, final boolean spans,
                            final int most) {
        final int mtu = qp.mtu;
        if (most <= 1 || remaining <= mtu || !spans) {
            return 1;
        }
        final long left = (remaining + mtu - 1) / mtu;
        final long room = qp.cwnd - Psn.diff(psn, qp.compPsn); // at least 1: process() checked the window
        final long cap = Math.min(most, (1L << 30) / mtu);
        return (int) Math.max(1, Math.min(Math.min(left, room), cap));
    }

    /** An lkey died between packets of a message: the WQE fails with the status, in order. */
    private void localErrorMidMessage(final SoftQp qp, final int slot, final int status) {
        qp.wqeState[slot] |= SoftQp.LOCAL_ERROR | SoftQp.SENT;
        qp.wqeError[slot] = (byte) status;
        qp.lastPsn[slot] = Psn.add(qp.nextPsn, -1);
        qp.curOffset = 0;
    }

    /**
     * Sends the READ request for the next piece of the WQE. A long READ is asked for in pieces of
     * {@link #READ_PIECE_PACKETS} response packets at fixed boundaries, each a request with its own PSNs: after
     * a loss only the rest of one piece is asked again, and a retried request always ends where the original
     * one ended, as the responder expects of a duplicate.
     */
    private int sendRead(final SoftQp qp, final long index, final int slot) {
        final SendQueue sq = qp.sq;
        final int total = sq.length(index);
        final long offset = qp.curOffset;
        final int remaining = (int) (total - offset);
        final int psn = qp.nextPsn;
        final long pieceBytes = (long) READ_PIECE_PACKETS * qp.mtu;
        // never past the piece boundary (a retried request must end where the original did); shorter is fine,
        // and after a timeout the window allows a single response packet: a probe
        final long room = Math.max(1, qp.cwnd - Psn.diff(psn, qp.compPsn));
        final int piece = (int) Math.min(Math.min(remaining, pieceBytes - offset % pieceBytes), room * qp.mtu);
        if (!claim(qp, BthOpcode.RDMA_READ_REQUEST, 0, psn, false, false)) {
            return -1;
        }
        pkt.reth(sq.remoteAddr(index) + offset, sq.rkey(index), piece);
        tx.commit();
        qp.nextPsn = Psn.add(psn, qp.packets(piece));
        qp.pktsSinceAckReq = 0;
        if (piece == remaining) {
            qp.wqeState[slot] |= SoftQp.SENT;
            qp.reqHead++;
            qp.curOffset = 0;
        } else {
            qp.curOffset = offset + piece;
        }
        return 1;
    }

    private int sendAtomic(final SoftQp qp, final long index, final int slot, final int op) {
        final SendQueue sq = qp.sq;
        final int psn = qp.nextPsn;
        final int opcode = op == WrOpcode.ATOMIC_CMP_AND_SWP ? BthOpcode.COMPARE_SWAP : BthOpcode.FETCH_ADD;
        if (!claim(qp, opcode, 0, psn, false, false)) {
            return -1;
        }
        {
            if (op == WrOpcode.ATOMIC_CMP_AND_SWP) {
                pkt.atomicEth(sq.remoteAddr(index), sq.rkey(index), sq.swap(index), sq.compareAdd(index));
            } else {
                pkt.atomicEth(sq.remoteAddr(index), sq.rkey(index), sq.compareAdd(index), 0);
            }
        }
        tx.commit();
        qp.nextPsn = Psn.add(psn, 1);
        qp.lastPsn[slot] = psn;
        qp.wqeState[slot] |= SoftQp.SENT;
        qp.reqHead++;
        qp.curOffset = 0;
        return 1;
    }

    /**
     * BIND_MW or LOCAL_INV: executed here, in send-queue order, sending nothing. The WQE completes once everything
     * before it did (its last PSN is the previous packet's). After a go-back-N rewind it is not executed again.
     */
    private int localOp(final SoftQp qp, final long index, final int slot, final int op) {
        final SendQueue sq = qp.sq;
        if ((qp.wqeState[slot] & SoftQp.SENT) == 0) {
            final long b = sq.swap(index);
            final int status = op == WrOpcode.BIND_MW
                ? dev.bindMw(qp, (int) (b >>> 8) & 0xFFFFFF, sq.rkey(index), sq.remoteAddr(index),
                sq.compareAdd(index), (int) (b >>> 32), (int) b & 0xFF)
                : dev.invalidateMw(qp, sq.rkey(index), false);
            if (status != WcStatus.SUCCESS) {
                localError(qp, slot, status);
                return -1;
            }
            qp.lastPsn[slot] = Psn.add(qp.nextPsn, -1);
            qp.wqeState[slot] |= SoftQp.SENT;
        }
        qp.reqHead++;
        qp.curOffset = 0;
        return 1;
    }

    /**
     * IBA 1.5 ATOMIC_WRITE (RETH + the 8 bytes of the SGE) or FLUSH (FETH + RETH): one request packet, answered by
     * a zero-length READ response.
     */
    private int sendPlacement(final SoftQp qp, final long index, final int slot, final int op) {
        final SendQueue sq = qp.sq;
        final int psn = qp.nextPsn;
        final boolean flush = op == WrOpcode.FLUSH;
        if (!claim(qp, flush ? BthOpcode.FLUSH : BthOpcode.ATOMIC_WRITE, flush ? 0 : 8, psn, false, false)) {
            return -1;
        }
        if (flush) {
            final long typeLevel = sq.swap(index);
            pkt.feth((int) typeLevel & 0xFF, (int) (typeLevel >>> 8) & 0xFF);
            pkt.reth(sq.remoteAddr(index), sq.rkey(index), (int) sq.compareAdd(index));
        } else {
            pkt.reth(sq.remoteAddr(index), sq.rkey(index), 8);
            final int status = Sgl.gather(dev, qp, sq, index, 0, pkt.buffer(), pkt.payloadOffset(), 8);
            if (status != WcStatus.SUCCESS) {
                tx.abort();
                localErrorMidMessage(qp, slot, status);
                return -1;
            }
        }
        tx.commit();
        qp.nextPsn = Psn.add(psn, 1);
        qp.lastPsn[slot] = psn;
        qp.wqeState[slot] |= SoftQp.SENT;
        qp.reqHead++;
        qp.curOffset = 0;
        return 1;
    }

    /**
     * Go-back-N: resend from the oldest unacknowledged PSN. The WQE holding it restarts at the byte offset that
     * PSN stands for; later WQEs are resent whole with the same PSNs, since segmentation is deterministic.
     */
    void rewind(final SoftQp qp) {
        qp.reqHead = qp.compTail;
        qp.nextPsn = qp.compPsn;
        qp.curOffset = 0;
        qp.pktsSinceAckReq = 0;
        final long producer = qp.sq.doorbell().producer();
        if (qp.compTail < producer) {
            final int slot = qp.sq.slot(qp.compTail);
            if ((qp.wqeState[slot] & SoftQp.STARTED) != 0) {
                final int op = qp.sq.opcode(qp.compTail);
                if (!WrOpcode.isAtomic(op)) {
                    final int done = Psn.diff(qp.compPsn, qp.firstPsn[slot]);
                    if (done > 0) {
                        qp.curOffset = (long) done * qp.mtu;
                    }
                }
            }
        }
    }
}
