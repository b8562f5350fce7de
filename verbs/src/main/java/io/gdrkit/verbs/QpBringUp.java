/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * Moves an RC QP through RESET, INIT and RTR to RTS towards a peer, as an out-of-band exchange (or the connection
 * manager) does once each side knows the other's QP number, LID and start PSN. Provider-neutral: only verbs calls.
 */
public final class QpBringUp {
    private QpBringUp() {
    }

    /** A template with every attribute the transitions need: MTU 4096, all remote access, 16 reads in flight. */
    public static QpAttr rcDefaults() {
        return new QpAttr().pathMtu(Mtu.MTU_4096).access(AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE)
            .timeout(14).retryCnt(7).rnrRetry(7).minRnrTimer(1).maxRdAtomic(16).maxDestRdAtomic(16);
    }

    /**
     * Brings two QPs to RTS towards each other (both ends in this process, as a loopback or a test does): {@code a}
     * at {@code lidA} sends from {@code psnA}, {@code b} at {@code lidB} from {@code psnB}.
     */
    public static void connect(final QueuePair a, final int lidA, final int psnA, final QueuePair b, final int lidB,
                               final int psnB, final QpAttr template) {
        toRts(a, b.qpNum(), lidB, psnA, psnB, template);
        toRts(b, a.qpNum(), lidA, psnB, psnA, template);
    }

    /**
     * As {@link #connect}, with a GRH in each address vector: {@code gidA}/{@code gidB} are the ports' GIDs at
     * {@code sgidIndex} ({@link VerbsContext#queryGid}). RoCE ports need this (they have no LIDs; pass LID 0).
     */
    public static void connectGlobal(final QueuePair a, final int lidA, final byte[] gidA, final int psnA,
                                     final QueuePair b, final int lidB, final byte[] gidB, final int psnB,
                                     final int sgidIndex, final QpAttr template) {
        final QpAttr ta = template.copy().grh(new GlobalRoute().dgid(gidB).sgidIndex(sgidIndex).hopLimit(1));
        final QpAttr tb = template.copy().grh(new GlobalRoute().dgid(gidA).sgidIndex(sgidIndex).hopLimit(1));
        toRts(a, b.qpNum(), lidB, psnA, psnB, ta);
        toRts(b, a.qpNum(), lidA, psnB, psnA, tb);
    }

    /**
     * Moves {@code qp} to RTS towards {@code remoteQpn} at {@code dlid}; its sends start at {@code sqPsn}, it
     * expects the peer's at {@code rqPsn}. The template's attributes are used, the peer fields filled in; a
     * non-zero software MTU is applied at RTR.
     */
    public static void toRts(final QueuePair qp, final int remoteQpn, final int dlid, final int sqPsn,
                             final int rqPsn, final QpAttr template) {
        final QpAttr a = template.copy();
        a.qpState = QpState.INIT;
        a.portNum = 1;
        a.pkeyIndex = 0;
        qp.modify(a, QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        a.qpState = QpState.RTR;
        a.destQpNum = remoteQpn;
        a.dlid = dlid;
        a.rqPsn = rqPsn;
        int rtr = QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
            | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER;
        if (a.softwareMtu != 0) {
            rtr |= QpAttrMask.SOFTWARE_MTU;
        }
        qp.modify(a, rtr);
        a.qpState = QpState.RTS;
        a.sqPsn = sqPsn;
        qp.modify(a, QpAttrMask.STATE | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
            | QpAttrMask.SQ_PSN | QpAttrMask.MAX_QP_RD_ATOMIC);
    }
}
