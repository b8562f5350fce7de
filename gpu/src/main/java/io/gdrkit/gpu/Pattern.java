/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

/**
 * The round- and position-dependent byte pattern that the fill and verify kernels use (the Java kernels of the
 * simulated GPU and the PTX in {@code io/gdrkit/gpu/cuda/kernels.cu} compute the same function). A byte depends on
 * its position, the round and a seed, so stale data from an earlier round (always), shifted data and partial writes
 * are detected.
 */
public final class Pattern {
    private Pattern() {
    }

    /**
     * The expected byte at {@code index} in {@code round}, in 32-bit unsigned arithmetic:
     * {@code m = index*2654435761 + seed; m ^= m >> 16; byte = (m >> 8) + round*157}. The position part is a hash;
     * the round part is added, and 157 is odd, so two rounds less than 256 apart differ in <em>every</em> byte: a
     * stale byte is always detected.
     */
    public static byte at(final long index, final int round, final int seed) {
        int m = (int) index * (int) 2654435761L + seed;
        m ^= m >>> 16;
        return (byte) ((m >>> 8) + round * 157);
    }

    /** Fills {@code len} bytes of a host segment starting at position {@code firstIndex}. */
    public static void fill(final java.lang.foreign.MemorySegment dst, final long dstOff, final long len,
                            final long firstIndex, final int round, final int seed) {
        for (long i = 0; i < len; i++) {
            dst.set(java.lang.foreign.ValueLayout.JAVA_BYTE, dstOff + i, at(firstIndex + i, round, seed));
        }
    }

    /** Index of the first byte that differs from the pattern, or -1. */
    public static long firstMismatch(final java.lang.foreign.MemorySegment src, final long srcOff, final long len,
                                     final long firstIndex, final int round, final int seed) {
        for (long i = 0; i < len; i++) {
            if (src.get(java.lang.foreign.ValueLayout.JAVA_BYTE, srcOff + i) != at(firstIndex + i, round, seed)) {
                return i;
            }
        }
        return -1;
    }
}
