/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.softnic.queue.RecvQueue;
import io.gdrkit.softnic.wire.Aeth;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.softnic.wire.Psn;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;

/**
 * Executes incoming requests and answers them (rxe_resp.c): PSN checks (duplicates, sequence errors), opcode
 * sequence, rkey/PD/access/bounds checks on every packet, receive WQE consumption and RNR NAK, placement, atomics
 * executed once, and the response queue (READ responses, ATOMIC results, coalesced ACKs, NAKs) emitted in PSN
 * order as the link allows.
 */
final class Responder implements Agent {
    private final SoftDevice dev;
    private final Transmitter tx;
    private final Packet out;
    private final int burst;
    /** {@link #placeReferenced}'s answer when a reference cannot be resolved; not a WcStatus. */
    private static final int UNRESOLVED = -1;
    /** {@link #placePulled}'s answer when it has NAK'd the packet (the QP is in ERR); not a WcStatus. */
    private static final int NAKED = -2;
    private long referenced;
    private long unresolved;

    Responder(final SoftDevice dev) {
        this.dev = dev;
        this.tx = new Transmitter(dev);
        this.out = tx.pkt;
        this.burst = dev.driver().context().burst();
    }

    @Override
    public String roleName() {
        return "responder";
    }

    // ---------------- receive side ----------------

    /** The packet being handled had its payload read straight into its memory ({@link #directTarget}): no copy. */
    boolean placedDirect;

    /**
     * Where the payload of an inline WRITE or SEND packet whose headers arrived ahead of its bytes may be read straight
     * in: the MR, with the offset in it in {@code at[0]}; null when the packet is anything else than the next expected
     * packet of a valid WRITE into host memory or SEND into one SGE of host memory (then it arrives in the link's buffer
     * and {@link #onRequest} judges it as always). Changes nothing. The same checks as {@link #onRequest},
     * {@link #onWrite} and {@link #onSend} make for these bytes: the QP's state, ePSN, the opcode sequence, the
     * payload's shape, a receive posted where one is consumed, and for a WRITE the DMA length left and the rkey's MR
     * holding them with REMOTE_WRITE, for a SEND the receive WQE's SGE holding them with LOCAL_WRITE; the packet
     * itself is then handled by {@code onRequest} with {@link #placedDirect}.
     */
    SoftMr directTarget(final SoftQp qp, final Packet p, final long[] at) {
        final int s = qp.state;
        final boolean send = p.is(BthOpcode.SEND);
        if (s != QpState.RTR && s != QpState.RTS && s != QpState.SQD || p.isReference() || p.is(BthOpcode.UD)
            || !send && !p.is(BthOpcode.WRITE) || Psn.diff(p.psn(), qp.ePsn) != 0) {
            return null;
        }
        if (p.is(BthOpcode.CONSUMES_RECV) && !hasRecv(qp)) {
            return null; // a SEND or WRITE_WITH_IMM needs a receive: an SRQ's is taken only when the packet is handled
        }
        final boolean first = p.is(BthOpcode.FIRST);
        if ((send ? qp.inWrite || qp.inSend == first : qp.inSend || qp.inWrite == first)) {
            return null;
        }
        final long len = Integer.toUnsignedLong(p.payloadLength());
        if (len == 0 || !fitsPackets(qp, p, inlinePackets(qp, p))) {
            return null;
        }
        final boolean last = p.is(BthOpcode.LAST);
        if (send) {
            // into the receive WQE at the message's offset, where all of it falls in one SGE of host memory that the
            // WQE's lkey lets the NIC write (the check Sgl.scatter makes)
            final SoftMr mr = Sgl.scatterSpan(dev, qp, qp.rq, qp.rqHead, first ? 0 : qp.recvOffset, (int) len, at);
            if (mr == null || mr.segment == null) {
                return null;
            }
            at[0] -= mr.address;
            return mr;
        }
        final long va;
        final int rkey;
        final long remaining;
        if (first) {
            if (!qp.remoteAccess(AccessFlags.REMOTE_WRITE) || p.rethDmaLength() < 0) {
                return null;
            }
            va = p.rethVa();
            rkey = p.rethRkey();
            remaining = p.rethDmaLength();
        } else {
            va = qp.writeVa;
            rkey = qp.writeRkey;
            remaining = qp.writeRemaining;
        }
        if (len > remaining || (last && len != remaining)) {
            return null;
        }
        final SoftMr mr = remoteMr(qp, rkey, va, len, AccessFlags.REMOTE_WRITE);
        if (mr == null || mr.segment == null) {
            return null; // DMA memory takes the copy path
        }
        at[0] = va - mr.address;
        return mr;
    }

