/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** A device context (ibv_context). Closing it releases every resource created through it. */
public interface VerbsContext extends AutoCloseable {
    Device device();

    /** Device attributes (ibv_query_device): exactly what the provider supports. */
    DeviceAttr queryDevice();

    /**
     * Port attributes (ibv_query_port).
     *
     * @throws VerbsException EINVAL for a port number the device does not have (they start at 1)
     */
    PortAttr queryPort(int port);

    /**
     * The GID at {@code index} of {@code port}'s GID table (ibv_query_gid), 16 bytes in network order: what a peer
     * puts in its address vector's {@link GlobalRoute#dgid} (RoCE needs it; its ports have no LID).
     *
     * @throws VerbsException EINVAL for a port or index the device does not have
     */
    byte[] queryGid(int port, int index);

    ProtectionDomain allocPd();

    /** Completion vectors of the device (ibv_context.num_comp_vectors). */
    default int numCompVectors() {
        return 1;
    }

    /** Creates a completion event channel (ibv_create_comp_channel). */
    CompletionChannel createCompChannel();

    /** Creates a completion queue of at least {@code cqe} entries (ibv_create_cq without a channel, vector 0). */
    default CompletionQueue createCq(final int cqe) {
        return createCq(cqe, null, 0);
    }

    /**
     * Creates a completion queue of at least {@code cqe} entries (ibv_create_cq) reporting events on
     * {@code channel} (null: none), on completion vector {@code compVector}.
     *
     * @throws VerbsException EINVAL for cqe out of 1..max_cqe, a vector out of 0..num_comp_vectors-1, or a
     *                        channel of another context or already destroyed
     */
    CompletionQueue createCq(int cqe, CompletionChannel channel, int compVector);

    /** Returns the next asynchronous event, or null when none is pending (non-blocking ibv_get_async_event). */
    AsyncEvent pollAsyncEvent();

    /**
     * Waits up to {@code timeoutNanos} for the next asynchronous event (ibv_get_async_event on a blocking fd);
     * null when none came. In the caller-driven progress modes the wait advances the device itself.
     */
    AsyncEvent getAsyncEvent(long timeoutNanos);

    /**
     * Acknowledges an event this context returned (ibv_ack_async_event). libibverbs makes a destroy wait until the
     * events of its object are acknowledged; no provider here does (docs/VERBS.md), so this is bookkeeping that
     * ported code may keep. The default accepts any event.
     *
     * @throws VerbsException EINVAL for an event this context did not return, or one already acknowledged
     */
    default void ackAsyncEvent(final AsyncEvent event) {
        if (event == null) {
            throw new VerbsException(io.gdrkit.core.Errno.EINVAL, "ibv_ack_async_event: no event (null)");
        }
    }

    @Override
    void close();
}
