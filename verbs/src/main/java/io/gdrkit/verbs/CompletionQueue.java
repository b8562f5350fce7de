/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
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
     * were written. A null entry is filled with a new record on first use, so {@code new WorkCompletion[n]} works
     * ({@link WorkCompletion#array(int)} preallocates, for a loop that must not allocate). With caller-driven
     * progress, polling also advances the NIC.
     *
     * @throws VerbsException with EIO when the CQ overflowed (see the CQ_ERR async event)
     */
    int poll(WorkCompletion[] wcs);

    int poll(WorkCompletion[] wcs, int max);

    /**
     * Arms the CQ for one completion event on its channel (ibv_req_notify_cq): the next completion added after
     * this call, or with {@code solicitedOnly} the next solicited receive completion or any error completion (as
     * the IB spec says), raises one event; then the CQ is disarmed until armed again. Completions already in the CQ
     * raise nothing: poll them after arming, as libibverbs' users do.
     *
     * @throws VerbsException EINVAL when the CQ has no completion channel
     */
    void reqNotifyCq(boolean solicitedOnly);

    /**
     * Acknowledges {@code n} events returned by {@link CompletionChannel#getCqEvent} for this CQ
     * (ibv_ack_cq_events).
     *
     * @throws VerbsException EINVAL when {@code n} is negative or more than the unacknowledged events
     */
    void ackCqEvents(int n);

    /** The CQ's completion channel, or null. */
    CompletionChannel channel();

    /** The completion vector given at creation (0..{@link VerbsContext#numCompVectors()}-1). */
    int compVector();

    /**
     * Destroys the CQ (ibv_destroy_cq).
     *
     * @throws VerbsException EBUSY while a QP or SRQ uses it, or while events of it are unacknowledged (libibverbs
     *                        would block forever there; a named error is better than a hang)
     */
    @Override
    void close();
}
