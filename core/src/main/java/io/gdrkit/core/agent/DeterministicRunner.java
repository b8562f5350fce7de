/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.agent;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.BooleanSupplier;

/**
 * Steps a set of agents on the calling thread in an order drawn from a seeded RNG, with virtual time: each step
 * advances the {@link ManualClock} by {@code tickNanos}, and when a whole round finds no work the clock jumps by
 * {@code idleJumpNanos} so timers fire without waiting. The same seed replays the same interleaving.
 */
public final class DeterministicRunner {
    private final List<Agent> agents = new ArrayList<>();
    private final SplittableRandom random;
    private final ManualClock clock;
    private final long tickNanos;
    private final long idleJumpNanos;
    private final long seed;
    private long steps;

    public DeterministicRunner(final long seed, final ManualClock clock, final long tickNanos,
                               final long idleJumpNanos) {
        this.seed = seed;
        this.random = new SplittableRandom(seed);
        this.clock = clock;
        this.tickNanos = tickNanos;
        this.idleJumpNanos = idleJumpNanos;
    }

    public DeterministicRunner add(final Agent agent) {
        agents.add(agent);
        return this;
    }

    public long seed() {
        return seed;
    }

    public long steps() {
        return steps;
    }

    public ManualClock clock() {
        return clock;
    }

    /** One round: every agent once, in a seeded random order. Returns the work done. */
    public int round() {
        final int n = agents.size();
        final int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            final int j = random.nextInt(i + 1);
            final int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        int work = 0;
        for (final int i : order) {
            // a seeded coin decides whether this agent is skipped in this round: that is what lets
            // one side run ahead of the other and exposes interleavings
            if (random.nextInt(8) == 0) {
                continue;
            }
            work += agents.get(i).doWork();
            steps++;
            clock.advance(tickNanos);
        }
        if (work == 0) {
            clock.advance(idleJumpNanos);
        }
        return work;
    }

    /**
     * Runs rounds until {@code done} is true.
     *
     * @throws IllegalStateException after {@code maxRounds}, naming what it waited for and the seed
     */
    public void runUntil(final BooleanSupplier done, final long maxRounds, final String waitingFor) {
        for (long r = 0; r < maxRounds; r++) {
            if (done.getAsBoolean()) {
                return;
            }
            round();
        }
        if (!done.getAsBoolean()) {
            throw new IllegalStateException("deterministic run (seed " + seed + ") gave up after " + maxRounds
                + " rounds waiting for " + waitingFor);
        }
    }
}
