/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

/**
 * A GPU or RDMA device the command line asked for is not on this host: one line and
 * {@link Main#EXIT_NO_HARDWARE}, before the command prints anything.
 */
final class HardwareAbsentException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    HardwareAbsentException(final String message) {
        super(message);
    }
}
