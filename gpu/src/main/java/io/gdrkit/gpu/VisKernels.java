/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * The visibility experiment's consumer kernels (module {@code "kernels"}: {@code kernels.cu} on CUDA,
 * {@code SimKernels} on the simulated GPU), their result layouts, and the host side of their protocol: publishing a
 * flag and reading a round's result slot while the kernel runs.
 *
 * <p>{@code vis_verify(const u8* buf, u64 n, u32 round, u32 seed, u64* result)}, any 1-D grid: accumulates into
 * {@link #VERIFY_BYTES} of result, which the host resets with {@link #resetVerify} ([0] += bad bytes, [1] = min first
 * bad position, [2] = max(1 + position holding this round's byte), [3] += bad bytes holding the previous round's).
 *
 * <p>{@code vis_persistent_{plain,volatile,acquire}(const u32* flags, const u64* bufs, u32 senders, u64 n,
 * u32 rounds, u32 seed, u64 timeout_ns, u64* res)}: launched once; for each round r and sender s it waits for
 * {@code flags[s] >= r} (at most timeout_ns of GPU time), checks {@code bufs[s]} as vis_verify does and writes the
 * {@link #SLOT_BYTES}-byte slot {@link #slotOffset}(r, s, senders) of res, word {@link #ROUND} last, with a release
 * store. The grid must be co-resident: at most the SM count on CUDA, at most {@code SimGpuConfig.smWorkers()} blocks on
 * the simulated GPU; block b serves senders b, b + grid, ... round by round.
 */
public final class VisKernels {
    /** How thread 0 of a persistent consumer loads the flag. */
    public enum Poll {
        /** An ordinary load, which the compiler may hoist or the L1 may serve stale. */
        PLAIN("vis_persistent_plain"),
        /** {@code ld.volatile}: a fresh load each poll, no ordering. */
        VOLATILE("vis_persistent_volatile"),
        /** {@code ld.acquire.sys}: a fresh load that orders the block's later loads after it. */
        ACQUIRE("vis_persistent_acquire");

        private final String kernel;

        Poll(final String kernel) {
            this.kernel = kernel;
        }

        public String kernel() {
            return kernel;
        }
    }

    public static final String VERIFY = "vis_verify";

    /** vis_verify's result: four u64 words. */
    public static final int VERIFY_BYTES = 32;
    /** One persistent result slot: eight u64 words. */
    public static final int SLOT_BYTES = 64;

    /** Word indices of a result (vis_verify uses the first four). */
    public static final int BAD = 0;
    public static final int FIRST = 1;
    public static final int LAST = 2;
    public static final int PREV = 3;
    public static final int POLLS = 4;
    public static final int TIMED_OUT = 5;
    public static final int ROUND = 7;

    /** {@code ~0}: no bad byte (word {@link #FIRST}). */
    public static final long NONE = -1L;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN).varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN).varHandle();
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);

    private VisKernels() {
    }

    /** Byte offset of round {@code round} (1-based), sender {@code sender}'s slot in a persistent result area. */
    public static long slotOffset(final int round, final int sender, final int senders) {
        if (round < 1 || sender < 0 || sender >= senders) {
            throw new IllegalArgumentException("round " + round + ", sender " + sender + " of " + senders);
        }
        return ((long) (round - 1) * senders + sender) * SLOT_BYTES;
    }

    /** Bytes of a persistent result area for {@code rounds} rounds of {@code senders} senders. */
    public static long resultBytes(final int rounds, final int senders) {
        return (long) rounds * senders * SLOT_BYTES;
    }

    /** Resets a vis_verify result at {@code offset}: bad 0, first ~0, last 0, prev 0. */
    public static void resetVerify(final MemorySegment result, final long offset) {
        result.asSlice(offset, VERIFY_BYTES).fill((byte) 0);
        result.set(WORD, offset + 8L * FIRST, NONE);
    }

    /**
     * Publishes round {@code round} for {@code sender}: a release store of {@code flags[sender]}, so the bytes the
     * CPU wrote before are not reordered after it (the flag in pinned host memory that the receiver's CPU writes).
     */
    public static void publish(final MemorySegment flags, final int sender, final int round) {
        INT.setRelease(flags, 4L * sender, round);
    }

    /** True once the kernel has written round {@code round}'s slot of {@code sender} (an acquire load of word 7). */
    public static boolean ready(final MemorySegment res, final int round, final int sender, final int senders) {
        return (long) LONG.getAcquire(res, slotOffset(round, sender, senders) + 8L * ROUND) == round;
    }

    /** Reads a slot (call after {@link #ready}). */
    public static Slot read(final MemorySegment res, final int round, final int sender, final int senders) {
        final long at = slotOffset(round, sender, senders);
        final long published = (long) LONG.getAcquire(res, at + 8L * ROUND); // the words below are read after it
        return new Slot(published, sender, res.get(WORD, at), res.get(WORD, at + 8), res.get(WORD, at + 16),
            res.get(WORD, at + 24), res.get(WORD, at + 32), res.get(WORD, at + 40) != 0);
    }

    /** Reads a vis_verify result at {@code offset} as a slot of round {@code round}. */
    public static Slot readVerify(final MemorySegment result, final long offset, final int round) {
        return new Slot(round, 0, result.get(WORD, offset), result.get(WORD, offset + 8),
            result.get(WORD, offset + 16), result.get(WORD, offset + 24), 0, false);
    }

    /**
     * Waits (spinning, then parking) until round {@code round}'s slot of {@code sender} is written, and reads it.
     *
     * @throws GpuException {@code GDRKIT_TIMEOUT} naming the slot when {@code timeout} passes first
     */
    public static Slot await(final MemorySegment res, final int round, final int sender, final int senders,
                             final Duration timeout) {
        final long deadline = System.nanoTime() + timeout.toNanos();
        long spins = 0;
        while (!ready(res, round, sender, senders)) {
            if (System.nanoTime() - deadline > 0) {
                throw new GpuException("GDRKIT_TIMEOUT", -1, "timed out after " + timeout + " waiting for the "
                    + "persistent consumer's slot of round " + round + ", sender " + sender + " (word 7 = "
                    + res.get(WORD, slotOffset(round, sender, senders) + 8L * ROUND) + ")");
            }
            if (++spins < 10_000) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(20_000);
            }
        }
        return read(res, round, sender, senders);
    }

    /**
     * One round's result for one sender.
     *
     * @param round    the round (word 7)
     * @param bad      bytes that differ from the round's pattern
     * @param first    smallest bad position, {@link #NONE} when none
     * @param last     1 + largest position holding the round's byte, 0 when none
     * @param prev     bad bytes holding the previous round's byte
     * @param polls    flag loads thread 0 made (0 for vis_verify)
     * @param timedOut the flag was not seen within timeout_ns; then bad = n and the rest is empty
     */
    public record Slot(long round, int sender, long bad, long first, long last, long prev, long polls,
                       boolean timedOut) {
        /**
         * What the consumer saw of {@code n} bytes: {@code ok}; {@code timeout}; {@code stale} (all the previous
         * round); {@code partial} (a prefix of this round, the rest the previous round's); {@code reordered} (some
         * later bytes new while earlier ones are old); {@code corrupt} (bytes of neither round).
         */
        public String what(final long n) {
            if (timedOut) {
                return "timeout";
            }
            if (bad == 0) {
                return "ok";
            }
            if (prev != bad) {
                return "corrupt";
            }
            if (bad == n) {
                return "stale";
            }
            return Long.compareUnsigned(last, first) > 0 ? "reordered" : "partial";
        }
    }
}
