/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.agent.Agent;
import io.gdrkit.softnic.queue.SendQueue;
import io.gdrkit.softnic.wire.Aeth;
import io.gdrkit.softnic.wire.BthOpcode;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.softnic.wire.Psn;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QpStateTable;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Turns ACKs, NAKs and responses into completions, in WQE order (rxe_comp.c), and owns the retransmit timer:
 * timeout and PSN-sequence NAK rewind the requester (go-back-N), RNR NAK pauses it for the RNR timer, and an
 * exhausted retry count fails the WQE with RETRY_EXC_ERR or RNR_RETRY_EXC_ERR. In ERR it flushes.
 */
final class Completer implements Agent {
    private final SoftDevice dev;
    private final int window;
    private final MemorySegment atomicResult = java.lang.foreign.Arena.global().allocate(8, 8);

    Completer(final SoftDevice dev) {
        this.dev = dev;
        this.window = dev.driver().context().window();
    }

    @Override
    public String roleName() {
        return "completer";
    }

    @Override
    public int doWork() {
        int work = 0;
        long now = Long.MIN_VALUE;
        final SoftQp[] qps = dev.scan.qps();
        final int count = dev.scan.count();
        for (int i = 0; i < count; i++) {
            final SoftQp qp = qps[i];
            final int s = qp.state;
            if (s == QpState.ERR) {
                work += flush(qp);
                continue;
            }
            if (s != QpState.RTS && s != QpState.SQD) {
                continue;
            }
            work += completeReady(qp);
            if (qp.timerDeadline != 0) {
                if (now == Long.MIN_VALUE) {
                    now = dev.now();
                }
                if (now - qp.timerDeadline >= 0) {
                    onTimeout(qp);
                    work++;
                }
            }
            if (s == QpState.SQD && !qp.sqDrainedReported && qp.compTail == qp.reqHead
                && (qp.compTail == qp.sq.doorbell().producer()
                || (qp.wqeState[qp.sq.slot(qp.compTail)] & SoftQp.STARTED) == 0)) {
                qp.sqDrainedReported = true;
                if (qp.sqdNotify) {
                    dev.raise(new AsyncEvent(AsyncEventType.SQ_DRAINED, qp.qpn, "send queue drained in SQD"), qp.pd.owner());
                }
            }
        }
        return work;
    }

    /** A response packet for one of our requests. */
    void onResponse(final SoftQp qp, final Packet p) {
        final int s = qp.state;
        if (s != QpState.RTS && s != QpState.SQD) {
            return;
        }
        final int psn = p.psn();
        // a response for a PSN never sent is bogus; one already completed is a duplicate
        if (Psn.diff(psn, qp.sentPsn) >= 0 && p.opcode() != BthOpcode.ACKNOWLEDGE) {
            return;
        }
        switch (p.opcode()) {
            case BthOpcode.ACKNOWLEDGE -> onAck(qp, p, psn);
            case BthOpcode.ATOMIC_ACKNOWLEDGE -> onAtomicAck(qp, p, psn);
            default -> onReadResponse(qp, p, psn);
        }
        // after a rewind the requester resends from an older PSN; when the originals are acknowledged after
        // all, it must not resend what is already done: move it forward to the new oldest unacknowledged PSN
        if (qp.state != QpState.ERR && Psn.diff(qp.compPsn, qp.nextPsn) > 0) {
            dev.requester.rewind(qp);
        }
    }

