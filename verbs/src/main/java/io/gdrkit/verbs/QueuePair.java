/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * A queue pair (ibv_qp).
 *
 * <p>Thread safety: a QP's send queue has one poster at a time and its receive queue has one poster at a time
 * (they may be two different threads). This is the rings' single-writer rule; the software NIC enforces it: a
 * {@link #postSend} that overlaps another {@code postSend} on the same QP (or {@link #postRecv} with
 * {@code postRecv}) fails with {@link io.gdrkit.core.Errno#EBUSY} and posts nothing, so concurrent use is never
 * silent loss. (A native libibverbs provider locks inside the library instead.) Portable code serializes the
 * posts of threads that share a QP (a lock, or one posting thread).
 * {@link #modify} and {@link #query} may be called from any thread.
 */
public interface QueuePair extends AutoCloseable {
    int qpNum();

    int qpType();

    int state();

    /**
     * Modifies attributes (ibv_modify_qp). An invalid transition, a missing required attribute, an attribute
     * not allowed in the transition or an out-of-range value is rejected with EINVAL and nothing changes.
     */
    void modify(QpAttr attr, int attrMask);

    /**
     * Current attributes (ibv_query_qp): state, access flags, path MTU, destination, PSNs, timers, read/atomic
     * depths and the capabilities the QP was created with (its queues' real depths).
     */
    QpAttr queryQp();

    /**
     * Posts a chain of send work requests (ibv_post_send): each is written as a WQE into the send queue ring,
     * then the doorbell is rung once.
     *
     * @throws PostException naming the first work request not posted
     */
    void postSend(SendWorkRequest wr);

    /**
     * Binds a type 1 memory window (ibv_bind_mw): posts a BIND_MW work request on the send queue with the window's
     * next rkey, which {@link MemoryWindow#rkey()} returns from now on (as libibverbs sets mw->rkey). The bind
     * happens in order with the WRs before it and completes as {@link WcOpcode#BIND_MW}; a bad bind completes with
     * MW_BIND_ERR and moves the QP to ERR.
     *
     * @throws PostException EINVAL for a type 2 window, one of another PD or device, or a QP not in RTS
     */
    default void bindMw(final MemoryWindow mw, final MwBind bind) {
        throw new PostException(io.gdrkit.core.Errno.EOPNOTSUPP, 0, "this provider has no memory windows");
    }

    /**
     * Posts a chain of receive work requests (ibv_post_recv).
     *
     * @throws PostException EINVAL on a QP in RESET or attached to an SRQ (post to the SRQ), ENOMEM when full
     */
    void postRecv(RecvWorkRequest wr);

    /**
     * Direct access to the send queue and send CQ memory (IBGDA), or EOPNOTSUPP when the provider has none (a real
     * NIC through libibverbs: mlx5dv is not wrapped).
     */
    default DirectQueue direct() {
        throw new VerbsException(io.gdrkit.core.Errno.EOPNOTSUPP, "this provider gives no direct queue access");
    }

    @Override
    void close();
}
