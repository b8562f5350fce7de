/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.softnic.queue.RecvQueue;
import io.gdrkit.softnic.queue.SendQueue;
import io.gdrkit.core.Errno;
import io.gdrkit.verbs.DirectQueue;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpCap;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QpType;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.Sge;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.util.Arrays;

/**
 * An RC queue pair of the software NIC. Posting (any one thread per queue) writes WQE records and rings the
 * doorbell; everything below the "NIC state" line is touched only by the thread holding the device's duty,
 * so it needs no synchronization. Requester, responder and completer each own their part of it, as in rxe.
 */
final class SoftQp implements QueuePair {
    // per-WQE NIC state bits
    static final byte STARTED = 1;
    static final byte SENT = 2;
    static final byte LOCAL_ERROR = 4;

    final SoftDevice device;
    final SoftPd pd;
    final int qpn;
    final SoftCq sendCq;
    final SoftCq recvCq;
    final boolean sqSigAll;
    final QpCap cap;
    final Arena arena = Arena.ofShared();
    final SendQueue sq;
    /**
     * The receive queue the responder consumes: the QP's own, or with an {@link #srq} a small one the responder
     * copies each SRQ WQE into when a message starts.
     */
    final RecvQueue rq;
    /** The shared receive queue, or null. */
    final SoftSrq srq;
    /** A UD QP: its sends and receives are the {@link UdEngine}'s; the RC engines leave it alone. */
    final boolean ud;
    /** UD: the Q_Key incoming datagrams must carry. */
    int qkey;
    /**
     * UD single copy ({@link UdEngine}): per SQ slot, the ticket of the datagram sent as a reference (0: its bytes
     * were copied into the packet) and when it left; null on RC QPs.
     */
    final long[] udTicket;
    final long[] udSentAt;
    /**
     * UD single copy: one cell per ticket in flight ({@code ticket & (length - 1)}), holding
     * {@code ticket << 2 | state}. Written by this QP's NIC and by the receiving NIC's UD engine (another thread):
     * only through {@link UdEngine}'s VarHandle.
     */
    final long[] udCells;
    /** The next UD ticket; never reset, so a late duplicate of an old datagram never matches a new cell. */
    long udNextTicket = 1;
    /** With an SRQ: QP_LAST_WQE_REACHED was raised for this stay in ERR. */
    boolean lastWqeReported;
    /** Bound once: a method reference per post would allocate. */
    private final SendQueue.InlineSource inlineSource;

    volatile int state = QpState.RESET;

    // attributes (written under duty by modify)
    int accessFlags;
    int pathMtu = Mtu.MTU_256;
    int softwareMtu;
    int mtu = 256;
    int destQpn;
    int dlid;
    /** The address vector's SL and GRH: kept and reported by queryQp; the fabrics route on {@link #dlid}. */
    int sl;
    boolean isGlobal;
    final io.gdrkit.verbs.GlobalRoute grh = new io.gdrkit.verbs.GlobalRoute();
    int timeout;
    int retryCnt;
    int rnrRetry;
    int minRnrTimer;
    int maxRdAtomic;
    int maxDestRdAtomic;
    int rqPsn;
    int sqPsn;
    boolean sqdNotify;

    // poster side (the posting thread)
    long sqPostHead;
    long rqPostHead;

    // direct access (IBGDA): see DirectQueue
    volatile boolean directOwned;
    volatile boolean stampPickups;
    /** Doorbells the CPU poster rang: one writer (the poster guard), stored opaque so a post pays no extra fence. */
    long cpuDoorbells;
    /** NIC-written counters (one writer: the duty holder), read by anyone. */
    volatile long directDoorbells;
    volatile long staleWqes;
    long lastSeenProducer;
    final long[] pickupNanos;
    /** Per slot, with {@link #stampPickups}: when the WQE's CQE became visible, and that WQE's index. */
    final long[] completionNanos;
    final long[] completionIndex;
    /** Per slot: the WQE index whose pick-up {@link #pickupNanos} holds, so a reused slot reads as none. */
    final long[] pickupIndex;
    /** Per slot, with {@link #stampPickups}: when the completer took up the WQE (before its fence and CQE). */
    final long[] takenNanos;
    /**
     * Responder stamps with {@link #stampPickups} (null until it is first turned on; final fields, so a requester
     * that sees the reference sees the arrays): per PSN, {@value #PATH_STAMPS} deep, when an ACK for that PSN was
     * queued (its packets placed) and when it left (after the completion fence), and the PSN each slot holds.
     * Written by this QP's responder, read after the run by the connected requester ({@code Direct.pathNanos}).
     */
    volatile PathStamps path;
    static final int PATH_STAMPS = 1024;

