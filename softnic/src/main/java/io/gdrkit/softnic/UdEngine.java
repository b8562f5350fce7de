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

/**
 * Unreliable datagrams (UD QPs): each send WQE becomes one SEND-only packet with a DETH (Q_Key, source QP) and
 * completes as soon as it is on the link; each datagram received with the QP's Q_Key takes one receive WQE, whose
 * first 40 bytes are the GRH area (left as they are: the fabrics route on LIDs, so no GRH is ever present and the
 * completion does not carry IBV_WC_GRH). Nothing is acknowledged or resent: a datagram dropped by the link, sent to
 * a LID or QP nobody has, carrying another Q_Key, or finding no receive WQE is simply lost (counted here). Errors
 * the QP's own WQEs cause (a bad lkey, a receive buffer too small) complete with their status and move it to ERR.
 */
final class UdEngine implements Agent {
    /** The path MTU of UD messages: the port's active MTU (4096); a longer send is refused at post. */
    static final int MTU = 4096;
    /** Bytes at the start of every UD receive buffer reserved for a GRH (IB spec 11.4.1.2). */
    static final int GRH_BYTES = 40;

    private final SoftDevice dev;
    private final Transmitter tx;
    private final Packet pkt;
    private final int burst;
    private long qkeyMismatches;
    private long noReceiveWqe;
    private long wrongState;

    UdEngine(final SoftDevice dev) {
        this.dev = dev;
        this.tx = new Transmitter(dev);
        this.pkt = tx.pkt;
        this.burst = dev.driver().context().burst();
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
            final int op = sq.opcode(index);
            final int flags = sq.flags(index);
            final int total = sq.length(index);
            final long dest = sq.remoteAddr(index);
            int qkey = sq.rkey(index);
            if (qkey < 0) {
                qkey = qp.qkey; // a controlled Q_Key (high bit set) is never sent from a WR: the QP's own is
            }
            final boolean imm = WrOpcode.hasImmediate(op);
            if (!tx.claim((int) (dest >>> 32), (int) dest, imm ? BthOpcode.UD_SEND_ONLY_WITH_IMM
                : BthOpcode.UD_SEND_ONLY, total, qp.nextPsn, false, (flags & SendFlags.SOLICITED) != 0)) {
                break; // link full
            }
            pkt.deth(qkey, qp.qpn);
            if (imm) {
                pkt.imm(sq.imm(index));
            }
            if (total > 0) {
                if ((flags & SendFlags.INLINE) != 0) {
                    java.lang.foreign.MemorySegment.copy(sq.ring(), sq.inlineDataOffset(index), pkt.buffer(),
                        pkt.payloadOffset(), total);
                } else {
                    final int status = Sgl.gather(dev, qp, sq, index, 0, pkt.buffer(), pkt.payloadOffset(), total);
                    if (status != WcStatus.SUCCESS) {
                        tx.abort();
                        completeSend(qp, status, 0);
                        dev.toError(qp, -1, "");
                        return sent + 1;
                    }
                }
            }
            tx.commit();
            qp.nextPsn = Psn.add(qp.nextPsn, 1);
            completeSend(qp, WcStatus.SUCCESS, total);
            sent++;
        }
        return sent;
    }

    private void completeSend(final SoftQp qp, final int status, final int byteLen) {
        final SendQueue sq = qp.sq;
        final long index = qp.reqHead;
        final long wrId = sq.wrId(index);
        final boolean cqe = status != WcStatus.SUCCESS || qp.isSignaled(sq.flags(index));
        qp.reqHead = index + 1;
        qp.compTail = qp.reqHead;
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
            return;
        }
        if (p.dethQkey() != qp.qkey) {
            qkeyMismatches++; // IB spec C10-? : silently dropped (a real port counts it in its Q_Key violations)
            return;
        }
        if (!Responder.recvAvailable(qp)) {
            noReceiveWqe++;
            return;
        }
        final int len = p.payloadLength();
        final int status = Sgl.scatter(dev, qp, qp.rq, qp.rqHead, GRH_BYTES, p.buffer(), p.payloadOffset(), len);
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

    /** Datagrams dropped because they carried another Q_Key. */
    long qkeyMismatches() {
        return qkeyMismatches;
    }

    /** Datagrams dropped because no receive WQE was posted. */
    long noReceiveWqe() {
        return noReceiveWqe;
    }
}
