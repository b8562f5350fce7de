package io.gdrkit.verbs;

/**
 * A completion queue (ibv_cq).
 *
 * <p>Thread safety: one poller at a time. Overlapping {@code poll} calls on one CQ fail with
 * {@link io.gdrkit.core.Errno#EBUSY} and consume nothing (never a completion handed to two threads or lost).
 */
public interface CompletionQueue extends AutoCloseable {
    int capacity();

    /**
     * Polls up to {@code wcs.length} completions into caller-owned records (ibv_poll_cq) and returns how many
     * were written. With caller-driven progress, polling also advances the NIC.
     *
     * @throws VerbsException with EIO when the CQ overflowed (see the CQ_ERR async event)
     */
    int poll(WorkCompletion[] wcs);

    int poll(WorkCompletion[] wcs, int max);

    @Override
    void close();
}
