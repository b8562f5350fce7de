/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/** Runs one agent on a dedicated thread with an idle strategy until closed. */
public final class AgentRunner implements AutoCloseable {
    private final Agent agent;
    private final IdleStrategy idle;
    private final Thread thread;
    private volatile boolean running = true;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    public AgentRunner(final Agent agent, final IdleStrategy idle) {
        this.agent = agent;
        this.idle = idle;
        this.thread = Thread.ofPlatform().daemon(true).name("gdrkit-" + agent.roleName()).unstarted(this::run);
    }

    public AgentRunner start() {
        thread.start();
        return this;
    }

    private void run() {
        try {
            while (running) {
                idle.idle(agent.doWork());
            }
        } catch (final Throwable t) {
            failure.set(t);
            System.err.println("gdrkit: agent " + agent.roleName() + " failed: " + t);
            t.printStackTrace();
        }
    }

    /** The error that stopped the agent's thread, or null. */
    public Throwable failure() {
        return failure.get();
    }

    public Thread thread() {
        return thread;
    }

    @Override
    public void close() {
        running = false;
        try {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            throw new IllegalStateException("agent thread " + thread.getName() + " did not stop within 10 s");
        }
        agent.onClose();
    }
}