    private void onAck(final SoftQp qp, final Packet p, final int psn) {
        final int syndrome = p.aethSyndrome();
        switch (syndrome & Aeth.TYPE_MASK) {
            case Aeth.ACK -> {
                if (Psn.diff(psn, qp.sentPsn) >= 0) {
                    return; // acknowledges something never sent
                }
                ackThrough(qp, psn);
                // an ACK past an unanswered READ/ATOMIC means its responses were lost: implicit NAK
                if (qp.compTail < qp.sq.doorbell().producer()) {
                    final int slot = qp.sq.slot(qp.compTail);
                    if ((qp.wqeState[slot] & SoftQp.SENT) != 0
                        && WrOpcode.isReadOrAtomic(qp.sq.opcode(qp.compTail))
                        && Psn.diff(psn, qp.firstPsn[slot]) >= 0) {
                        retry(qp, false);
                    }
                }
            }
            case Aeth.RNR_NAK -> {
                ackThrough(qp, Psn.add(psn, -1));
                if (qp.rnrRetryLeft == 0) {
                    failHead(qp, WcStatus.RNR_RETRY_EXC_ERR);
                    return;
                }
                if (qp.rnrRetry != 7) {
                    qp.rnrRetryLeft--;
                }
                dev.requester.rewind(qp);
                final long wait = QpStateTable.rnrTimerNanos(syndrome & Aeth.VALUE_MASK);
                qp.rnrWaitUntil = dev.now() + Math.max(1, wait);
                final long rto = qp.retransmitNanos();
                qp.timerDeadline = rto > 0 ? qp.rnrWaitUntil + rto : 0;
            }
            case Aeth.NAK -> {
                final int code = syndrome & Aeth.VALUE_MASK;
                ackThrough(qp, Psn.add(psn, -1));
                if (code == Aeth.NAK_PSN_SEQ_ERROR) {
                    // packets sent before an RNR NAK arrive out of sequence and draw this NAK; the requester
                    // already rewound to that PSN and waits, so it is no reason to spend a retry
                    if (qp.rnrWaitUntil != 0 && psn == qp.compPsn) {
                        return;
                    }
                    retry(qp, false);
                    return;
                }
                failHead(qp, switch (code) {
                    case Aeth.NAK_INVALID_REQUEST -> WcStatus.REM_INV_REQ_ERR;
                    case Aeth.NAK_REMOTE_ACCESS_ERROR -> WcStatus.REM_ACCESS_ERR;
                    case Aeth.NAK_REMOTE_OPERATIONAL_ERROR -> WcStatus.REM_OP_ERR;
                    case Aeth.NAK_INVALID_RD_REQUEST -> WcStatus.REM_INV_RD_REQ_ERR;
                    default -> WcStatus.BAD_RESP_ERR;
                });
            }
            default -> failHead(qp, WcStatus.BAD_RESP_ERR);
        }
    }

    private void onReadResponse(final SoftQp qp, final Packet p, final int psn) {
        // a response implicitly acknowledges every earlier request
        ackThrough(qp, Psn.add(psn, -1));
        final SendQueue sq = qp.sq;
        if (qp.compTail >= sq.doorbell().producer()) {
            return;
        }
        final long index = qp.compTail;
        final int slot = sq.slot(index);
        final int op = sq.opcode(index);
        if (op == WrOpcode.ATOMIC_WRITE || op == WrOpcode.FLUSH) {
            // IBA 1.5: a zero-length READ response answers the single request packet
            if ((qp.wqeState[slot] & SoftQp.SENT) == 0 || qp.firstPsn[slot] != psn || qp.compPsn != psn) {
                return;
            }
            if (p.opcode() != BthOpcode.RDMA_READ_RESPONSE_ONLY || p.payloadLength() != 0) {
                failHead(qp, WcStatus.BAD_RESP_ERR);
                return;
            }
            progress(qp, Psn.add(psn, 1));
            complete(qp, WcStatus.SUCCESS, op == WrOpcode.ATOMIC_WRITE ? 8 : 0);
            completeReady(qp);
            return;
        }
        if ((qp.wqeState[slot] & SoftQp.STARTED) == 0 || op != WrOpcode.RDMA_READ
            || Psn.diff(psn, qp.firstPsn[slot]) < 0 || Psn.diff(psn, qp.lastPsn[slot]) > 0) {
            return; // stale: not for the READ we wait on
        }
        final int d = Psn.diff(psn, qp.compPsn);
        if (d < 0) {
            return; // duplicate
        }
        if (d > 0) {
            retry(qp, false); // a response went missing: ask again from compPsn
            return;
        }
        final long offset = (long) Psn.diff(psn, qp.firstPsn[slot]) * qp.mtu;
        final int payload = p.payloadLength();
        final int total = sq.length(index);
        final boolean last = psn == qp.lastPsn[slot];
        final int expected = (int) Math.min(qp.mtu, total - offset);
        // a READ may have been asked for in pieces, so a response LAST need not end the WQE: only the size of
        // each payload is fixed by its PSN
        if (payload != expected) {
            failHead(qp, WcStatus.BAD_RESP_ERR);
            return;
        }
        if (payload > 0) {
            final int status = Sgl.scatter(dev, qp, sq, index, offset, p.buffer(), p.payloadOffset(), payload);
            if (status != WcStatus.SUCCESS) {
                failHead(qp, status);
                return;
            }
        }
        progress(qp, Psn.add(psn, 1));
        if (last) {
            complete(qp, WcStatus.SUCCESS, total);
            completeReady(qp);
        }
    }

