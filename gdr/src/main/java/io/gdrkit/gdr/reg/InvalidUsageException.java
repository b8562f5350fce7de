/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

/**
 * The caller broke the API contract: NCCL's {@code ncclInvalidUsage} result. Thrown, for example, when a
 * handle is deregistered that the communicator does not hold (stale or foreign).
 */
public final class InvalidUsageException extends RuntimeException {
    /** NCCL's name for this result. */
    public static final String RESULT = "ncclInvalidUsage";

    public InvalidUsageException(final String message) {
        super(RESULT + ": " + message);
    }

    /** The NCCL result name this stands for. */
    public String result() {
        return RESULT;
    }
}
