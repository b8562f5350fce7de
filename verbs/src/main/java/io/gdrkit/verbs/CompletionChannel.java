/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * A completion event channel (ibv_comp_channel, from {@link VerbsContext#createCompChannel()}): CQs created on it
 * report here once each time they were {@linkplain CompletionQueue#reqNotifyCq(boolean) armed} and a completion
 * (of the armed kind) arrived.
 */
public interface CompletionChannel extends AutoCloseable {
    /**
     * Waits up to {@code timeoutNanos} for the next completion event and returns its CQ (ibv_get_cq_event), or
     * null when none came in time (0: do not wait, like a non-blocking channel's EAGAIN). Each event returned must
     * be acknowledged with {@link CompletionQueue#ackCqEvents(int)}. The wait never needs another thread to move
     * the NIC: in the caller-driven progress modes it advances the NICs of its CQs itself.
     *
     * @throws VerbsException EBADF when the channel was destroyed
     */
    CompletionQueue getCqEvent(long timeoutNanos);

    /**
     * Destroys the channel (ibv_destroy_comp_channel).
     *
     * @throws VerbsException EBUSY while a CQ still uses it
     */
    @Override
    void close();
}