    void onRequest(final SoftQp qp, final Packet p) {
        final int s = qp.state;
        if (s != QpState.RTR && s != QpState.RTS && s != QpState.SQD) {
            return; // RESET/INIT/ERR: silently dropped, as by hardware
        }
        final int psn = p.psn();
        final int d = Psn.diff(psn, qp.ePsn);
        final int packets = p.isReference() ? p.packets() : inlinePackets(qp, p);
        if (d > 0) {
            // NAK the first out-of-sequence packet, and again whenever one asks for an ACK: if the first NAK was
            // lost, the requester would otherwise hear nothing until its timer fires
            if (!qp.nakSeqSent || p.ackReq()) {
                qp.nakSeqSent = true;
                qp.resources.pushAck(Aeth.nak(Aeth.NAK_PSN_SEQ_ERROR), qp.ePsn, qp.msn);
            }
            return;
        }
        // a segment-offload span (packets > 1) whose first packets arrived before, in an earlier and differently cut
        // send of them: those are duplicates, the rest is in sequence and continues the message from ePSN
        int skip = 0;
        if (d < 0) {
            if (-d >= packets) {
                duplicate(qp, p, psn);
                return;
            }
            skip = -d;
        }
        qp.nakSeqSent = false;
        final int mask = p.mask();
        // opcode sequence: a message's FIRST must be followed by its MIDDLE/LAST, nothing else
        final boolean continuation = (mask & BthOpcode.FIRST) == 0 || skip > 0;
        if (qp.inSend != (continuation && p.is(BthOpcode.SEND))
            || qp.inWrite != (continuation && p.is(BthOpcode.WRITE))) {
            nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "opcode " + BthOpcode.name(p.opcode())
                + " out of sequence");
            return;
        }
        if ((mask & BthOpcode.SEND) != 0) {
            onSend(qp, p, psn, packets, skip);
        } else if ((mask & BthOpcode.WRITE) != 0) {
            onWrite(qp, p, psn, packets, skip);
        } else if ((mask & BthOpcode.READ) != 0) {
            onRead(qp, p, psn);
        } else if ((mask & (BthOpcode.ATOMIC_WRITE_OP | BthOpcode.FLUSH_OP)) != 0) {
            onPlacement(qp, p, psn, (mask & BthOpcode.FLUSH_OP) != 0);
        } else {
            onAtomic(qp, p, psn);
        }
    }

    /**
     * IBA 1.5 ATOMIC_WRITE (8 bytes placed in one piece at an aligned address, needing REMOTE_WRITE on QP and MR)
     * and FLUSH (placement type GLOBAL and/or PERSISTENT, each needing its FLUSH_* bit on QP and MR; selectivity
     * RANGE checks the range, MR the key only), executed once and answered by a zero-length READ response, as
     * rxe does. The software NIC has no persistent memory: a PERSISTENT flush makes the bytes as durable as a
     * GLOBAL one does (visible to every agent, by a full fence), no more.
     */
    private void onPlacement(final SoftQp qp, final Packet p, final int psn, final boolean flush) {
        final long va = p.rethVa();
        final int rkey = p.rethRkey();
        final int len = p.rethDmaLength();
        final SoftMr mr;
        if (flush) {
            final int type = p.fethPlacementType();
            final int level = p.fethSelectivity();
            final int need = ((type & 1) != 0 ? AccessFlags.FLUSH_GLOBAL : 0)
                | ((type & 2) != 0 ? AccessFlags.FLUSH_PERSISTENT : 0);
            if (need == 0 || (type & ~3) != 0 || level > 1 || (qp.accessFlags & need) != need || len < 0) {
                nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "FLUSH type " + type + " level "
                    + level + " refused by QP " + qp.qpn + " (access " + AccessFlags.describe(qp.accessFlags) + ")");
                return;
            }
            final SoftMr m = dev.mrs.lookup(rkey);
            mr = m != null && m.pd == qp.pd && (m.access & need) == need && (level == 1 || m.contains(va, len))
                ? m : null;
        } else {
            if (!qp.remoteAccess(AccessFlags.REMOTE_WRITE) || len != 8 || p.payloadLength() != 8 || (va & 7) != 0) {
                nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, (va & 7) != 0
                    ? "ATOMIC_WRITE address 0x" + Long.toHexString(va) + " is not 8-byte aligned"
                    : "ATOMIC_WRITE of " + len + " bytes, or QP " + qp.qpn + " without REMOTE_WRITE");
                return;
            }
            mr = remoteMr(qp, rkey, va, 8, AccessFlags.REMOTE_WRITE);
        }
        if (mr == null) {
            nak(qp, psn, Aeth.NAK_REMOTE_ACCESS_ERROR, WcStatus.REM_ACCESS_ERR, "rkey 0x"
                + Integer.toHexString(rkey) + " refused for " + (flush ? "FLUSH" : "ATOMIC_WRITE"));
            return;
        }
        final int slot = qp.resources.push(ResponderResources.READ, psn);
        if (slot < 0) {
            nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "more READ/ATOMIC outstanding than "
                + "max_dest_rd_atomic");
            return;
        }
        if (flush) {
            java.lang.invoke.VarHandle.fullFence();
            if (mr.dma != null) {
                mr.dma.completionFence();
            }
        } else {
            mr.atomicWrite(va, p.buffer().get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, p.payloadOffset()));
            qp.noteDmaWrite(mr);
        }
        qp.resources.va[slot] = 0;
        qp.resources.rkey[slot] = 0;
        qp.resources.length[slot] = 0; // the answer: a zero-length READ response
        qp.msn = Psn.add(qp.msn, 1);
        qp.ePsn = Psn.add(psn, 1);
    }

    /**
     * The packets an inline record stands for: 1, or on a port that {@linkplain io.gdrkit.softnic.fabric.FabricPort#acceptsInlineBatches()
     * accepts inline spans} an RC SEND or WRITE request's payload length over the QP's MTU, rounded up
     * ({@link #checkPayload} then holds every packet but a LAST one to a whole MTU). Elsewhere a payload over the MTU
     * stays one packet and is refused there.
     */
    private int inlinePackets(final SoftQp qp, final Packet p) {
        final long len = Integer.toUnsignedLong(p.payloadLength());
        final int mask = p.mask();
        if (len <= qp.mtu || (mask & (BthOpcode.SEND | BthOpcode.WRITE)) == 0 || (mask & BthOpcode.UD) != 0
            || !dev.port.acceptsInlineBatches()) {
            return 1;
        }
        return (int) ((len + qp.mtu - 1) / qp.mtu);
    }

    /**
     * The payload fits the packets the record stands for: each MTU bytes but a LAST one, which holds 1 to MTU
     * (a single packet: 0 to MTU).
     */
    private boolean checkPayload(final SoftQp qp, final Packet p, final int psn, final int packets) {
        if (!fitsPackets(qp, p, packets)) {
            nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "payload of "
                + Integer.toUnsignedLong(p.payloadLength()) + " bytes does not fit " + packets + " packet(s) of MTU "
                + qp.mtu);
            return false;
        }
        return true;
    }

    /** {@link #checkPayload}'s rule, without its NAK. */
    private static boolean fitsPackets(final SoftQp qp, final Packet p, final int packets) {
        final long len = Integer.toUnsignedLong(p.payloadLength());
        final long full = (long) packets * qp.mtu;
        return len <= full && (p.is(BthOpcode.LAST) || len == full) && (packets == 1 || len > full - qp.mtu);
    }

    /** A receive WQE for the message starting now: posted to the QP, or taken from its SRQ. */
    static boolean recvAvailable(final SoftQp qp) {
        if (hasRecv(qp)) {
            return true;
        }
        final SoftSrq srq = qp.srq;
        if (srq != null && srq.take(qp.rq, qp.rqHead)) {
            qp.rq.doorbell().ring(qp.rqHead + 1);
            return true;
        }
        return false;
    }

    /** A receive WQE is in the QP's own queue (never takes one from the SRQ). */
    private static boolean hasRecv(final SoftQp qp) {
        return qp.rqHead < qp.rq.doorbell().producer();
    }

    private void rnr(final SoftQp qp, final int psn) {
        qp.resources.pushAck(Aeth.rnrNak(qp.minRnrTimer), psn, qp.msn);
        // like a sequence NAK, an RNR NAK tells the requester to resend from this PSN: the rest of the burst
        // is dropped silently, not answered with a PSN sequence NAK that would spend the requester's retry_cnt
        qp.nakSeqSent = true;
    }

    /**
     * A SEND record: one packet, or {@code packets} of a span of which the first {@code skip} were received before
     * ({@link #onRequest}); {@code psn} is the record's, the first new packet's is {@code psn + skip}.
     */
    private void onSend(final SoftQp qp, final Packet p, final int recordPsn, final int packets, final int skip) {
        final int psn = Psn.add(recordPsn, skip);
        if (!checkPayload(qp, p, psn, packets)) {
            return;
        }
        final boolean first = skip == 0 && p.is(BthOpcode.FIRST);
        if (first) {
            if (!recvAvailable(qp)) {
                rnr(qp, psn);
                return;
            }
            qp.inSend = true;
            qp.recvOffset = 0;
        }
        final long skipBytes = (long) skip * qp.mtu;
        final int len = (int) (p.payloadLength() - skipBytes);
        if (len > 0) {
            // an inline span's new packets start skipBytes into its payload (or the link read the payload straight
            // into the receive WQE's SGE at recvOffset, see directTarget)
            final int status = p.isReference() ? placeReferenced(qp, p, null, skipBytes, packets - skip)
                : placedDirect ? WcStatus.SUCCESS
                : Sgl.scatter(dev, qp, qp.rq, qp.rqHead, qp.recvOffset, p.buffer(), p.payloadOffset() + skipBytes,
                    len);
            if (status == UNRESOLVED) {
                if (first) {
                    qp.inSend = false; // as if never received: its retransmission starts the message again
                }
                return;
            }
            if (status == NAKED) {
                return;
            }
            if (status != WcStatus.SUCCESS) {
                final int nakCode = status == WcStatus.LOC_LEN_ERR ? Aeth.NAK_INVALID_REQUEST
                    : Aeth.NAK_REMOTE_OPERATIONAL_ERROR;
                nak(qp, psn, nakCode, status, "receive buffer: " + WcStatus.name(status));
                return;
            }
        }
        qp.recvOffset += len;
        if (p.is(BthOpcode.LAST)) {
            int extra = 0;
            int flags = 0;
            if (p.is(BthOpcode.IETH)) {
                // SEND_WITH_INV: the rkey must be a type 2 window bound through this QP (rxe, IB spec 10.6.7.2)
                extra = p.iethRkey();
                if (dev.invalidateMw(qp, extra, true) != WcStatus.SUCCESS) {
                    nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "SEND_WITH_INV of rkey 0x"
                        + Integer.toHexString(extra) + ", not a type 2 window bound through QP " + qp.qpn);
                    return;
                }
                flags = WorkCompletion.WITH_INV;
            } else if (p.is(BthOpcode.IMM)) {
                extra = p.imm();
                flags = WorkCompletion.WITH_IMM;
            }
            qp.inSend = false;
            qp.msn = Psn.add(qp.msn, 1);
            completeRecv(qp, WcStatus.SUCCESS, WcOpcode.RECV, qp.recvOffset, extra, flags, p.solicited());
        }
        accept(qp, p, Psn.add(recordPsn, packets - 1));
    }

    /** A WRITE record: as {@link #onSend}, one packet or a span; checked and placed once for the whole span. */
    private void onWrite(final SoftQp qp, final Packet p, final int recordPsn, final int packets, final int skip) {
        final int psn = Psn.add(recordPsn, skip);
        if (!checkPayload(qp, p, psn, packets)) {
            return;
        }
        final boolean first = skip == 0 && p.is(BthOpcode.FIRST);
        final boolean consumes = p.is(BthOpcode.CONSUMES_RECV);
        if (consumes && !recvAvailable(qp)) {
            rnr(qp, psn);
            return;
        }
        // the first packet's MR: checked above for the whole DMA length, which holds this packet's bytes
        SoftMr firstMr = null;
        if (first) {
            if (!qp.remoteAccess(AccessFlags.REMOTE_WRITE)) {
                nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "QP " + qp.qpn
                    + " does not allow REMOTE_WRITE");
                return;
            }
            qp.writeVa = p.rethVa();
            qp.writeRkey = p.rethRkey();
            qp.pullEnd = 0; // a new message: nothing of it pulled ahead yet
            qp.writeLength = p.rethDmaLength();
            qp.writeRemaining = qp.writeLength;
            if (qp.writeLength < 0) {
                nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "DMA length too large");
                return;
            }
            if (qp.writeLength > 0) {
                firstMr = remoteMr(qp, qp.writeRkey, qp.writeVa, qp.writeLength, AccessFlags.REMOTE_WRITE);
                if (firstMr == null) {
                    nak(qp, psn, Aeth.NAK_REMOTE_ACCESS_ERROR, WcStatus.REM_ACCESS_ERR, "rkey 0x"
                        + Integer.toHexString(qp.writeRkey) + " refused for WRITE of " + qp.writeLength + " bytes");
                    return;
                }
            }
            qp.inWrite = true;
        }
        final long skipBytes = (long) skip * qp.mtu;
        final int len = (int) (p.payloadLength() - skipBytes);
        if (len > qp.writeRemaining || (p.is(BthOpcode.LAST) && len != qp.writeRemaining)) {
            nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "payload does not match the DMA "
                + "length " + qp.writeLength);
            return;
        }
        if (len > 0) {
            // checked on every later packet: the MR may have been deregistered since the first one
            final SoftMr mr = firstMr != null ? firstMr
                : remoteMr(qp, qp.writeRkey, qp.writeVa, len, AccessFlags.REMOTE_WRITE);
            if (mr == null) {
                nak(qp, psn, Aeth.NAK_REMOTE_ACCESS_ERROR, WcStatus.REM_ACCESS_ERR, "rkey 0x"
                    + Integer.toHexString(qp.writeRkey) + " no longer valid");
                return;
            }
            if (p.isReference()) {
                final int status = placeReferenced(qp, p, mr, skipBytes, packets - skip);
                qp.noteDmaWrite(mr);
                if (status != WcStatus.SUCCESS) {
                    if (first) {
                        qp.inWrite = false; // as if never received: its retransmission starts the message again
                    }
                    return;
                }
            } else {
                // an inline span's new packets start skipBytes into its payload, past those received before (or the
                // link read the payload straight into this MR at writeVa, see directTarget)
                if (!placedDirect) {
                    mr.copyIn(p.buffer(), p.payloadOffset() + skipBytes, qp.writeVa, len);
                }
                qp.noteDmaWrite(mr);
            }
        }
        qp.writeVa += len;
        qp.writeRemaining -= len;
        if (p.is(BthOpcode.LAST)) {
            qp.inWrite = false;
            qp.msn = Psn.add(qp.msn, 1);
            if (consumes) {
                completeRecv(qp, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, qp.writeLength, p.imm(),
                    WorkCompletion.WITH_IMM, p.solicited());
            }
        }
        accept(qp, p, Psn.add(recordPsn, packets - 1));
    }

    /**
     * Places the payload of a reference packet (see {@link Packet}): copies it straight from the sender's MRs into
     * {@code writeMr} at {@code qp.writeVa} (a WRITE) or into the receive WQE at {@code qp.recvOffset} (a SEND,
     * {@code writeMr} null). Only the next expected PSN of a live connection gets here, so the WR the reference
     * belongs to has not completed, and RC keeps its source unchanged until it does. Returns SUCCESS, the
     * receive WQE's error status, or {@link #UNRESOLVED} when the source is gone: the sender's QP left RTS/SQD
     * (its WRs flushed, the application may reuse the memory) or the MR was deregistered. Such a packet is
     * treated as lost and nothing acknowledged; a retransmission copies the bytes, or reports the dead lkey.
     * A span (segment offload) is placed from {@code skip} bytes into its payload on, all {@code packets} new
     * packets of it with one copy per referenced segment.
     */
    private int placeReferenced(final SoftQp qp, final Packet p, final SoftMr writeMr, final long skip,
                                final int packets) {
        if (dev.port.pullsReferences()) {
            return placePulled(qp, p, writeMr, skip, packets); // another process's memory: pulled by the port
        }
        // The source QP belongs to another NIC, whose thread writes it: read its volatile state first (the release
        // that publishes the attributes modify_qp set before it), and only then its destination.
        final SoftDevice peer = dev.port.peer(qp.dlid, SoftDevice.class);
        final SoftQp src = peer != null ? peer.publishedQp(qp.destQpn) : null;
        if (src == null || !sending(src.state) || src.destQpn != qp.qpn || src.dlid != dev.port.lid()) {
            unresolved++;
            return UNRESOLVED;
        }
        final int n = p.refCount();
        long done = 0;
        long skipLeft = skip;
        try {
            for (int i = 0; i < n; i++) {
                final int whole = p.refLength(i);
                if (skipLeft >= whole) {
                    skipLeft -= whole; // received before: not read again
                    continue;
                }
                final long va = p.refVa(i) + skipLeft;
                final int len = (int) (whole - skipLeft);
                skipLeft = 0;
                final SoftMr from = src.device.mrs.lookup(p.refLkey(i));
                if (from == null || from.window || !(from.referable || from.dmaView != null) || from.pd != src.pd
                    || !from.contains(va, len)) {
                    unresolved++;
                    return UNRESOLVED;
                }
                // DMA memory with a CPU view: the source NIC's read, done here; its fence first, as dmaRead's
                final MemorySegment bytes = from.referable ? from.segment : from.dmaView;
                if (!from.referable && !from.dma.readFence()) {
                    unresolved++;
                    return UNRESOLVED;
                }
                if (from.nicRing) {
                    // the peer reuses the ring once these PSNs are acknowledged: the ACK covering them is fenced
                    if (!qp.ringPending) {
                        qp.ringPending = true;
                        qp.ringFencedPsn = Psn.add(p.psn(), -1);
                    }
                    qp.ringPsn = Psn.add(p.psn(), p.packets() - 1);
                }
                if (writeMr != null && from.referable) {
                    // the sender's registered host memory: RC leaves it to the NIC until the WR completes, and the
                    // ACK that completes it waits for writeMr's completion fence (noteDmaWrite), so the memory may
                    // read it by DMA after this returns (a CUDA GPU's copy engine, where it is pinned)
                    writeMr.copyInHeldSource(bytes, va - from.address, qp.writeVa + done, len);
                } else if (writeMr != null) {
                    writeMr.copyIn(bytes, va - from.address, qp.writeVa + done, len);
                } else {
                    final int status = Sgl.scatter(dev, qp, qp.rq, qp.rqHead, qp.recvOffset + done,
                        bytes, va - from.address, len);
                    if (status != WcStatus.SUCCESS) {
                        return status;
                    }
                }
                done += len;
            }
        } catch (final IllegalStateException | WrongThreadException e) {
            unresolved++; // the source's arena was closed under the copy: the sender broke RC's rule, not the NIC
            return UNRESOLVED;
        }
        // as StampedLock.validate: the sender's QP still sending after the copy means no flush completion (after
        // which the application may reuse the source) can have been seen before the copy ended
        java.lang.invoke.VarHandle.acquireFence();
        if (!sending(src.state)) {
            unresolved++;
            return UNRESOLVED;
        }
        referenced += packets;
        return WcStatus.SUCCESS;
    }

    // ---------------- cross-process single copy (shared-memory fabric; FabricPort.pull) ----------------

    /** Where a pulled SEND payload lands before the receive WQE's scatter list; made on first use. */
    private java.lang.foreign.MemorySegment pullScratch;
    private final long[] spanAt = new long[1];
    private long pulledPackets;

    /**
     * Places a reference packet from another process: each segment is pulled by the port (process_vm_readv from
     * the process behind the packet's SLID, which must be the pid the packet's token names and the link's probe
     * granted) straight into {@code writeMr} at {@code qp.writeVa} (a WRITE; its rkey, bounds and access were
     * checked by the caller as for any packet), or, for a SEND, straight into the receive WQE's SGE when the bytes
     * fall in one SGE of host memory ({@link Sgl#scatterSpan}, checked by {@link Sgl#localMr}), else into a scratch
     * buffer scattered by {@link Sgl#scatter}. A read that fails or comes back short is a protocol
     * error: NAK (remote operational error: the requester's WR completes with REM_OP_ERR), the QP to ERR, the
     * failure named. The ACK for the packet is queued only after this returns, so the requester reuses its buffer
     * only after the copy. A span (segment offload, {@code packets} new packets) is placed from {@code skip} bytes
     * into its payload on, as {@link #placeReferenced} does in one process; its first segment's pull reads ahead
     * over the rest of the message as a single packet's does, so a WRITE costs one system call per
     * {@link #PULL_AHEAD} bytes and one record per span.
     */
    private int placePulled(final SoftQp qp, final Packet p, final SoftMr writeMr, final long skip,
                            final int packets) {
        final int n = p.refCount();
        final long token = p.refToken();
        final int slid = p.slid();
        long done = 0;
        long skipLeft = skip;
        SoftMr target;
        for (int i = 0; i < n; i++) {
            final int whole = p.refLength(i);
            if (skipLeft >= whole) {
                skipLeft -= whole; // a span's packets received before: not pulled again
                continue;
            }
            final long va = p.refVa(i) + skipLeft;
            final int len = (int) (whole - skipLeft);
            skipLeft = 0;
            final long got;
            if (writeMr != null) {
                got = writeMr.segment != null ? pullWrite(qp, slid, token, va, len, writeMr, qp.writeVa + done, n == 1)
                    : pullThenCopy(slid, token, va, len, writeMr, qp.writeVa + done);
            } else if ((target = Sgl.scatterSpan(dev, qp, qp.rq, qp.rqHead, qp.recvOffset + done, len, spanAt))
                != null) {
                got = dev.port.pull(slid, token, va, target.segment, spanAt[0] - target.address, len); // one copy
            } else {
                // spans SGEs (or an error scatter names): through the scratch, a piece at a time, so a peer's span
                // larger than the receive buffer costs one piece before scatter refuses it, not a pull of it all
                long pulled = 0;
                while (pulled < len) {
                    final int piece = (int) Math.min(len - pulled, SCRATCH_BYTES);
                    final long g = pullScratch(slid, token, va + pulled, piece);
                    if (g != piece) {
                        break;
                    }
                    final int status = Sgl.scatter(dev, qp, qp.rq, qp.rqHead, qp.recvOffset + done + pulled,
                        pullScratch, 0, piece);
                    if (status != WcStatus.SUCCESS) {
                        return status;
                    }
                    pulled += piece;
                }
                got = pulled;
            }
            if (got != len) {
                unresolved++;
                nak(qp, Psn.add(p.psn(), (int) (skip / qp.mtu)), Aeth.NAK_REMOTE_OPERATIONAL_ERROR,
                    WcStatus.REM_OP_ERR, "cross-process reference from LID " + slid + ": " + dev.port.pullError());
                return NAKED;
            }
            done += len;
        }
        pulledPackets += packets;
        referenced += packets;
        return WcStatus.SUCCESS;
    }

    /** Most bytes one pull ahead reads: one system call per MiB of a long WRITE, not one per packet. */
    private static final int PULL_AHEAD = 1 << 20;

    /**
     * A WRITE packet's pull into host memory. A packet whose bytes an earlier pull ahead already placed (the same
     * process, the source at the same distance from the destination as then) costs nothing; otherwise the rest of
     * the message (up to {@link #PULL_AHEAD}) is pulled in one system call, into the destination range the RETH
     * names (checked here for that whole span as for any packet), and remembered. The bytes ahead belong to the
     * same outstanding WR when later packets reference them so (RC keeps them unchanged until its completion);
     * bytes ahead that later packets reference differently (another SGE) are pulled again from where they point.
     */
    private long pullWrite(final SoftQp qp, final int slid, final long token, final long va, final int len,
                           final SoftMr mr, final long dstVa, final boolean single) {
        if (single && token == qp.pullToken && dstVa >= qp.pullDst && dstVa + len <= qp.pullEnd
            && va - qp.pullSrc == dstVa - qp.pullDst && qp.pullEnd != 0) {
            return len; // placed by the pull ahead
        }
        long wanted = len;
        if (single) {
            final long rest = qp.writeRemaining; // this packet's bytes and those of the message after it
            final long ahead = Math.min(Math.max(len, rest), PULL_AHEAD);
            if (ahead > len && remoteMr(qp, qp.writeRkey, dstVa, ahead, AccessFlags.REMOTE_WRITE) == mr) {
                wanted = ahead;
            }
        }
        final long got = dev.port.pullAhead(slid, token, va, mr.segment, dstVa - mr.address, len, wanted);
        if (got >= len) {
            qp.pullToken = token;
            qp.pullDst = dstVa;
            qp.pullSrc = va;
            qp.pullEnd = dstVa + got;
            return len;
        }
        qp.pullEnd = 0;
        return got;
    }

    /** The scratch a pull that cannot land in place goes through: a span larger than this is pulled in pieces. */
    private static final int SCRATCH_BYTES = 65536;

    /** Pulls {@code len} (at most {@link #SCRATCH_BYTES}) bytes into the scratch, allocated once. */
    private long pullScratch(final int slid, final long token, final long va, final int len) {
        if (pullScratch == null) {
            pullScratch = java.lang.foreign.Arena.ofAuto().allocate(SCRATCH_BYTES, 64);
        }
        return dev.port.pull(slid, token, va, pullScratch, 0, len);
    }

    /** A destination without a host segment (DMA memory): pulled into scratch, then written as a copy-in. */
    private long pullThenCopy(final int slid, final long token, final long va, final int len, final SoftMr mr,
                              final long dstVa) {
        long pulled = 0;
        while (pulled < len) {
            final int piece = (int) Math.min(len - pulled, SCRATCH_BYTES);
            final long got = pullScratch(slid, token, va + pulled, piece);
            if (got != piece) {
                break;
            }
            mr.copyIn(pullScratch, 0, dstVa + pulled, piece);
            pulled += piece;
        }
        return pulled;
    }

    /** Reference packets pulled from another process. */
    long pulledPackets() {
        return pulledPackets;
    }

    private static boolean sending(final int state) {
        return state == QpState.RTS || state == QpState.SQD;
    }

    /** Packets placed by reference (single copy); a span counts as its packets. */
    long referencedPackets() {
        return referenced;
    }

    /** Reference packets dropped because their source was gone. */
    long unresolvedReferences() {
        return unresolved;
    }

    private void onRead(final SoftQp qp, final Packet p, final int psn) {
        final long va = p.rethVa();
        final int rkey = p.rethRkey();
        final int len = p.rethDmaLength();
        if (!qp.remoteAccess(AccessFlags.REMOTE_READ) || len < 0) {
            nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "QP " + qp.qpn
                + " does not allow REMOTE_READ");
            return;
        }
        if (len > 0 && remoteMr(qp, rkey, va, len, AccessFlags.REMOTE_READ) == null) {
            nak(qp, psn, Aeth.NAK_REMOTE_ACCESS_ERROR, WcStatus.REM_ACCESS_ERR, "rkey 0x"
                + Integer.toHexString(rkey) + " refused for READ of " + len + " bytes");
            return;
        }
        final int slot = qp.resources.push(ResponderResources.READ, psn);
        if (slot < 0) {
            nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, "more READ/ATOMIC outstanding than "
                + "max_dest_rd_atomic");
            return;
        }
        qp.resources.va[slot] = va;
        qp.resources.rkey[slot] = rkey;
        qp.resources.length[slot] = len;
        qp.msn = Psn.add(qp.msn, 1);
        qp.ePsn = Psn.add(psn, qp.packets(len));
    }

    private void onAtomic(final SoftQp qp, final Packet p, final int psn) {
        final long va = p.atomicVa();
        final int rkey = p.atomicRkey();
        if (!qp.remoteAccess(AccessFlags.REMOTE_ATOMIC) || (va & 7) != 0) {
            nak(qp, psn, Aeth.NAK_INVALID_REQUEST, WcStatus.REM_INV_REQ_ERR, (va & 7) != 0
                ? "atomic address 0x" + Long.toHexString(va) + " is not 8-byte aligned"
                : "QP " + qp.qpn + " does not allow REMOTE_ATOMIC");
            return;
        }
        final SoftMr mr = remoteMr(qp, rkey, va, 8, AccessFlags.REMOTE_ATOMIC);
        if (mr == null) {
            nak(qp, psn, Aeth.NAK_REMOTE_ACCESS_ERROR, WcStatus.REM_ACCESS_ERR, "rkey 0x"
                + Integer.toHexString(rkey) + " refused for ATOMIC");
            return;
        }
        if (qp.resources.isFull()) {
            return; // dropped: the requester retries
        }
        final long original = p.opcode() == BthOpcode.COMPARE_SWAP
            ? mr.atomic(va, true, p.atomicCompare(), p.atomicSwapAdd())
            : mr.atomic(va, false, p.atomicSwapAdd(), 0);
        qp.resources.rememberAtomic(psn, original);
        final int slot = qp.resources.push(ResponderResources.ATOMIC, psn);
        qp.resources.value[slot] = original;
        qp.msn = Psn.add(qp.msn, 1);
        qp.ePsn = Psn.add(psn, 1);
    }

    /**
     * The packet (or a span's packets through {@code lastPsn}) was executed: advance ePSN and acknowledge when
     * asked to; a span's AckReq belongs to its last packet, so one ACK covers the span.
     */
    private void accept(final SoftQp qp, final Packet p, final int lastPsn) {
        qp.ePsn = Psn.add(lastPsn, 1);
        if (p.ackReq()) {
            qp.resources.pushAck(Aeth.ACK_UNLIMITED, lastPsn, qp.msn);
            if (qp.stampPickups) {
                qp.path.placed(lastPsn);
            }
        }
    }

    private void duplicate(final SoftQp qp, final Packet p, final int psn) {
        final int mask = p.mask();
        if ((mask & (BthOpcode.SEND | BthOpcode.WRITE)) != 0) {
            // re-ACK every duplicate, AckReq or not (as rxe does): the requester resent because it did not
            // hear of our progress, and a burst of duplicates coalesces into one ACK in the response queue
            qp.resources.pushAck(Aeth.ACK_UNLIMITED, Psn.add(qp.ePsn, -1), qp.msn);
        } else if ((mask & BthOpcode.READ) != 0) {
            // re-executed: the memory is read again (and checked again) for the requested range
            final long va = p.rethVa();
            final int rkey = p.rethRkey();
            final int len = p.rethDmaLength();
            if (len < 0 || (len > 0 && remoteMr(qp, rkey, va, len, AccessFlags.REMOTE_READ) == null)) {
                return;
            }
            if (qp.resources.rewindQueuedRead(psn, qp.mtu)) {
                return; // its response is still being streamed: restarted from the requested PSN, not queued twice
            }
            final int slot = qp.resources.push(ResponderResources.READ, psn);
            if (slot >= 0) {
                qp.resources.va[slot] = va;
                qp.resources.rkey[slot] = rkey;
                qp.resources.length[slot] = len;
            }
        } else if ((mask & (BthOpcode.ATOMIC_WRITE_OP | BthOpcode.FLUSH_OP)) != 0) {
            // executed once: a duplicate is only answered again
            if (!qp.resources.hasQueued(ResponderResources.READ, psn)) {
                final int slot = qp.resources.push(ResponderResources.READ, psn);
                if (slot >= 0) {
                    qp.resources.va[slot] = 0;
                    qp.resources.rkey[slot] = 0;
                    qp.resources.length[slot] = 0;
                }
            }
        } else if ((mask & BthOpcode.ATOMIC) != 0) {
            // answered from the saved result, never executed twice
            final int h = qp.resources.findAtomic(psn);
            if (h >= 0 && !qp.resources.hasQueued(ResponderResources.ATOMIC, psn)) {
                final int slot = qp.resources.push(ResponderResources.ATOMIC, psn);
                if (slot >= 0) {
                    qp.resources.value[slot] = qp.resources.atomicValue(h);
                }
            }
        }
    }

    private SoftMr remoteMr(final SoftQp qp, final int rkey, final long va, final long len, final int access) {
        final SoftMr mr = dev.mrs.lookup(rkey);
        if (mr == null || mr.pd != qp.pd || (mr.access & access) == 0 || !mr.contains(va, len)
            || (mr.boundQp != null && mr.boundQp != qp)) { // a type 2 window: only through the QP that bound it
            return null;
        }
        return mr;
    }

    /**
     * A request the responder refuses: NAK it, fail the receive WQE in use (if any) and move the QP to ERR, as
     * rxe does for class B/C/D errors.
     */
    private void nak(final SoftQp qp, final int psn, final int code, final int recvStatus, final String why) {
        qp.resources.pushAck(Aeth.nak(code), psn, qp.msn);
        if (qp.inSend || recvStatus == WcStatus.LOC_LEN_ERR || recvStatus == WcStatus.LOC_PROT_ERR) {
            if (hasRecv(qp)) {
                completeRecv(qp, recvStatus, WcOpcode.RECV, 0, 0, 0, false);
            }
        }
        qp.inSend = false;
        qp.inWrite = false;
        final int event = code == Aeth.NAK_REMOTE_ACCESS_ERROR ? AsyncEventType.QP_ACCESS_ERR
            : AsyncEventType.QP_REQ_ERR;
        dev.toError(qp, event, "responder QP " + qp.qpn + ": " + Aeth.describe(Aeth.nak(code)) + ": " + why);
    }

    private void completeRecv(final SoftQp qp, final int status, final int opcode, final int byteLen, final int imm,
                              final int flags, final boolean solicited) {
        qp.fenceDmaWrites();
        final RecvQueue rq = qp.rq;
        final long wrId = rq.wrId(qp.rqHead);
        // Release the WQE before the CQE is visible: the poller may repost into the slot as soon as it sees it.
        qp.rqHead++;
        rq.doorbell().consumer(qp.rqHead);
        if (!qp.recvCq.post(wrId, status, opcode, byteLen, imm, qp.qpn, qp.destQpn, flags, solicited)) {
            dev.toError(qp, AsyncEventType.QP_FATAL, "receive CQ overflow");
        }
    }

    // ---------------- transmit side ----------------

    @Override
    public int doWork() {
        int work = 0;
        final SoftQp[] qps = dev.scan.qps();
        final int count = dev.scan.count();
        for (int i = 0; i < count; i++) {
            final SoftQp qp = qps[i];
            if (!qp.resources.isEmpty()) {
                work += emit(qp);
            }
            if (qp.state == QpState.ERR) {
                work += flushRecv(qp);
            }
        }
        return work;
    }

    /** Sends what the QP owes, in order, until done or the link is full. */
    private int emit(final SoftQp qp) {
        final ResponderResources r = qp.resources;
        int sent = 0;
        while (!r.isEmpty() && sent < burst) {
            final int slot = r.headSlot();
            switch (r.type[slot]) {
                case ResponderResources.ACK -> {
                    // what the memory promises at completion holds before the ACK leaves; the fence is asked, not
                    // waited for, so the engine keeps taking packets while a GPU's copy engine lands these. An ACK
                    // whose MSN is the last one sent (a mid-message AckReq) completes no work request: no fence,
                    // so a large WRITE's copies are not cut into spans and waited for at every AckReq
                    // An ACK that covers packets placed from a requester's source ring is fenced too: the ring is
                    // reused as soon as they are acknowledged, mid-message or not
                    final boolean ring = qp.ringPending && Psn.diff(r.psn[slot], qp.ringFencedPsn) > 0;
                    final boolean completes = r.msn[slot] != qp.ackedMsn || ring;
                    if (completes && !qp.tryFenceDmaWrites() || !claim(qp, BthOpcode.ACKNOWLEDGE, 0, r.psn[slot])) {
                        return sent;
                    }
                    out.aeth(r.syndrome[slot], r.msn[slot]);
                    commit();
                    if (qp.stampPickups) {
                        qp.path.sent(r.psn[slot]);
                    }
                    qp.ackedMsn = r.msn[slot];
                    if (ring) {
                        qp.ringFencedPsn = r.psn[slot];
                        qp.ringPending = Psn.diff(qp.ringPsn, r.psn[slot]) > 0;
                    }
                    r.pop();
                }
                case ResponderResources.ATOMIC -> {
                    // owed responses are sent even in ERR: they were accepted before the NAK queued behind them
                    // an atomic response acknowledges the requests before it too: behind the same fence as an ACK
                    if (!qp.tryFenceDmaWrites() || !claim(qp, BthOpcode.ATOMIC_ACKNOWLEDGE, 0, r.psn[slot])) {
                        return sent;
                    }
                    out.aeth(Aeth.ACK_UNLIMITED, qp.msn).atomicOrig(r.value[slot]);
                    commit();
                    r.pop();
                }
                default -> {
                    if (!emitReadPacket(qp, r, slot)) {
                        return sent;
                    }
                }
            }
            sent++;
        }
        return sent;
    }

    private boolean emitReadPacket(final SoftQp qp, final ResponderResources r, final int slot) {
        final int total = r.length[slot];
        final int index = r.sentPackets[slot];
        final long offset = (long) index * qp.mtu;
        final int payload = (int) Math.min(qp.mtu, total - offset);
        final boolean first = index == 0;
        final boolean last = offset + payload >= total;
        final int opcode = first && last ? BthOpcode.RDMA_READ_RESPONSE_ONLY
            : first ? BthOpcode.RDMA_READ_RESPONSE_FIRST
            : last ? BthOpcode.RDMA_READ_RESPONSE_LAST : BthOpcode.RDMA_READ_RESPONSE_MIDDLE;
        final int psn = Psn.add(r.psn[slot], index);
        SoftMr mr = null;
        if (payload > 0) {
            mr = remoteMr(qp, r.rkey[slot], r.va[slot] + offset, payload, AccessFlags.REMOTE_READ);
            if (mr == null) {
                // deregistered while the response streamed: stop, never read freed memory
                r.pop();
                nak(qp, psn, Aeth.NAK_REMOTE_ACCESS_ERROR, WcStatus.REM_ACCESS_ERR, "rkey 0x"
                    + Integer.toHexString(r.rkey[slot]) + " invalidated during READ response");
                return true;
            }
        }
        // a response with an AETH (first, last, only) acknowledges the requests before it, which the requester then
        // completes (and may reuse their sources, or its source ring): behind the completion fence, as an ACK
        if ((first || last) && !qp.tryFenceDmaWrites()) {
            return false;
        }
        if (!claim(qp, opcode, payload, psn)) {
            return false;
        }
        if ((out.mask() & BthOpcode.AETH) != 0) {
            out.aeth(Aeth.ACK_UNLIMITED, qp.msn);
        }
        if (payload > 0) {
            // bulk-read memory (a CUDA GPU): up to 1 MiB of the response in one read, packets out of it
            qp.readAhead.read(mr, r.psn[slot], first, r.va[slot] + offset, r.va[slot] + total, out.buffer(),
                out.payloadOffset(), payload);
        }
        commit();
        if (last) {
            r.pop();
        } else {
            r.sentPackets[slot] = index + 1;
        }
        return true;
    }

    private boolean claim(final SoftQp qp, final int opcode, final int payload, final int psn) {
        return tx.claim(qp.dlid, qp.destQpn, opcode, payload, psn, false, false);
    }

    private void commit() {
        tx.commit();
    }

    /** ERR: posted receive WQEs complete with WR_FLUSH_ERR. */
    private int flushRecv(final SoftQp qp) {
        int n = 0;
        final long producer = qp.rq.doorbell().producer();
        while (qp.rqHead < producer && qp.recvCq.hasRoomForFlush()) {
            completeRecv(qp, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, false);
            n++;
        }
        if (qp.srq != null && !qp.lastWqeReported && qp.rqHead == producer) {
            // the WQEs left in the SRQ stay there for other QPs; this one will take no more (IB spec 11.6.3)
            qp.lastWqeReported = true;
            dev.raise(new io.gdrkit.verbs.AsyncEvent(AsyncEventType.QP_LAST_WQE_REACHED, qp.qpn, "QP " + qp.qpn
                + " in ERR: last WQE of " + qp.srq + " reached"), qp.pd.owner());
            n++;
        }
        return n;
    }
}
