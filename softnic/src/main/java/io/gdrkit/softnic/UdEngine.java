/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.softnic.queue.SendQueue;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.softnic.wire.Psn;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.WcOpcode;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Unreliable datagrams (UD QPs): each send WQE becomes one SEND-only packet with a DETH (Q_Key, source QP); each
 * datagram received with the QP's Q_Key takes one receive WQE, whose first 40 bytes are the GRH area (left as they
 * are: the fabrics route on LIDs, so no GRH is ever present and the completion does not carry IBV_WC_GRH). Nothing
 * is acknowledged or resent: a datagram dropped by the link, sent to a LID or QP nobody has, carrying another
 * Q_Key, or finding no receive WQE is simply lost (counted here). Errors the QP's own WQEs cause (a bad lkey, a
 * receive buffer too small) complete with their status and move it to ERR.
 *
 * <p>Two ways to send. <b>Copy</b>: the payload is gathered into the packet and the send completes as soon as it
 * is on the link. <b>Single copy</b> (in-JVM fabric, {@code oneCopy}, sends of {@code gdrkit.nic.ud.onecopy.min} (2048) bytes
 * or more, as RC's requester): the packet carries a reference to the source MR and a <em>ticket</em>, and the
 * receiving UD engine copies straight from the source into the receive buffer. A UD send completes when its source
 * may be reused, and nothing acknowledges a datagram, so the sending QP keeps one cell per ticket in flight
 * ({@link SoftQp#udCells}: SENT, CLAIMED, DONE) that both NICs change by compare-and-set:
 * <ul>
 * <li>the receiver reads the source only after claiming SENT to CLAIMED, and releases (CLAIMED to DONE) when its
 * copy ended; a datagram it drops (Q_Key, no receive WQE, wrong state, unknown QP, port down) it releases
 * without claiming (SENT to DONE), so the send still completes;</li>
 * <li>the sender completes its sends in order, each once its cell is DONE; a datagram lost where nobody can
 * release it (the receiving NIC stopped) is given up after {@code gdrkit.nic.ud.reference.timeout.ms} (1000) ms (SENT to DONE by the
 * sender: a claim after that fails and the datagram is lost, as UD allows);</li>
 * <li>a flush (ERR), RESET or destroy gives every ticket up the same way first, and waits for a claimed one.</li>
 * </ul>
 * A claim that fails (given up, or a duplicate) drops the datagram. Where references cannot travel (a link CRC, a
 * hook that looks at payloads, shm/TCP fabrics, an unknown LID, the port down, inline data, an MR that is not
 * referable) the datagram's bytes are copied into it.
 */
final class UdEngine implements Agent {
    /** The path MTU of UD messages: the port's active MTU (4096); a longer send is refused at post. */
    static final int MTU = 4096;
    /** Bytes at the start of every UD receive buffer reserved for a GRH (IB spec 11.4.1.2). */
    static final int GRH_BYTES = 40;
    /** Smallest send that travels as a reference ({@link SoftNicContext#UD_ONE_COPY_MIN_PROP}). */
    private final int referenceMinBytes;
    /** How long a referenced datagram nobody claimed or released may hold its send's completion back. */
    private final long referenceTimeoutNs;
    private static final int SENT = 1;
    private static final int CLAIMED = 2;
    private static final int DONE = 3;
    private static final VarHandle CELL = MethodHandles.arrayElementVarHandle(long[].class);

    private final SoftDevice dev;
    /** References collected by the one gather-list walk, then written into the claimed packet. */
    private final Sgl.Refs refScratch = new Sgl.Refs();
    private final Transmitter tx;
    private final Packet pkt;
    private final int burst;
    private long qkeyMismatches;
    private long noReceiveWqe;
    private long wrongState;
    private long referencedSent;
    private long referencedPlaced;
    private long referencesLost;
    private long referencesTimedOut;

    UdEngine(final SoftDevice dev) {
        this.dev = dev;
        this.tx = new Transmitter(dev);
        this.pkt = tx.pkt;
        this.burst = dev.driver().context().burst();
        this.referenceMinBytes = dev.driver().context().udOneCopyMin();
        this.referenceTimeoutNs = dev.driver().context().udReferenceTimeoutMs() * 1_000_000L;
    }

    @Override
    public String roleName() {
        return "ud";
    }

    @Override
    public int doWork() {
        int work = 0;
        for (final SoftQp qp : dev.udQps) {
            final int s = qp.state;
            if (s == QpState.RTS || s == QpState.SQD) {
                if (qp.compTail < qp.reqHead) {
                    work += completeSent(qp);
                }
                work += send(qp);
            }
        }
        return work;
    }

    private int send(final SoftQp qp) {
        final SendQueue sq = qp.sq;
        final long producer = sq.doorbell().producer();
        int sent = 0;
        while (qp.reqHead < producer && sent < burst) {
            final long index = qp.reqHead;
            final int slot = sq.slot(index);
            final int op = sq.opcode(index);
            final int flags = sq.flags(index);
            final int total = sq.length(index);
            final long dest = sq.remoteAddr(index);
            final int dlid = (int) (dest >>> 32);
            int qkey = sq.rkey(index);
            if (qkey < 0) {
                qkey = qp.qkey; // a controlled Q_Key (high bit set) is never sent from a WR: the QP's own is
            }
            final boolean inline = (flags & SendFlags.INLINE) != 0;
            final boolean imm = WrOpcode.hasImmediate(op);
            final int opcode = imm ? BthOpcode.UD_SEND_ONLY_WITH_IMM : BthOpcode.UD_SEND_ONLY;
            final boolean solicited = (flags & SendFlags.SOLICITED) != 0;
            long ticket = 0;
            // single copy: one reference per non-empty SGE (what the walk writes), claimed at that size; an SGE the
            // walk refuses (not referable, a bad lkey) turns the attempt into a copy, which reports any error
            final int refs = total >= referenceMinBytes && !inline && dev.oneCopy && dev.portActive
                && dev.port.carriesReferences() && dev.port.peer(dlid, SoftDevice.class) != null
                ? nonEmptySges(sq, index) : 0;
            if (refs > 0) {
                if (!tx.claim(dlid, (int) dest, opcode, Packet.referenceLength(refs), qp.nextPsn, false, solicited)) {
                    break; // link full
                }
                if (Sgl.references(dev, qp, sq, index, 0, total, refScratch) == refs) {
                    refScratch.writeInto(pkt.reference(total, refs), refs);
                    ticket = qp.udNextTicket++;
                    pkt.deth(qkey, qp.qpn);
                    if (imm) {
                        pkt.imm(sq.imm(index));
                    }
                    pkt.refToken(ticket);
                    // published before the packet: a receiver that sees the packet sees the cell
                    CELL.setRelease(qp.udCells, (int) (ticket & (qp.udCells.length - 1)), ticket << 2 | SENT);
                    qp.udSentAt[slot] = Long.MIN_VALUE; // stamped when its completion is first found waiting
                    referencedSent++;
                } else {
                    tx.abort();
                }
            }
            if (ticket == 0) {
                if (qp.compTail < qp.reqHead && !inline && total > 0
                    && Sgl.checkSend(dev, qp, sq, index, false) != WcStatus.SUCCESS) {
                    break; // it fails: first let the sends before it complete, in order
                }
                if (!tx.claim(dlid, (int) dest, opcode, total, qp.nextPsn, false, solicited)) {
                    break; // link full
                }
                pkt.deth(qkey, qp.qpn);
                if (imm) {
                    pkt.imm(sq.imm(index));
                }
            }
            if (ticket == 0 && total > 0) {
                if (inline) {
                    MemorySegment.copy(sq.ring(), sq.inlineDataOffset(index), pkt.buffer(), pkt.payloadOffset(),
                        total);
                } else {
                    final int status = Sgl.gather(dev, qp, sq, index, 0, pkt.buffer(), pkt.payloadOffset(), total);
                    if (status != WcStatus.SUCCESS) {
                        tx.abort();
                        if (qp.compTail != index) {
                            break; // (an MR deregistered since the check) fail it once those before it completed
                        }
                        qp.reqHead = index + 1;
                        completeSend(qp, status, 0);
                        dev.toError(qp, -1, "");
                        return sent + 1;
                    }
                }
            }
            tx.commit();
            qp.udTicket[slot] = ticket;
            qp.nextPsn = Psn.add(qp.nextPsn, 1);
            qp.reqHead = index + 1;
            if (ticket == 0 && qp.compTail == index) {
                completeSend(qp, WcStatus.SUCCESS, total); // copied, nothing outstanding before it: done
            }
            sent++;
        }
        if (sent > 0 && qp.compTail < qp.reqHead) {
            completeSent(qp);
        }
        return sent;
    }

    /** How many SGEs of the WQE hold bytes: the references a whole-message walk writes. */
    private static int nonEmptySges(final SendQueue sq, final long index) {
        final int n = sq.numSge(index);
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (sq.sgeLength(index, i) != 0) {
                k++;
            }
        }
        return k;
    }

    /**
     * Completes, in order, the sends that left: a copied one at once, a referenced one when its cell is DONE, or
     * when nobody claimed or released it for {@link #referenceTimeoutNs} after this first found it waiting (given
     * up: the datagram is lost).
     */
    private int completeSent(final SoftQp qp) {
        int n = 0;
        long now = 0;
        while (qp.compTail < qp.reqHead) {
            final int slot = qp.sq.slot(qp.compTail);
            final long ticket = qp.udTicket[slot];
            if (ticket != 0) {
                final int cell = (int) (ticket & (qp.udCells.length - 1));
                final long v = (long) CELL.getAcquire(qp.udCells, cell);
                if (v != (ticket << 2 | DONE)) {
                    if (v != (ticket << 2 | SENT)) {
                        break; // claimed: the receiver is copying
                    }
                    if (now == 0) {
                        now = dev.now();
                    }
                    if (qp.udSentAt[slot] == Long.MIN_VALUE) {
                        qp.udSentAt[slot] = now; // the timeout runs from here
                        break;
                    }
                    if (now - qp.udSentAt[slot] < referenceTimeoutNs
                        || !CELL.compareAndSet(qp.udCells, cell, v, ticket << 2 | DONE)) {
                        break;
                    }
                    referencesTimedOut++;
                }
            }
            completeSend(qp, WcStatus.SUCCESS, qp.sq.length(qp.compTail));
            n++;
        }
        return n;
    }

    /**
     * Makes sure no receiver will read the source of the send at {@code index} (not yet completed): gives its
     * ticket up unless a receiver claimed it, and then waits for that receiver's copy to end, at most
     * {@code waitNanos}. Returns whether the source is free. Called before a flush, RESET or destroy completes or
     * forgets the send.
     */
    static boolean giveUp(final SoftQp qp, final long index, final long waitNanos) {
        if (qp.udTicket == null || index >= qp.reqHead) {
            return true;
        }
        final long ticket = qp.udTicket[qp.sq.slot(index)];
        if (ticket == 0) {
            return true;
        }
        final int cell = (int) (ticket & (qp.udCells.length - 1));
        if (CELL.compareAndSet(qp.udCells, cell, ticket << 2 | SENT, ticket << 2 | DONE)) {
            return true;
        }
        final long deadline = System.nanoTime() + waitNanos;
        while ((long) CELL.getAcquire(qp.udCells, cell) == (ticket << 2 | CLAIMED)) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            Thread.onSpinWait();
        }
        return true;
    }

    /** {@link #giveUp} for every send that left and has not completed (RESET, destroy). */
    static void giveUpAll(final SoftQp qp) {
        if (qp.udTicket == null) {
            return;
        }
        for (long i = qp.compTail; i < qp.reqHead; i++) {
            // a receiver holds a claim only for one copy of at most the path MTU
            giveUp(qp, i, 1_000_000_000L);
        }
    }

    private void completeSend(final SoftQp qp, final int status, final int byteLen) {
        final SendQueue sq = qp.sq;
        final long index = qp.compTail;
        final long wrId = sq.wrId(index);
        final boolean cqe = status != WcStatus.SUCCESS || qp.isSignaled(sq.flags(index));
        qp.compTail = index + 1;
        sq.doorbell().consumer(qp.compTail); // released before the CQE is visible, as the completer does
        if (cqe && !qp.sendCq.post(wrId, status, WcOpcode.SEND, byteLen, 0, qp.qpn, 0, 0)) {
            dev.toError(qp, AsyncEventType.QP_FATAL, "send CQ overflow");
        }
    }

    /** A datagram for UD QP {@code qp}. */
    void onPacket(final SoftQp qp, final Packet p) {
        final int s = qp.state;
        if ((s != QpState.RTR && s != QpState.RTS && s != QpState.SQD) || !p.is(BthOpcode.UD)) {
            wrongState++;
            dropped(p);
            return;
        }
        if (p.dethQkey() != qp.qkey) {
            qkeyMismatches++; // IB spec C10-? : silently dropped (a real port counts it in its Q_Key violations)
            dropped(p);
            return;
        }
        if (!Responder.recvAvailable(qp)) {
            noReceiveWqe++;
            dropped(p);
            return;
        }
        final int len = p.payloadLength();
        final int status;
        if (p.isReference()) {
            status = placeReferenced(qp, p);
            if (status < 0) {
                return; // lost: no receive WQE taken
            }
        } else {
            status = Sgl.scatter(dev, qp, qp.rq, qp.rqHead, GRH_BYTES, p.buffer(), p.payloadOffset(), len);
        }
        qp.fenceDmaWrites();
        final long wrId = qp.rq.wrId(qp.rqHead);
        qp.rqHead++;
        qp.rq.doorbell().consumer(qp.rqHead);
        final boolean imm = p.is(BthOpcode.IMM);
        final boolean ok = status == WcStatus.SUCCESS;
        if (!qp.recvCq.post(wrId, status, WcOpcode.RECV, ok ? GRH_BYTES + len : 0, ok && imm ? p.imm() : 0,
            qp.qpn, p.dethSrcQp(), ok && imm ? WorkCompletion.WITH_IMM : 0, p.solicited(), p.slid())) {
            dev.toError(qp, AsyncEventType.QP_FATAL, "receive CQ overflow");
            return;
        }
        if (!ok) {
            dev.toError(qp, -1, "");
        }
    }

    /** The sending QP of a referenced datagram, when it is a UD QP of a NIC in this JVM; null otherwise. */
    private SoftQp source(final Packet p) {
        final SoftDevice peer = dev.port.peer(p.slid(), SoftDevice.class);
        final SoftQp src = peer != null ? peer.publishedQp(p.dethSrcQp()) : null;
        return src != null && src.udCells != null ? src : null;
    }

    /**
     * Copies a referenced datagram from the sender's MRs into the receive WQE after {@link #GRH_BYTES}, under a
     * claim of its ticket. Returns the WcStatus of the placement, or -1 when the datagram is lost (the claim
     * failed: given up or a duplicate; the source MR is gone).
     */
    private int placeReferenced(final SoftQp qp, final Packet p) {
        final SoftQp src = source(p);
        final long ticket = p.refToken();
        if (src == null || ticket <= 0) {
            referencesLost++;
            return -1;
        }
        final int cell = (int) (ticket & (src.udCells.length - 1));
        if (!CELL.compareAndSet(src.udCells, cell, ticket << 2 | SENT, ticket << 2 | CLAIMED)) {
            referencesLost++;
            return -1;
        }
        try {
            final int n = p.refCount();
            long done = 0;
            for (int i = 0; i < n; i++) {
                final long va = p.refVa(i);
                final int len = p.refLength(i);
                final SoftMr from = src.device.mrs.lookup(p.refLkey(i));
                if (from == null || from.window || !from.referable || from.pd != src.pd || !from.contains(va, len)) {
                    referencesLost++;
                    return -1;
                }
                final int status = Sgl.scatter(dev, qp, qp.rq, qp.rqHead, GRH_BYTES + done, from.segment,
                    va - from.address, len);
                if (status != WcStatus.SUCCESS) {
                    return status;
                }
                done += len;
            }
            referencedPlaced++;
            return WcStatus.SUCCESS;
        } catch (final IllegalStateException | WrongThreadException e) {
            referencesLost++; // the source's arena was closed under the copy: the sender broke the rule, not us
            return -1;
        } finally {
            CELL.setRelease(src.udCells, cell, ticket << 2 | DONE);
        }
    }

    /**
     * A datagram that will not be placed: when it is a reference, tells its sender (SENT to DONE), so the send
     * completes now rather than after the timeout. For any packet that reaches this NIC and is dropped.
     */
    void dropped(final Packet p) {
        if (!p.isReference() || !p.is(BthOpcode.UD)) {
            return;
        }
        final SoftQp src = source(p);
        final long ticket = p.refToken();
        if (src != null && ticket > 0) {
            CELL.compareAndSet(src.udCells, (int) (ticket & (src.udCells.length - 1)), ticket << 2 | SENT,
                ticket << 2 | DONE);
        }
    }

    /** Datagrams sent as references (single copy). */
    long referencedSent() {
        return referencedSent;
    }

    /** Referenced datagrams this engine placed (single copy). */
    long referencedPlaced() {
        return referencedPlaced;
    }

    /** Referenced datagrams this engine received and dropped: the claim failed or the source was gone. */
    long referencesLost() {
        return referencesLost;
    }

    /** Referenced datagrams whose sender gave up waiting ({@link #referenceTimeoutNs}). */
    long referencesTimedOut() {
        return referencesTimedOut;
    }

    /** Datagrams dropped because they carried another Q_Key. */
    long qkeyMismatches() {
        return qkeyMismatches;
    }

    /** Datagrams dropped because no receive WQE was posted. */
    long noReceiveWqe() {
        return noReceiveWqe;
    }
}
