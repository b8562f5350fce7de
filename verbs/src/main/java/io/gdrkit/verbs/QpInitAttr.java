/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** Queue pair creation attributes (ibv_qp_init_attr). */
public final class QpInitAttr {
    public CompletionQueue sendCq;
    public CompletionQueue recvCq;
    /** The shared receive queue the QP takes its receive WQEs from (ibv_qp_init_attr.srq), or null. */
    public SharedReceiveQueue srq;
    public final QpCap cap = new QpCap();
    public int qpType = QpType.RC;
    /** When true every send WR completes signaled, whatever its flags (sq_sig_all). */
    public boolean sqSigAll;

    public QpInitAttr cqs(final CompletionQueue send, final CompletionQueue recv) {
        sendCq = send;
        recvCq = recv;
        return this;
    }

    public QpInitAttr srq(final SharedReceiveQueue s) {
        srq = s;
        return this;
    }

    public QpInitAttr qpType(final int type) {
        qpType = type;
        return this;
    }

    public QpInitAttr sqSigAll(final boolean v) {
        sqSigAll = v;
        return this;
    }
}
