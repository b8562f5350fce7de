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

    /** Current attributes (ibv_query_qp). */
    QpAttr query();

    /**
     * Posts a chain of send work requests (ibv_post_send): each is written as a WQE into the send queue ring,
     * then the doorbell is rung once.
     *
     * @throws PostException naming the first work request not posted
     */
    void postSend(SendWorkRequest wr);

    /** Posts a chain of receive work requests (ibv_post_recv). */
    void postRecv(RecvWorkRequest wr);

    @Override
    void close();
}