    static final class PathStamps {
        private final long[] placedNanos = new long[PATH_STAMPS];
        private final long[] sentNanos = new long[PATH_STAMPS];
        private final int[] placedPsn = new int[PATH_STAMPS];
        private final int[] sentPsn = new int[PATH_STAMPS];

        PathStamps() {
            Arrays.fill(placedPsn, -1);
            Arrays.fill(sentPsn, -1);
        }

        /** The responder queued the ACK of {@code psn}: its packets are placed. */
        void placed(final int psn) {
            placedNanos[psn & (PATH_STAMPS - 1)] = System.nanoTime();
            placedPsn[psn & (PATH_STAMPS - 1)] = psn;
        }

        /** The ACK of {@code psn} left, behind the completion fence. */
        void sent(final int psn) {
            sentNanos[psn & (PATH_STAMPS - 1)] = System.nanoTime();
            sentPsn[psn & (PATH_STAMPS - 1)] = psn;
        }

        long placedNanos(final int psn) {
            return placedPsn[psn & (PATH_STAMPS - 1)] == psn ? placedNanos[psn & (PATH_STAMPS - 1)] : 0;
        }

        long sentNanos(final int psn) {
            return sentPsn[psn & (PATH_STAMPS - 1)] == psn ? sentNanos[psn & (PATH_STAMPS - 1)] : 0;
        }
    }
    private Direct direct;

    // ---------------- NIC state ----------------
    // the device's scan set (ScanSet): parked by the NIC, taken back by a poster (CAS); the rest under duty
    volatile int parked;
    boolean scanned;
    /** Looks for idle QPs (ScanSet sweeps) in a row that found this one idle. */
    int idleCycles;
    SoftQp wokenNext;
    // requester
    long reqHead;
    long curOffset;
    int nextPsn;
    /** One past the highest PSN ever sent: ACKs up to here are genuine even after a rewind lowered nextPsn. */
    int sentPsn;
    /**
     * How many PSNs may be outstanding right now: the configured window, or one after a timeout until the
     * next acknowledgement of progress. Resending a single packet after a timeout is what keeps a
     * periodic loss pattern from hitting the same PSN on every go-back-N round.
     */
    int cwnd = 1;
    int pktsSinceAckReq;
    int outstandingRdAtomic;
    long rnrWaitUntil;
    final int[] firstPsn;
    final int[] lastPsn;
    final byte[] wqeState;
    final byte[] wqeError;

    // completer
    long compTail;
    int compPsn;
    long timerDeadline;
    int retryLeft;
    int rnrRetryLeft;
    /** A go-back-N retry was started and no progress was made since. */
    boolean retryStarted;
    /** Consecutive retransmit timeouts without progress: each doubles the next timeout (exponential backoff). */
    int backoff;
    boolean sqDrainedReported;

    // responder
    int ePsn;
    int msn;
    /** The MSN of the last ACK sent: an ACK with the same MSN completes no message, so it needs no DMA fence. */
    int ackedMsn;
    /**
     * Packets placed from a requester's {@link DmaSourceRing} (see {@link SoftMr#nicRing}) wait for a fenced ACK:
     * whether any is, the last one's PSN, and the highest PSN an ACK after a fence has covered.
     */
    boolean ringPending;
    int ringPsn;
    int ringFencedPsn;
    boolean nakSeqSent;
    long rqHead;
    boolean inSend;
    int recvOffset;
    boolean inWrite;
    long writeVa;
    int writeRkey;
    int writeRemaining;
    int writeLength;
    /**
     * Responder, cross-process WRITE (Responder.placePulled): the destination range [pullDst, pullEnd) of the current
     * message already holds the sender's bytes from [pullSrc, ...) of process pullToken, pulled ahead in one system
     * call; pullEnd 0 when nothing is.
     */
    long pullDst;
    long pullEnd;
    long pullSrc;
    long pullToken;
    final ResponderResources resources;
    /** DMA memory written since the last completion fence (one at a time: a QP writes one MR per message). */
    private SoftMr dmaWritten;
    /** Read-ahead of DMA memory: the requester's gathers, and the responder's READ responses. */
    final DmaReadAhead gatherAhead = new DmaReadAhead();
    /** Where a requester's packets out of bulk-read memory are referenced from, for a receiver in this JVM. */
    final DmaSourceRing sourceRing = new DmaSourceRing();
    final DmaReadAhead readAhead = new DmaReadAhead();
    /** DMA memory whose fence {@link #tryFenceDmaWrites} started and has not yet seen complete, and its token. */
    private SoftMr fencing;
    private long fencingToken;

