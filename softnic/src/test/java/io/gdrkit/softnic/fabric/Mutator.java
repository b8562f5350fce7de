/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

import java.util.Arrays;
import java.util.SplittableRandom;

/** The fuzz tests' seeded mutator: bit flips, edge values (big- or little-endian), truncation, extension. */
public final class Mutator {
    private static final int[] EDGES = {0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xBFFF,
        0xC000, 1 << 28};

    private Mutator() {
    }

    /** A mutated copy of {@code valid}; {@code keepLength} forbids truncation and extension. */
    public static byte[] mutate(final byte[] valid, final SplittableRandom rnd, final boolean keepLength) {
        byte[] b = valid.clone();
        final int ops = 1 + rnd.nextInt(4);
        for (int k = 0; k < ops; k++) {
            switch (rnd.nextInt(keepLength ? 3 : 5)) {
                case 0 -> b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
                case 1 -> {
                    if (b.length >= 4) {
                        final int at = rnd.nextInt(b.length - 3);
                        final int v = EDGES[rnd.nextInt(EDGES.length)];
                        final boolean big = rnd.nextBoolean();
                        for (int j = 0; j < 4; j++) {
                            b[at + j] = (byte) (v >>> (big ? 24 - 8 * j : 8 * j));
                        }
                    }
                }
                case 2 -> b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
                case 3 -> b = Arrays.copyOf(b, Math.max(1, rnd.nextInt(b.length + 1)));
                default -> {
                    final byte[] more = new byte[rnd.nextInt(64)];
                    rnd.nextBytes(more);
                    final byte[] c = Arrays.copyOf(b, b.length + more.length);
                    System.arraycopy(more, 0, c, b.length, more.length);
                    b = c;
                }
            }
        }
        return b;
    }
}
