package io.gdrkit.softnic;

import io.gdrkit.verbs.QpAttr;
import io.gdrkit.verbs.QpBringUp;
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
        return QpBringUp.rcDefaults();
    }

    public static void connect(final QueuePair a, final int lidA, final int psnA, final QueuePair b, final int lidB,
                               final int psnB, final QpAttr template) {
        bringUp(a, b.qpNum(), lidB, psnA, psnB, template);
        bringUp(b, a.qpNum(), lidA, psnB, psnA, template);
    }

    /** Moves {@code qp} to RTS towards {@code remoteQpn} at {@code dlid}; sends start at sqPsn. */
    public static void bringUp(final QueuePair qp, final int remoteQpn, final int dlid, final int sqPsn,
                               final int rqPsn, final QpAttr template) {
        QpBringUp.toRts(qp, remoteQpn, dlid, sqPsn, rqPsn, template);
    }
}
