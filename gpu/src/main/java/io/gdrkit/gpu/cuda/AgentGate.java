/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import io.gdrkit.gpu.GpuException;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The delivery agents of one CUDA device in this process. Every {@link CudaGpu} of a device ordinal uses the
 * device's primary context, and a CUDA call that waits for every running kernel of the context (freeing, allocating
 * or registering memory, loading a module) would wait forever for any of their agents, not only its own: two PEs of
 * one process on one GPU each have an agent. A {@link #hold} pauses every agent of the device and keeps them from
 * starting until it is closed.
 *
 * <p>No lock order to get wrong: a hold pauses its caller's own agent first (under the caller's staging lock, which
 * the caller may already hold), then each other agent under that agent's staging lock, taken with {@code tryLock} and
 * given up as soon as the agent is seen stopped; an agent that is about to start announces it ({@link #enterStart})
 * and backs off while any hold is in progress, without needing anyone else's lock. Every wait is bounded by the
 * agents' stall time and then a named {@code GDRKIT_AGENT_STALLED}.
 */
final class AgentGate {
    private static final ConcurrentHashMap<Integer, AgentGate> BY_ORDINAL = new ConcurrentHashMap<>();

    private final int ordinal;
    private final AtomicInteger holds = new AtomicInteger();
    private final CopyOnWriteArrayList<NicStaging> members = new CopyOnWriteArrayList<>();

    private AgentGate(final int ordinal) {
        this.ordinal = ordinal;
    }

    static AgentGate of(final int ordinal) {
        return BY_ORDINAL.computeIfAbsent(ordinal, AgentGate::new);
    }

    void join(final NicStaging s) {
        members.addIfAbsent(s);
    }

    void leave(final NicStaging s) {
        members.remove(s);
    }

    /** A hold in progress; {@link #close} ends it (no exception). */
    interface Hold extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Pauses every agent of this device, {@code own}'s first, and keeps them stopped until the returned hold is
     * closed: for a CUDA call that waits for every running kernel.
     *
     * @throws GpuException GDRKIT_AGENT_STALLED when an agent could not be paused within {@code stallNanos}
     */
    Hold hold(final NicStaging own, final long stallNanos) {
        holds.incrementAndGet(); // from here no agent of this device starts (see enterStart)
        try {
            final long deadline = System.nanoTime() + stallNanos;
            own.pauseForGate(deadline);
            for (final NicStaging s : members) {
                if (s != own) {
                    s.pauseForGate(deadline);
                }
            }
        } catch (final RuntimeException e) {
            holds.decrementAndGet();
            throw e;
        }
        return holds::decrementAndGet;
    }

    /**
     * Called by an agent about to launch (its staging lock held): true when it may, and then it must call
     * {@link #leaveStart} once launched; false while a hold is in progress (then it waits and asks again).
     */
    boolean enterStart(final CudaAgent a) {
        a.starting = true; // volatile, as holds: a hold that began before this is seen below, or it sees this
        if (holds.get() == 0) {
            return true;
        }
        a.starting = false;
        return false;
    }

    void leaveStart(final CudaAgent a) {
        a.starting = false;
    }

    static GpuException stalled(final int ordinal, final String what, final long stallNanos) {
        return new GpuException("GDRKIT_AGENT_STALLED", -1, what + " on CUDA device " + ordinal + " within "
            + stallNanos / 1_000_000 + " ms");
    }

    int ordinal() {
        return ordinal;
    }
}