    SoftQp(final SoftDevice device, final SoftPd pd, final int qpn, final SoftCq sendCq, final SoftCq recvCq,
           final boolean sqSigAll, final QpCap cap, final SoftSrq srq, final boolean ud) {
        this.ud = ud;
        this.device = device;
        this.pd = pd;
        this.qpn = qpn;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.sqSigAll = sqSigAll;
        this.cap = cap.copy();
        this.sq = new SendQueue(arena, cap.maxSendWr, cap.maxSendSge, cap.maxInlineData);
        this.srq = srq;
        // with an SRQ the QP's own queue holds only the WQE of the message being received (taken from the SRQ)
        this.rq = srq == null ? new RecvQueue(arena, cap.maxRecvWr, cap.maxRecvSge) : new RecvQueue(arena, 2, srq.maxSge);
        this.inlineSource = device::copyInline;
        this.cap.maxSendWr = sq.depth();
        this.cap.maxRecvWr = srq == null ? rq.depth() : 0;
        if (srq != null) {
            this.cap.maxRecvSge = 0;
        }
        this.udTicket = ud ? new long[sq.depth()] : null;
        this.udSentAt = ud ? new long[sq.depth()] : null;
        this.udCells = ud ? new long[sq.depth()] : null; // a power of two, as the SQ's slot mask needs
        this.firstPsn = new int[sq.depth()];
        this.lastPsn = new int[sq.depth()];
        this.wqeState = new byte[sq.depth()];
        this.wqeError = new byte[sq.depth()];
        this.pickupNanos = new long[sq.depth()];
        this.completionNanos = new long[sq.depth()];
        this.completionIndex = new long[sq.depth()];
        this.pickupIndex = new long[sq.depth()];
        this.takenNanos = new long[sq.depth()];
        Arrays.fill(pickupIndex, -1);
        this.resources = new ResponderResources(device.attr().maxQpRdAtom());
    }

    @Override
    public int qpNum() {
        return qpn;
    }

    @Override
    public int qpType() {
        return ud ? QpType.UD : QpType.RC;
    }

    @Override
    public int state() {
        return state;
    }

    /**
     * Most doublings of the retransmit timeout after consecutive timeouts: 2, since the IBA lets one expiry of the
     * local ACK timer take at most 4x 4.096 us x 2^timeout, so an application's timeout means what it means on
     * hardware. With retry_cnt 7 the whole retry budget is then at most 1+2+4+4+4+4+4+4 = 27 base timeouts
     * ({@link #retryBudgetNanos}).
     */
    static final int MAX_BACKOFF = 2;

    /**
     * Retransmit timeout: 4.096 us * 2^(timeout + backoff) * factor, the exponent capped at 31 as the IB timeout
     * field is; 0 when timeout is 0 (infinite). Backoff grows by one per timeout without progress, so a peer that
     * is only slow (a loaded host) gets time to answer, and resets on progress.
     */
    long retransmitNanos() {
        if (timeout == 0) {
            return 0;
        }
        final int exponent = Math.min(31, timeout + backoff);
        return (long) (4096.0 * (1L << exponent) * device.driver().context().retransmitFactor());
    }

    /**
     * The longest a dead peer can take to surface as RETRY_EXC_ERR: the sum of every retransmit timeout the
     * retry count allows, with backoff. 0 when the timeout is infinite.
     */
    long retryBudgetNanos() {
        if (timeout == 0) {
            return 0;
        }
        long total = 0;
        for (int i = 0; i <= retryCnt; i++) {
            final int exponent = Math.min(31, timeout + Math.min(i, device.driver().context().retransmitBackoff()));
            total += (long) (4096.0 * (1L << exponent) * device.driver().context().retransmitFactor());
        }
        return total;
    }

    @Override
    public void modify(final QpAttr attr, final int attrMask) {
        device.modifyQp(this, attr, attrMask);
    }

    @Override
    public QpAttr queryQp() {
        final QpAttr a = new QpAttr();
        a.qpState = state;
        a.curQpState = state;
        a.qpAccessFlags = accessFlags;
        a.pathMtu = pathMtu;
        a.softwareMtu = softwareMtu;
        a.destQpNum = destQpn;
        a.dlid = dlid;
        a.sl = sl;
        a.isGlobal = isGlobal;
        a.grh.set(grh);
        a.timeout = timeout;
        a.retryCnt = retryCnt;
        a.rnrRetry = rnrRetry;
        a.minRnrTimer = minRnrTimer;
        a.maxRdAtomic = maxRdAtomic;
        a.maxDestRdAtomic = maxDestRdAtomic;
        a.rqPsn = rqPsn;
        a.sqPsn = sqPsn;
        a.qkey = qkey;
        a.cap.maxSendWr(cap.maxSendWr).maxRecvWr(cap.maxRecvWr).maxSendSge(cap.maxSendSge)
            .maxRecvSge(cap.maxRecvSge).maxInlineData(cap.maxInlineData);
        return a;
    }

