package io.gdrkit.shmem;

/** A named shmem failure: bad input from a host or device call, a timed-out wait, or a failed operation. */
public final class ShmemException extends RuntimeException {
    /** What went wrong; the name is what tools print. */
    public enum Reason {
        /** An address (heap offset) outside the symmetric heap's user part. */
        ADDRESS_OUT_OF_HEAP,
        /** A PE number outside [0, nPes). */
        PE_OUT_OF_RANGE,
        /** The symmetric heap has no room for the allocation. */
        HEAP_EXHAUSTED,
        /** PEs called a collective (malloc, free) with different arguments. */
        NOT_COLLECTIVE,
        /** A bad argument (size, alignment, operator). */
        BAD_ARGUMENT,
        /** A wait ran past its timeout; the message says what it waited for. */
        TIMEOUT,
        /** The NIC completed an operation with an error status. */
        OPERATION_FAILED,
        /** The NIC refused a WQE that was not all there when the doorbell rang (the fence was left out). */
        STALE_WQE,
        /** A peer PE went away (its bootstrap connection or its NIC). */
        PE_DEAD
    }

    private final Reason reason;

    public ShmemException(final Reason reason, final String message) {
        super(message);
        this.reason = reason;
    }

    public ShmemException(final Reason reason, final String message, final Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }

    @Override
    public String getMessage() {
        return reason + ": " + super.getMessage();
    }
}
