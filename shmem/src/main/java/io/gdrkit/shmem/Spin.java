/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

/**
 * A bounded spin: every wait in the library has a deadline and names what it waited for. The name is built only
 * when the deadline has passed ({@link #timeout}), never per round: a wait allocates nothing while it spins.
 */
final class Spin {
    private final long deadline;
    private int spins;

    Spin(final long timeoutNanos) {
        this.deadline = System.nanoTime() + timeoutNanos;
    }

    /** One more round of waiting; true once the deadline has passed (the caller throws {@link #timeout}). */
    boolean idle() {
        if ((++spins & 63) == 0) {
            if (System.nanoTime() - deadline > 0) {
                return true;
            }
            // SM workers, NIC threads and proxies share a few host cores: give way now and then
            Thread.yield();
        } else {
            Thread.onSpinWait();
        }
        return false;
    }

    static ShmemException timeout(final String what) {
        return new ShmemException(ShmemException.Reason.TIMEOUT, "waited too long for " + what);
    }
}