    /** Applies validated attributes; called by the device under duty. */
    void apply(final QpAttr a, final int m, final int next) {
        if ((m & QpAttrMask.ACCESS_FLAGS) != 0) accessFlags = a.qpAccessFlags;
        if ((m & QpAttrMask.PATH_MTU) != 0) pathMtu = a.pathMtu;
        if ((m & QpAttrMask.SOFTWARE_MTU) != 0) softwareMtu = a.softwareMtu;
        if ((m & (QpAttrMask.PATH_MTU | QpAttrMask.SOFTWARE_MTU)) != 0) {
            mtu = softwareMtu != 0 ? softwareMtu : Mtu.toBytes(pathMtu);
        }
        if ((m & QpAttrMask.DEST_QPN) != 0) destQpn = a.destQpNum;
        if ((m & QpAttrMask.AV) != 0) {
            dlid = a.dlid;
            sl = a.sl;
            isGlobal = a.isGlobal;
            grh.set(a.grh);
        }
        if ((m & QpAttrMask.TIMEOUT) != 0) timeout = a.timeout;
        if ((m & QpAttrMask.RETRY_CNT) != 0) retryCnt = a.retryCnt;
        if ((m & QpAttrMask.RNR_RETRY) != 0) rnrRetry = a.rnrRetry;
        if ((m & QpAttrMask.MIN_RNR_TIMER) != 0) minRnrTimer = a.minRnrTimer;
        if ((m & QpAttrMask.MAX_QP_RD_ATOMIC) != 0) maxRdAtomic = a.maxRdAtomic;
        if ((m & QpAttrMask.MAX_DEST_RD_ATOMIC) != 0) maxDestRdAtomic = a.maxDestRdAtomic;
        if ((m & QpAttrMask.EN_SQD_ASYNC_NOTIFY) != 0) sqdNotify = true;
        if ((m & QpAttrMask.QKEY) != 0) qkey = a.qkey;
        if ((m & QpAttrMask.RQ_PSN) != 0) {
            rqPsn = a.rqPsn;
            ePsn = a.rqPsn;
        }
        if ((m & QpAttrMask.SQ_PSN) != 0) {
            sqPsn = a.sqPsn;
            nextPsn = a.sqPsn;
            sentPsn = a.sqPsn;
            cwnd = device.driver().context().window();
            compPsn = a.sqPsn;
        }
        final int prev = state;
        if (next == QpState.RESET && prev != QpState.RESET) {
            resetQueues();
        }
        if (next == QpState.RTS && prev == QpState.RTR) {
            backoff = 0;
            retryLeft = retryCnt;
            rnrRetryLeft = rnrRetry;
        }
        if (next == QpState.SQD) {
            sqDrainedReported = false;
        }
        state = next;
    }

    private void resetQueues() {
        UdEngine.giveUpAll(this); // the WRs are forgotten: no receiver may read their sources after this
        sq.doorbell().reset();
        rq.doorbell().reset();
        sqPostHead = 0;
        lastSeenProducer = 0;
        rqPostHead = 0;
        reqHead = 0;
        curOffset = 0;
        pktsSinceAckReq = 0;
        outstandingRdAtomic = 0;
        rnrWaitUntil = 0;
        java.util.Arrays.fill(wqeState, (byte) 0);
        compTail = 0;
        timerDeadline = 0;
        retryStarted = false;
        msn = 0;
        ackedMsn = 0;
        ringPending = false;
        nakSeqSent = false;
        rqHead = 0;
        inSend = false;
        inWrite = false;
        resources.clear();
        sourceRing.reset(); // PSNs start again
        sqdNotify = false;
        lastWqeReported = false;
    }

    // ---------------- posting ----------------

    /** 1 while a postSend / postRecv runs: the single-poster rule, checked (see {@link QueuePair}). */
    private volatile int sendPoster;
    private volatile int recvPoster;
    private static final java.lang.invoke.VarHandle SEND_POSTER;
    private static final java.lang.invoke.VarHandle RECV_POSTER;
    private static final java.lang.invoke.VarHandle CPU_DOORBELLS;

