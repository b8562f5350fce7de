/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
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

    /** Why the shmem call failed. */
    private final Reason reason;

    /**
     * Creates an exception with a reason and a message.
     *
     * @param reason  why the shmem call failed
     * @param message what failed, naming the PE, address or size involved
     */
    public ShmemException(final Reason reason, final String message) {
        super(message);
        this.reason = reason;
    }

    /**
     * Creates an exception with a reason, a message and the failure that caused it.
     *
     * @param reason  why the shmem call failed
     * @param message what failed, naming the PE, address or size involved
     * @param cause   the underlying failure
     */
    public ShmemException(final Reason reason, final String message, final Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    /** {@return why the shmem call failed} */
    public Reason reason() {
        return reason;
    }

    @Override
    public String getMessage() {
        return reason + ": " + super.getMessage();
    }
}