    private void onAtomicAck(final SoftQp qp, final Packet p, final int psn) {
        ackThrough(qp, Psn.add(psn, -1));
        final SendQueue sq = qp.sq;
        if (qp.compTail >= sq.doorbell().producer()) {
            return;
        }
        final long index = qp.compTail;
        final int slot = sq.slot(index);
        if ((qp.wqeState[slot] & SoftQp.SENT) == 0 || !WrOpcode.isAtomic(sq.opcode(index))
            || qp.firstPsn[slot] != psn || qp.compPsn != psn) {
            return;
        }
        atomicResult.set(ValueLayout.JAVA_LONG, 0, p.atomicOrig());
        final int status = Sgl.scatter(dev, qp, sq, index, 0, atomicResult, 0, 8);
        if (status != WcStatus.SUCCESS) {
            failHead(qp, status);
            return;
        }
        progress(qp, Psn.add(psn, 1));
        complete(qp, WcStatus.SUCCESS, 8);
        completeReady(qp);
    }

    /**
     * Everything up to and including {@code psn} was received by the responder. An acknowledgement (explicit, or
     * implied by a later response or NAK) never covers the response PSNs of a READ or ATOMIC still waiting for
     * its data: those advance only with the responses themselves, in order. Otherwise a lost response would be
     * skipped over (the READ completing with bytes missing) and a rewind would restart at a wrong PSN.
     */
    private void ackThrough(final SoftQp qp, final int psn) {
        int next = Psn.add(psn, 1);
        final int limit = ackLimit(qp, next);
        if (Psn.diff(next, limit) > 0) {
            next = limit;
        }
        if (Psn.diff(next, qp.compPsn) > 0 && Psn.diff(next, qp.sentPsn) <= 0) {
            progress(qp, next);
        }
        completeReady(qp);
    }

    /**
     * The first PSN before {@code next} that an acknowledgement may not pass: the first unanswered response PSN
     * of the oldest outstanding READ/ATOMIC whose PSNs start before {@code next}; {@code next} when there is none.
     */
    private static int ackLimit(final SoftQp qp, final int next) {
        final SendQueue sq = qp.sq;
        // up to the producer, not reqHead: after a rewind, responses to WQEs sent before it still arrive
        final long producer = sq.doorbell().producer();
        for (long i = qp.compTail; i < producer; i++) {
            final int slot = sq.slot(i);
            if ((qp.wqeState[slot] & SoftQp.STARTED) == 0) {
                break;
            }
            final int first = qp.firstPsn[slot];
            if (Psn.diff(first, next) >= 0) {
                break; // this WQE and all later ones start at or after next
            }
            if (WrOpcode.isReadOrAtomic(sq.opcode(i))) {
                return Psn.diff(qp.compPsn, first) > 0 ? qp.compPsn : first;
            }
        }
        return next;
    }

    /** Forward progress: resets retry counters and restarts (or stops) the timer. */
    private void progress(final SoftQp qp, final int newCompPsn) {
        qp.compPsn = newCompPsn;
        qp.cwnd = window; // the probe after a timeout got through: back to the full window
        qp.retryLeft = qp.retryCnt;
        qp.rnrRetryLeft = qp.rnrRetry;
        qp.retryStarted = false;
        qp.backoff = 0;
        if (qp.compPsn == qp.sentPsn) {
            qp.timerDeadline = 0;
        } else {
            final long rto = qp.retransmitNanos();
            qp.timerDeadline = rto > 0 ? dev.now() + rto : 0;
        }
    }

    /** Completes, in order, every WQE whose outcome is known: acknowledged writes/sends, local errors. */
    private int completeReady(final SoftQp qp) {
        int n = 0;
        final SendQueue sq = qp.sq;
        final long producer = sq.doorbell().producer();
        while (qp.compTail < producer && qp.state != QpState.ERR) {
            final int slot = sq.slot(qp.compTail);
            final byte st = qp.wqeState[slot];
            if ((st & SoftQp.LOCAL_ERROR) != 0) {
                failHead(qp, qp.wqeError[slot]);
                return n + 1;
            }
            if ((st & SoftQp.SENT) == 0) {
                break;
            }
            final int op = sq.opcode(qp.compTail);
            if (WrOpcode.isReadOrAtomic(op) || Psn.diff(qp.lastPsn[slot], qp.compPsn) >= 0) {
                break;
            }
            complete(qp, WcStatus.SUCCESS, sq.length(qp.compTail));
            n++;
        }
        return n;
    }