    static {
        try {
            final java.lang.invoke.MethodHandles.Lookup l = java.lang.invoke.MethodHandles.lookup();
            SEND_POSTER = l.findVarHandle(SoftQp.class, "sendPoster", int.class);
            RECV_POSTER = l.findVarHandle(SoftQp.class, "recvPoster", int.class);
            CPU_DOORBELLS = l.findVarHandle(SoftQp.class, "cpuDoorbells", long.class);
        } catch (final ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Override
    public void postSend(final SendWorkRequest first) {
        if (!SEND_POSTER.compareAndSet(this, 0, 1)) {
            throw new PostException(Errno.EBUSY, 0, "concurrent postSend on QP " + qpn + ": a send queue has one "
                + "poster at a time (serialize posts to a shared QP); nothing was posted");
        }
        try {
            postSendOwned(first);
        } finally {
            SEND_POSTER.setRelease(this, 0);
        }
    }

    private void postSendOwned(final SendWorkRequest first) {
        final int s = state;
        if (directOwned) {
            throw new PostException(Errno.EPERM, 0, "QP " + qpn + "'s send queue is owned by a direct poster");
        }
        if (s == QpState.RESET || s == QpState.INIT || s == QpState.RTR) {
            throw new PostException(Errno.EINVAL, 0, "QP " + qpn + " is in " + QpState.name(s)
                + "; sends need RTS (or SQD/ERR)");
        }
        long head = sqPostHead;
        final long consumer = sq.doorbell().consumer();
        int index = 0;
        try {
            for (SendWorkRequest wr = first; wr != null; wr = wr.next, index++) {
                if (head - consumer >= sq.depth()) {
                    throw new PostException(Errno.ENOMEM, index, "send queue of QP " + qpn + " is full ("
                        + sq.depth() + " WQEs outstanding)");
                }
                final int total = checkSend(wr, index);
                final SoftAh ah = ud ? checkUd(wr, index, total) : null;
                final boolean inline = (wr.sendFlags & SendFlags.INLINE) != 0;
                sq.write(head, wr, inline, total, inlineSource);
                if (ah != null) {
                    sq.ud(head, ah.dlid, wr.remoteQpn, wr.remoteQkey);
                } else if (wr.opcode == WrOpcode.BIND_MW) {
                    final io.gdrkit.verbs.MwBind b = wr.bindInfo;
                    sq.bind(head, b.addr, wr.mwRkey, b.length, b.mr != null ? b.mr.lkey() : 0,
                        ((SoftMw) wr.mw).rkey >>> 8, b.mwAccessFlags);
                } else if (wr.opcode == WrOpcode.LOCAL_INV || wr.opcode == WrOpcode.SEND_WITH_INV) {
                    sq.invalidateRkey(head, wr.opcode == WrOpcode.SEND_WITH_INV, wr.invalidateRkey);
                }
                head++;
            }
        } finally {
            if (head != sqPostHead) {
                sqPostHead = head;
                CPU_DOORBELLS.setOpaque(this, cpuDoorbells + 1);
                sq.doorbell().ring(head);
                device.scan.wakeAfterPost(this);
            }
        }
    }

    /** UD rules (ibv_post_send on a UD QP): SEND only, an AH of this device, one datagram within the port's MTU. */
    private SoftAh checkUd(final SendWorkRequest wr, final int index, final int total) {
        if (state != QpState.RTS && state != QpState.SQD) {
            throw new PostException(Errno.EINVAL, index, "UD QP " + qpn + " is in " + QpState.name(state)
                + "; sends need RTS");
        }
        if (wr.opcode != WrOpcode.SEND && wr.opcode != WrOpcode.SEND_WITH_IMM) {
            throw new PostException(Errno.EINVAL, index, WrOpcode.name(wr.opcode) + " on a UD QP (SEND only)");
        }
        if (!(wr.ah instanceof SoftAh ah) || ah.pd.device() != device || ah.closed) {
            throw new PostException(Errno.EINVAL, index, "UD send without a live address handle of " + device.name());
        }
        if (total > UdEngine.MTU) {
            throw new PostException(Errno.EINVAL, index, "UD message of " + total + " bytes exceeds the path MTU "
                + UdEngine.MTU);
        }
        return ah;
    }

    private int checkSend(final SendWorkRequest wr, final int index) {
        if (!WrOpcode.isSupported(wr.opcode)) {
            throw new PostException(Errno.EINVAL, index, "opcode " + wr.opcode + " is not supported on an RC QP");
        }
        if ((wr.sendFlags & ~SendFlags.ALL) != 0) {
            throw new PostException(Errno.EINVAL, index, "unknown send flags 0x" + Integer.toHexString(wr.sendFlags));
        }
        if (wr.numSge() > cap.maxSendSge) {
            throw new PostException(Errno.EINVAL, index, "num_sge " + wr.numSge() + " > max_send_sge "
                + cap.maxSendSge);
        }
        final long total = wr.totalLength();
        if (total > Integer.MAX_VALUE) {
            throw new PostException(Errno.EINVAL, index, "message length " + total + " exceeds 2^31-1 bytes");
        }
        if ((wr.sendFlags & SendFlags.INLINE) != 0) {
            if (WrOpcode.isReadOrAtomic(wr.opcode)) {
                throw new PostException(Errno.EINVAL, index, "INLINE is only valid for SEND and WRITE, not "
                    + WrOpcode.name(wr.opcode));
            }
            if (total > cap.maxInlineData) {
                throw new PostException(Errno.EINVAL, index, "inline length " + total + " > max_inline_data "
                    + cap.maxInlineData);
            }
            for (int i = 0; i < wr.numSge(); i++) {
                final Sge sge = wr.sge(i);
                final String problem = sge.length > 0 ? device.inlineProblem(sge) : null;
                if (problem != null) {
                    throw new PostException(Errno.EINVAL, index, "inline SGE " + i + " (" + sge + ") " + problem);
                }
            }
        }
        if ((WrOpcode.isAtomic(wr.opcode) || wr.opcode == WrOpcode.ATOMIC_WRITE)
            && (wr.numSge() != 1 || wr.sge(0).length != 8)) {
            throw new PostException(Errno.EINVAL, index, "atomic operations need exactly one 8-byte SGE");
        }
        if (WrOpcode.isLocal(wr.opcode)) {
            if (wr.numSge() != 0 || (wr.sendFlags & SendFlags.INLINE) != 0) {
                throw new PostException(Errno.EINVAL, index, WrOpcode.name(wr.opcode) + " carries no SGE and no "
                    + "inline data");
            }
            if (wr.opcode == WrOpcode.BIND_MW && (!(wr.mw instanceof SoftMw mw) || mw.pd.device() != device
                || mw.type != io.gdrkit.verbs.MemoryWindow.TYPE_2 || mw.closed)) {
                throw new PostException(Errno.EINVAL, index, "IBV_WR_BIND_MW needs a live type 2 window of "
                    + device.name() + " (type 1 windows are bound with bindMw)");
            }
            if (wr.opcode == WrOpcode.BIND_MW) {
                checkBindAccess(wr.bindInfo.mwAccessFlags, index);
            }
        }
        if (wr.opcode == WrOpcode.FLUSH) {
            if (wr.numSge() != 0) {
                throw new PostException(Errno.EINVAL, index, "FLUSH carries no SGE (num_sge " + wr.numSge() + ")");
            }
            if (wr.flushType == 0 || (wr.flushType & ~(SendWorkRequest.FLUSH_GLOBAL
                | SendWorkRequest.FLUSH_PERSISTENT)) != 0) {
                throw new PostException(Errno.EINVAL, index, "FLUSH placement type " + wr.flushType
                    + " (need FLUSH_GLOBAL and/or FLUSH_PERSISTENT)");
            }
            if (wr.flushLevel != SendWorkRequest.FLUSH_RANGE && wr.flushLevel != SendWorkRequest.FLUSH_MR) {
                throw new PostException(Errno.EINVAL, index, "FLUSH selectivity " + wr.flushLevel
                    + " (need FLUSH_RANGE or FLUSH_MR)");
            }
            if (wr.flushLength < 0 || wr.flushLength > Integer.MAX_VALUE) {
                throw new PostException(Errno.EINVAL, index, "FLUSH length " + wr.flushLength + " outside 0..2^31-1");
            }
        }
        return (int) total;
    }

    @Override
    public void bindMw(final io.gdrkit.verbs.MemoryWindow window, final io.gdrkit.verbs.MwBind bind) {
        if (!(window instanceof SoftMw mw) || mw.pd.device() != device || mw.closed) {
            throw new PostException(Errno.EINVAL, 0, "ibv_bind_mw: not a live window of " + device.name());
        }
        if (mw.type != io.gdrkit.verbs.MemoryWindow.TYPE_1) {
            throw new PostException(Errno.EINVAL, 0, "ibv_bind_mw binds type 1 windows; type 2 ones are bound with "
                + "an IBV_WR_BIND_MW work request");
        }
        if (mw.pd != pd) {
            throw new PostException(Errno.EINVAL, 0, "ibv_bind_mw: the window belongs to another PD than QP " + qpn);
        }
        checkBindAccess(bind.mwAccessFlags, 0);
        final int next = (mw.rkey & ~0xFF) | ((mw.rkey + 1) & 0xFF); // ibv_inc_rkey
        final SendWorkRequest wr = new SendWorkRequest(1).opcode(WrOpcode.BIND_MW).wrId(bind.wrId)
            .flags(bind.sendFlags);
        wr.mwRkey = next;
        wr.bindInfo.range(bind.mr, bind.addr, bind.length, bind.mwAccessFlags);
        postBind(wr);
        mw.rkey = next;
    }

    /** A window grants remote access only; zero-based windows and other bits are refused. */
    private static void checkBindAccess(final int access, final int index) {
        if ((access & ~io.gdrkit.verbs.AccessFlags.ALL_REMOTE) != 0) {
            throw new PostException(Errno.EINVAL, index, "window access " + io.gdrkit.verbs.AccessFlags.describe(access)
                + " (REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC only; no zero-based windows)");
        }
    }

    /** Posts a type 1 bind (checked by bindMw, not by the type 2 rules of checkSend). */
    private void postBind(final SendWorkRequest wr) {
        final int s = state;
        if (s == QpState.RESET || s == QpState.INIT || s == QpState.RTR) {
            throw new PostException(Errno.EINVAL, 0, "QP " + qpn + " is in " + QpState.name(s)
                + "; binds need RTS (in ERR they are flushed)");
        }
        if (sqPostHead - sq.doorbell().consumer() >= sq.depth()) {
            throw new PostException(Errno.ENOMEM, 0, "send queue of QP " + qpn + " is full");
        }
        final long head = sqPostHead;
        sq.write(head, wr, false, 0, inlineSource);
        final io.gdrkit.verbs.MwBind b = wr.bindInfo;
        sq.bind(head, b.addr, wr.mwRkey, b.length, b.mr != null ? b.mr.lkey() : 0, wr.mwRkey >>> 8,
            b.mwAccessFlags);
        sqPostHead = head + 1;
        sq.doorbell().ring(sqPostHead);
        device.scan.wakeAfterPost(this);
    }

    @Override
    public void postRecv(final RecvWorkRequest first) {
        if (!RECV_POSTER.compareAndSet(this, 0, 1)) {
            throw new PostException(Errno.EBUSY, 0, "concurrent postRecv on QP " + qpn + ": a receive queue has "
                + "one poster at a time (serialize posts to a shared QP); nothing was posted");
        }
        try {
            postRecvOwned(first);
        } finally {
            RECV_POSTER.setRelease(this, 0);
        }
    }

    private void postRecvOwned(final RecvWorkRequest first) {
        final int s = state;
        if (s == QpState.RESET) {
            throw new PostException(Errno.EINVAL, 0, "QP " + qpn + " is in RESET; receives need INIT or later");
        }
        if (srq != null) {
            throw new PostException(Errno.EINVAL, 0, "QP " + qpn + " takes its receives from " + srq
                + ": post them with postSrqRecv");
        }
        long head = rqPostHead;
        final long consumer = rq.doorbell().consumer();
        int index = 0;
        try {
            for (RecvWorkRequest wr = first; wr != null; wr = wr.next, index++) {
                if (head - consumer >= rq.depth()) {
                    throw new PostException(Errno.ENOMEM, index, "receive queue of QP " + qpn + " is full ("
                        + rq.depth() + " WQEs)");
                }
                if (wr.numSge() > cap.maxRecvSge) {
                    throw new PostException(Errno.EINVAL, index, "num_sge " + wr.numSge() + " > max_recv_sge "
                        + cap.maxRecvSge);
                }
                rq.write(head, wr);
                head++;
            }
        } finally {
            if (head != rqPostHead) {
                rqPostHead = head;
                rq.doorbell().ring(head);
            }
        }
    }

    @Override
    public void close() {
        device.destroyQp(this);
    }

    @Override
    public synchronized DirectQueue direct() {
        if (direct == null) {
            direct = new Direct();
        }
        return direct;
    }

    /** The software NIC's mlx5dv-like view of this QP: the rings it already reads, handed out as memory. */
    private final class Direct implements DirectQueue {
        @Override
        public java.lang.foreign.MemorySegment sqRing() {
            return sq.ring();
        }

        @Override
        public int sqDepth() {
            return sq.depth();
        }

        @Override
        public int sqStride() {
            return sq.stride();
        }

        @Override
        public int inlineOffset() {
            return sq.inlineOffset();
        }

        @Override
        public java.lang.foreign.MemorySegment sqDoorbell() {
            return sq.doorbell().record();
        }

        @Override
        public java.lang.foreign.MemorySegment cqRing() {
            return sendCq.ring().ring();
        }

        @Override
        public int cqDepth() {
            return sendCq.ring().depth();
        }

        @Override
        public java.lang.foreign.MemorySegment cqCounters() {
            return sendCq.ring().counters().record();
        }

        @Override
        public void takeOwnership() {
            if (ud) {
                // the requester checks a direct poster's WQEs (stamp, inline length); the datagram engine does not
                throw new VerbsException(Errno.EINVAL, "QP " + qpn + " is UD; a direct queue is for RC QPs only");
            }
            for (final SoftQp other : device.activeQps) {
                if (other != SoftQp.this && (other.sendCq == sendCq || other.recvCq == sendCq)) {
                    throw new VerbsException(Errno.EINVAL, "QP " + qpn + "'s send CQ is shared with QP " + other.qpn
                        + "; a direct queue needs a CQ of its own");
                }
            }
            if (recvCq == sendCq) {
                throw new VerbsException(Errno.EINVAL, "QP " + qpn + " uses its send CQ for receives too");
            }
            if (sq.doorbell().producer() != sq.doorbell().consumer()) {
                throw new VerbsException(Errno.EBUSY, "QP " + qpn + " has WQEs outstanding");
            }
            directOwned = true;
            device.scan.wakeAfterPost(SoftQp.this); // a direct poster's doorbell is scanned from now on
        }

        @Override
        public boolean owned() {
            return directOwned;
        }

        @Override
        public long cpuDoorbells() {
            return (long) CPU_DOORBELLS.getOpaque(SoftQp.this);
        }

        @Override
        public long directDoorbells() {
            return directDoorbells;
        }

        @Override
        public long staleWqes() {
            return staleWqes;
        }

        @Override
        public void stampPickups(final boolean on) {
            if (on && path == null) {
                path = new PathStamps(); // before the flag: the responder stamps into it once it sees the flag
            }
            stampPickups = on;
        }

        @Override
        public long pathNanos(final long index, final int step) {
            final int slot = sq.slot(index);
            if (pickupIndex[slot] != index) {
                return 0; // the slot holds a later WQE: its PSNs are not this one's
            }
            final int psn = lastPsn[slot];
            if (step == PATH_ACK_TAKEN) {
                return completionIndex[slot] == index ? takenNanos[slot] : 0;
            }
            final SoftQp peer = device.peerQp(dlid, destQpn);
            final PathStamps stamps = peer == null ? null : peer.path;
            if (stamps == null || peer.destQpn != qpn || peer.dlid != device.lid()) {
                return 0;
            }
            return switch (step) {
                case PATH_PLACED -> stamps.placedNanos(psn);
                case PATH_ACK_SENT -> stamps.sentNanos(psn);
                default -> 0;
            };
        }

        @Override
        public long completionNanos(final long index) {
            final int slot = sq.slot(index);
            final long at = completionNanos[slot];
            return completionIndex[slot] == index ? at : 0;
        }

        @Override
        public long pickupNanos(final long index) {
            final int slot = sq.slot(index);
            final long at = pickupNanos[slot];
            return pickupIndex[slot] == index ? at : 0; // a later WQE in the slot: not this one's stamp
        }
    }

    /** Remembers that DMA memory was written, so the next completion is fenced for it. */
    void noteDmaWrite(final SoftMr mr) {
        if (mr.dma != null && dmaWritten != mr) {
            fenceDmaWrites(); // a different memory: fence the previous one now, so none is left unfenced
            dmaWritten = mr;
        }
    }

    /** Before a completion (ACK, receive CQE) is reported: the memory's completion fence. */
    void fenceDmaWrites() {
        if (fencing != null) {
            if ((dmaWritten == null || dmaWritten.dma != fencing.dma) && !fencing.dma.completionFenceDone(fencingToken)) {
                fencing.dma.completionFence();
            }
            fencing = null;
        }
        if (dmaWritten != null) {
            dmaWritten.dma.completionFence();
            dmaWritten = null;
        }
    }

    /**
     * The completion fence without waiting, for an ACK that may be held back: starts the fence for the DMA writes
     * made so far and answers whether it has completed. False: ask again later, the ACK must not leave yet.
     */
    boolean tryFenceDmaWrites() {
        if (dmaWritten != null) {
            if (fencing != null && fencing.dma != dmaWritten.dma && !fencing.dma.completionFenceDone(fencingToken)) {
                return false; // the earlier memory's fence first: one pending fence at a time
            }
            fencing = dmaWritten;
            fencingToken = dmaWritten.dma.completionFenceStart();
            dmaWritten = null;
        }
        if (fencing != null) {
            if (!fencing.dma.completionFenceDone(fencingToken)) {
                return false;
            }
            fencing = null;
        }
        return true;
    }

    boolean remoteAccess(final int flag) {
        return (accessFlags & flag) != 0;
    }

    boolean isSignaled(final int flags) {
        return sqSigAll || (flags & SendFlags.SIGNALED) != 0;
    }

    /** Packets a message of {@code length} bytes takes: at least one. */
    int packets(final long length) {
        return length == 0 ? 1 : (int) ((length + mtu - 1) / mtu);
    }


    @Override
    public String toString() {
        return "QP " + qpn + " (" + QpState.name(state) + ") on " + device.name();
    }

}
