/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

/**
 * A unit of work that is stepped, never blocks, and reports how much it did. Engines (the NIC's requester,
 * responder, completer ...) are agents; they are driven by the caller's polling, by an {@link AgentRunner} thread,
 * or by a {@link DeterministicRunner}.
 */
public interface Agent {
    /** Does a bounded amount of work; returns 0 when there was nothing to do. */
    int doWork();

    String roleName();

    default void onClose() {
    }
}
