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
    /**
     * Rounds of yielding before parking when this host's spinning threads outnumber its processors (a few hundred
     * milliseconds of yields at most): a parked rank is woken by its timer, and on a host where every CPU has a
     * runnable rank the woken one waits for a turn behind them (parks of 20 µs measured at about 260 µs each, 4 ranks
     * on 2 cores), where a yielding rank is back as soon as the peer sharing its CPU yields (Open MPI's ranks yield
     * and never park when oversubscribed). 4 ranks on 2 cores, 20 calls per size, median of 5 runs: 8 B 9.2 µs with
     * 100 yields before parking, 3.6 with this; 256 KiB 326 and 217.
     */
    static final int OVERSUBSCRIBED_YIELD_ROUNDS = 200_000;

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

    /** Waits spin {@code spins} idle polls, then yield {@code yieldRounds} times, then park. */
    Pacer(final Bootstrap bootstrap, final int rank, final Duration timeout, final int spins,
          final boolean spinPause, final int yieldRounds) {
        this.bootstrap = bootstrap;
        this.rank = rank;
        this.timeoutMillis = timeout.toMillis();
        this.spins = spins;
        this.spinPause = spinPause;
        this.yields = (int) Math.min(Integer.MAX_VALUE, (long) spins + yieldRounds);
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
