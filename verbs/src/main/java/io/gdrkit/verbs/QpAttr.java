/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * Queue pair attributes (ibv_qp_attr) for {@link QueuePair#modify}; which fields apply is given by a
 * {@link QpAttrMask} mask. The address vector ({@link QpAttrMask#AV}) is the destination LID, the service level
 * and, with {@link #isGlobal}, a global route ({@link #grh}): RoCE needs it (its ports have no LIDs), IB uses it
 * across subnets.
 */
public final class QpAttr {
    public int qpState;
    public int curQpState;
    public int pathMtu = Mtu.MTU_4096;
    /** Software path MTU in bytes (gdrkit extension, {@link QpAttrMask#SOFTWARE_MTU}); 0 = use pathMtu. */
    public int softwareMtu;
    public int qpAccessFlags;
    public int rqPsn;
    public int sqPsn;
    public int destQpNum;
    public int pkeyIndex;
    public int portNum = 1;
    /** Local ACK timeout exponent: 4.096 us * 2^timeout; 0 = infinite. */
    public int timeout = 14;
    public int retryCnt = 7;
    /** 7 = retry forever on RNR NAK. */
    public int rnrRetry = 7;
    /** Encoded min RNR timer (IB spec table, 0..31). */
    public int minRnrTimer = 12;
    public int maxRdAtomic = 1;
    public int maxDestRdAtomic = 1;
    /** Destination LID of the address vector (ah_attr.dlid). */
    public int dlid;
    /** ah_attr.sl: the service level. */
    public int sl;
    /** ah_attr.is_global: the address vector carries {@link #grh} (required on RoCE). */
    public boolean isGlobal;
    /** ah_attr.grh: read only when {@link #isGlobal}. */
    public final GlobalRoute grh = new GlobalRoute();
    /** The UD QP's Q_Key ({@link QpAttrMask#QKEY}). */
    public int qkey;
    public final QpCap cap = new QpCap();

    public QpAttr qkey(final int k) {
        qkey = k;
        return this;
    }

    public QpAttr state(final int s) {
        qpState = s;
        return this;
    }

    public QpAttr pathMtu(final int m) {
        pathMtu = m;
        return this;
    }

    public QpAttr softwareMtu(final int bytes) {
        softwareMtu = bytes;
        return this;
    }

    public QpAttr access(final int flags) {
        qpAccessFlags = flags;
        return this;
    }

    public QpAttr rqPsn(final int psn) {
        rqPsn = psn;
        return this;
    }

    public QpAttr sqPsn(final int psn) {
        sqPsn = psn;
        return this;
    }

    public QpAttr destQpNum(final int qpn) {
        destQpNum = qpn;
        return this;
    }

    public QpAttr port(final int port) {
        portNum = port;
        return this;
    }

    public QpAttr timeout(final int t) {
        timeout = t;
        return this;
    }

    public QpAttr retryCnt(final int c) {
        retryCnt = c;
        return this;
    }

    public QpAttr rnrRetry(final int c) {
        rnrRetry = c;
        return this;
    }

    public QpAttr minRnrTimer(final int t) {
        minRnrTimer = t;
        return this;
    }

    public QpAttr maxRdAtomic(final int n) {
        maxRdAtomic = n;
        return this;
    }

    public QpAttr maxDestRdAtomic(final int n) {
        maxDestRdAtomic = n;
        return this;
    }

    public QpAttr dlid(final int lid) {
        dlid = lid;
        return this;
    }

    /** Sets is_global and copies {@code route} into {@link #grh}. */
    public QpAttr grh(final GlobalRoute route) {
        isGlobal = true;
        grh.set(route);
        return this;
    }

    public QpAttr sl(final int v) {
        sl = v;
        return this;
    }

    public QpAttr copy() {
        final QpAttr a = new QpAttr();
        a.qpState = qpState;
        a.curQpState = curQpState;
        a.pathMtu = pathMtu;
        a.softwareMtu = softwareMtu;
        a.qpAccessFlags = qpAccessFlags;
        a.rqPsn = rqPsn;
        a.sqPsn = sqPsn;
        a.destQpNum = destQpNum;
        a.pkeyIndex = pkeyIndex;
        a.portNum = portNum;
        a.timeout = timeout;
        a.retryCnt = retryCnt;
        a.rnrRetry = rnrRetry;
        a.minRnrTimer = minRnrTimer;
        a.maxRdAtomic = maxRdAtomic;
        a.maxDestRdAtomic = maxDestRdAtomic;
        a.dlid = dlid;
        a.qkey = qkey;
        a.sl = sl;
        a.isGlobal = isGlobal;
        a.grh.set(grh);
        a.cap.maxSendWr(cap.maxSendWr).maxRecvWr(cap.maxRecvWr).maxSendSge(cap.maxSendSge)
            .maxRecvSge(cap.maxRecvSge).maxInlineData(cap.maxInlineData);
        return a;
    }
}
