/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * A shared receive queue (ibv_srq, from {@link ProtectionDomain#createSrq(SrqInitAttr)}): receive WQEs that every
 * QP created with it ({@link QpInitAttr#srq}) consumes, in posting order.
 */
public interface SharedReceiveQueue extends AutoCloseable {
    /**
     * Changes the limit (ibv_modify_srq with IBV_SRQ_LIMIT): with {@code limit > 0} the SRQ is armed and raises one
     * SRQ_LIMIT_REACHED async event when fewer than {@code limit} WQEs remain. Resizing (IBV_SRQ_MAX_WR) is not
     * supported.
     *
     * @throws VerbsException EINVAL for a mask other than {@link SrqAttr#LIMIT}, or a limit above max_wr
     */
    void modifySrq(SrqAttr attr, int attrMask);

    /** The current attributes (ibv_query_srq): max_wr, max_sge and the armed limit (0 when not armed). */
    SrqAttr querySrq();

    /**
     * Posts a chain of receive work requests (ibv_post_srq_recv).
     *
     * @throws PostException ENOMEM when the SRQ is full, EINVAL for too many SGEs, naming the first WR not posted
     */
    void postSrqRecv(RecvWorkRequest wr);

    /**
     * Destroys the SRQ (ibv_destroy_srq).
     *
     * @throws VerbsException EBUSY while a QP uses it
     */
    @Override
    void close();
}
