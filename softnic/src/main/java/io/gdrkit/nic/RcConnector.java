package io.gdrkit.nic;

import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.Mtu;
import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpAttrMask;
import io.gdrkit.verbs.QpState;
import io.gdrkit.verbs.QueuePair;

/**
 * Brings two RC QPs through RESET, INIT, RTR and RTS towards each other, as an out-of-band exchange (or the
 * connection manager) would. The attributes are the template's; the peer-specific ones are filled in.
 */
public final class RcConnector {
    private RcConnector() {
    }

    /** A template with every attribute the transitions need, MTU 4096, all remote access. */
    public static QpAttr defaults() {
        return new QpAttr().pathMtu(Mtu.MTU_4096).access(AccessFlags.LOCAL_WRITE | AccessFlags.ALL_REMOTE)
            .timeout(14).retryCnt(7).rnrRetry(7).minRnrTimer(1).maxRdAtomic(16).maxDestRdAtomic(16);
    }

    public static void connect(final QueuePair a, final int lidA, final int psnA, final QueuePair b, final int lidB,
                               final int psnB, final QpAttr template) {
        bringUp(a, b.qpNum(), lidB, psnA, psnB, template);
        bringUp(b, a.qpNum(), lidA, psnB, psnA, template);
    }

    /** Moves {@code qp} to RTS towards {@code remoteQpn} at {@code dlid}; sends start at sqPsn. */
    public static void bringUp(final QueuePair qp, final int remoteQpn, final int dlid, final int sqPsn,
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
