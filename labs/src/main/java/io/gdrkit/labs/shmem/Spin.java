package io.gdrkit.labs.shmem;

/** A bounded spin: every wait in the library has a deadline and names what it waited for. */
final class Spin {
    private final long deadline;
    private int spins;

    Spin(final long timeoutNanos) {
        this.deadline = System.nanoTime() + timeoutNanos;
    }

    /** One more round of waiting for {@code what}; throws TIMEOUT once the deadline passed. */
    void idle(final String what) {
        if ((++spins & 63) == 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new ShmemException(ShmemException.Reason.TIMEOUT, "waited too long for " + what);
            }
            // SM workers, NIC threads and proxies share a few host cores: give way now and then
            Thread.yield();
        } else {
            Thread.onSpinWait();
        }
    }
}
