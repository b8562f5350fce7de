/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapException;
import java.time.Duration;

/**
 * How a communicator's waits behave: it backs off while nothing moves (spin, then yield, then park briefly), asks
 * the bootstrap at most once a millisecond whether another rank failed, and gives up at the deadline naming what it
 * waited for. A busy-spinning rank on a shared or oversubscribed host would take the CPU its peer needs to make the
 * progress it waits for; the NIC's backstop thread keeps it answering while parked.
 */
final class Pacer {
    /** Rounds of yielding after the spins, before parking. */
    static final int YIELD_ROUNDS = 100;

    private final Bootstrap bootstrap;
    private final int rank;
    private final long timeoutMillis;
    /**
     * Idle rounds (polls that moved nothing) spent spinning before yielding ({@code gdrkit.coll.spin.rounds}): the
     * rank's own polling is what moves its NIC, and the peer is often one hop away.
     */
    final int spins;
    /** gdrkit.coll.spin.pause: whether an idle poll runs Thread.onSpinWait (PAUSE on x86). */
    private final boolean spinPause;
    private final int yields;
    private long lastCheck;

    Pacer(final Bootstrap bootstrap, final int rank, final Duration timeout, final int spins,
          final boolean spinPause) {
        this.bootstrap = bootstrap;
        this.rank = rank;
        this.timeoutMillis = timeout.toMillis();
        this.spins = spins;
        this.spinPause = spinPause;
        this.yields = spins + YIELD_ROUNDS;
    }

    /** The idle rounds after which a wait parks: for waits that should yield at once (setup). */
    int yields() {
        return yields;
    }

    /** Whether a wait is due for {@link #check}: so callers build its message only when it is used. */
    boolean due(final long deadline) {
        final long now = System.nanoTime();
        return now - lastCheck > 1_000_000 || now > deadline;
    }

    /**
     * Asks the bootstrap whether another rank failed (at most once a millisecond) and fails past the deadline.
     *
     * @throws CollException naming {@code what} this rank waited for
     */
    void check(final long deadline, final String what) {
        final long now = System.nanoTime();
        if (now - lastCheck > 1_000_000) {
            lastCheck = now;
            try {
                bootstrap.check();
            } catch (final BootstrapException e) {
                throw new CollException("rank " + rank + " stopped waiting for " + what + ": " + e.getMessage(), e);
            }
        }
        if (now > deadline) {
            throw new CollException("rank " + rank + " waited " + timeoutMillis + " ms for " + what);
        }
    }

    /** Backs off after {@code idleRounds} polls that moved nothing. */
    void idle(final int idleRounds) {
        if (idleRounds < spins) {
            if (spinPause) {
                Thread.onSpinWait();
            }
        } else if (idleRounds < yields) {
            Thread.yield();
        } else {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000);
        }
    }
}
