/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.wire;

/** 24-bit packet sequence number arithmetic: everything wraps modulo 2^24. */
public final class Psn {
    public static final int MASK = 0xFFFFFF;

    private Psn() {
    }

    public static int add(final int psn, final int n) {
        return (psn + n) & MASK;
    }

    /** Signed distance a - b in the 24-bit circle: negative when a is before b (within 2^23). */
    public static int diff(final int a, final int b) {
        return ((a - b) << 8) >> 8;
    }
}