    /** Retires the WQE at compTail: a CQE when signaled or failed. */
    private void complete(final SoftQp qp, final int status, final int byteLen) {
        final SendQueue sq = qp.sq;
        final long index = qp.compTail;
        final int slot = sq.slot(index);
        final int op = sq.opcode(index);
        if (qp.stampPickups) {
            qp.takenNanos[slot] = System.nanoTime();
        }
        qp.fenceDmaWrites(); // READ/ATOMIC results written into DMA memory: visible as promised at completion
        final boolean cqe = status != WcStatus.SUCCESS || qp.isSignaled(sq.flags(index));
        final long wrId = sq.wrId(index);
        if ((qp.wqeState[slot] & SoftQp.STARTED) != 0 && WrOpcode.isReadOrAtomic(op)) {
            qp.outstandingRdAtomic--;
        }
        qp.wqeState[slot] = 0;
        qp.compTail = index + 1;
        if (qp.reqHead < qp.compTail) {
            qp.reqHead = qp.compTail;
            qp.curOffset = 0;
        }
        // The slot is released before the CQE is visible: a poller (on another thread in dedicated mode) may
        // post into it as soon as it sees the completion, as ibv_poll_cq allows.
        sq.doorbell().consumer(qp.compTail);
        if (cqe && !qp.sendCq.post(wrId, status, WrOpcode.completionOpcode(op), byteLen, 0, qp.qpn, 0, 0)) {
            dev.toError(qp, AsyncEventType.QP_FATAL, "send CQ overflow");
        }
        if (qp.stampPickups) {
            qp.completionNanos[slot] = System.nanoTime(); // after the CQE is visible to its poller
            qp.completionIndex[slot] = index;
        }
    }

    /** Fails the oldest WQE with {@code status} and moves the QP to ERR; the rest flush. */
    private void failHead(final SoftQp qp, final int status) {
        if (qp.compTail < qp.sq.doorbell().producer()) {
            complete(qp, status, 0);
        }
        qp.timerDeadline = 0;
        dev.toError(qp, -1, "");
    }

    private void onTimeout(final SoftQp qp) {
        if (qp.compPsn == qp.sentPsn) {
            qp.timerDeadline = 0;
            return;
        }
        retry(qp, true);
    }

    /**
     * Go-back-N from compPsn; each retry spends one retry_cnt, none left fails the WQE. One loss produces many
     * signals (a sequence NAK, every later ACK past an unanswered READ, every later response after a gap), so
     * once a retry is started, only a timeout starts another before progress is made (rxe's started_retry);
     * otherwise a single lost packet could spend the whole retry_cnt.
     */
    private void retry(final SoftQp qp, final boolean timeout) {
        if (!timeout && qp.retryStarted) {
            return;
        }
        qp.retryStarted = true;
        if (qp.retryLeft == 0) {
            failHead(qp, WcStatus.RETRY_EXC_ERR);
            return;
        }
        qp.retryLeft--;
        if (timeout) {
            qp.cwnd = 1; // probe with one packet: a periodic loss cannot hit the same PSN every round
            qp.backoff = Math.min(qp.backoff + 1, dev.driver().context().retransmitBackoff()); // slow peer: 2x
        }
        dev.requester.rewind(qp);
        final long rto = qp.retransmitNanos();
        qp.timerDeadline = rto > 0 ? dev.now() + rto : 0;
    }

    /** ERR: every WQE not yet completed completes with WR_FLUSH_ERR, signaled or not. */
    private int flush(final SoftQp qp) {
        int n = 0;
        final long producer = qp.sq.doorbell().producer();
        while (qp.compTail < producer) {
            if (!qp.sendCq.hasRoomForFlush() || !UdEngine.giveUp(qp, qp.compTail, 0)) {
                break; // (UD: a receiver is copying from the source; flushed once it is done)
            }
            complete(qp, WcStatus.WR_FLUSH_ERR, 0);
            n++;
        }
        qp.timerDeadline = 0;
        return n;
    }
}
