package io.gdrkit.gpu;

/**
 * The round- and position-dependent byte pattern that the fill and verify kernels use (the Java kernels of the
 * simulated GPU and the PTX in {@code io/gdrkit/gpu/cuda/kernels.cu} compute the same function). A byte depends on
 * its position, the round and a seed, so stale data from an earlier round, shifted data and partial writes are all
 * detected.
 */
public final class Pattern {
    private Pattern() {
    }

    /** The expected byte at {@code index} in {@code round}: {@code (index*2654435761 + round*0x9E3779B9 + seed) >>> 24}, 32-bit. */
    public static byte at(final long index, final int round, final int seed) {
        final int h = (int) index * (int) 2654435761L + round * 0x9E3779B9 + seed;
        return (byte) (h >>> 24 ^ h >>> 8);
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
