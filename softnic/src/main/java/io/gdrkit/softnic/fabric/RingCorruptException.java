/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

/**
 * A ring shared with another process holds something no correct producer writes (a record longer than the ring
 * allows, a padding record of the wrong size, a tail behind the head or too far ahead), or its file is not what
 * it must be. The link is then unusable: the port stops reading it, counts it, and its peer's traffic ends in the
 * retry error. Never a hang and never a read outside the ring.
 */
public final class RingCorruptException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public RingCorruptException(final String message) {
        super(message);
    }
}
