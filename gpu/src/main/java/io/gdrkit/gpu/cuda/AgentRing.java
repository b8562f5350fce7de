/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The delivery agent's descriptor ring: a flyweight over pinned, device-mapped host memory that the NIC writes and
 * the agent kernel ({@code agent.cu}, {@code nic_agent}) reads, and whose completion words the agent writes and the
 * NIC polls, with no CUDA call either way. One writer (the NIC under {@link NicStaging}'s lock); no allocation after
 * construction. Little-endian; the offsets are {@code agent.cu}'s.
 *
 * <pre>
 *  0         8        12       16        24         32                      64
 *  +---------+--------+--------+---------+----------+-----------------------+
 *  | magic   | slots  | blocks | fault   | ce_done  | reserved              |  header (64 B)
 *  +---------+--------+--------+---------+----------+-----------------------+
 *  | done[0] | done[1] | ...                                 | done[slots-1] |  completion words, u64 each:
 *  +---------+---------+-----------------------------------------------------+  the seq last completed in the slot
 *  | seq u64 | dst u64 | src u64 | len u32 | flags u32 | ce_wait u64 | 24 B  |  descriptor 0 (64 B)
 *  | ...                                                                     |  descriptor slots-1
 *  +-------------------------------------------------------------------------+
 * </pre>
 *
 * <p>Sequence numbers start at 1; descriptor {@code seq} lives in slot {@code (seq - 1) % slots} ({@code slots} a
 * power of two). The NIC writes a descriptor's fields, then its {@code seq} with release semantics: the agent reads
 * {@code seq} with acquire and only then the fields. A slot is rewritten only after its completion word shows the
 * seq one lap earlier, so before its turn a slot holds 0 or that seq, and its completion word holds 0 or a seq of the
 * same slot no newer than the last posted: anything else is corrupt. {@code fault} is written by the agent when it
 * refuses a descriptor (code in the top byte, the seq below); {@code ce_done} by the copy engine's stream
 * ({@code cuStreamWriteValue64}) behind each large copy, so the agent and the NIC see those complete too.
 */
public final class AgentRing {
    /** "GDRAGNT1" in little-endian order: the header's first word. */
    public static final long MAGIC = 0x31544e4741524447L;
    public static final int HEADER = 64;
    public static final int DESC = 64;
    /** Wait until every earlier descriptor is complete before copying (a flag after its data). */
    public static final int FENCE = 1;
    /** Complete, then end the kernel. */
    public static final int STOP = 2;
    /** Wait until {@code ce_done} reaches the descriptor's {@code ce_wait} (a large copy posted before it). */
    public static final int WAIT_CE = 4;
    /** Fault codes (the top byte of {@code fault}): a descriptor's seq was out of place, or its fields invalid. */
    public static final int FAULT_BAD_SEQ = 1;
    public static final int FAULT_BAD_DESC = 2;

    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG;
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT;
    private static final VarHandle LONG_AT = U64.varHandle();

    private final MemorySegment seg;
    private final int slots;
    private final long descBase;

    /** Bytes of a ring of {@code slots} descriptors. */
    public static long bytes(final int slots) {
        return HEADER + 8L * slots + (long) DESC * slots;
    }

    /**
     * A ring over {@code seg}, cleared and with its header written.
     *
     * @throws IllegalArgumentException unless {@code slots} is a power of two from 2 and {@code seg} holds the ring
     */
    public AgentRing(final MemorySegment seg, final int slots, final int blocks) {
        if (slots < 2 || Integer.bitCount(slots) != 1 || seg.byteSize() < bytes(slots) || (seg.address() & 63) != 0) {
            throw new IllegalArgumentException("an agent ring needs a power-of-two slot count >= 2 and "
                + bytes(slots) + " bytes aligned to 64, not " + slots + " slots in " + seg);
        }
        this.seg = seg;
        this.slots = slots;
        this.descBase = HEADER + 8L * slots;
        seg.asSlice(0, bytes(slots)).fill((byte) 0);
        seg.set(U32, 8, slots);
        seg.set(U32, 12, blocks);
        LONG_AT.setRelease(seg, 0L, MAGIC);
    }

    public int slots() {
        return slots;
    }

    /** The memory under the ring (for tests and the test double). */
    public MemorySegment segment() {
        return seg;
    }

    /** The slot of {@code seq}. */
    public int slot(final long seq) {
        return (int) ((seq - 1) & (slots - 1));
    }

    /** Writes descriptor {@code seq}'s fields, then its seq (release): from then on the agent may take it. */
    public void post(final long seq, final long dst, final long src, final int len, final int flags, final long ceWait) {
        final long at = descBase + (long) DESC * slot(seq);
        seg.set(U64, at + 8, dst);
        seg.set(U64, at + 16, src);
        seg.set(U32, at + 24, len);
        seg.set(U32, at + 28, flags);
        seg.set(U64, at + 32, ceWait);
        LONG_AT.setRelease(seg, at, seq);
    }

    /** The completion word of {@code slot} (acquire): the seq last completed there, or 0. */
    public long done(final int slot) {
        return (long) LONG_AT.getAcquire(seg, HEADER + 8L * slot);
    }

    /** The agent's fault word: 0, or a fault code in the top byte and the seq it refused below. */
    public long fault() {
        return (long) LONG_AT.getAcquire(seg, 16L);
    }

    /** How many large copies the copy engine has completed ({@code cuStreamWriteValue64} behind each). */
    public long ceDone() {
        return (long) LONG_AT.getAcquire(seg, 24L);
    }

    /** Where {@code ce_done} lives, for the stream memory operation that writes it. */
    public long ceDoneOffset() {
        return 24;
    }

    /** Descriptor fields of {@code slot}, decoded (for tests and the test double). */
    public long descSeq(final int slot) {
        return (long) LONG_AT.getAcquire(seg, descBase + (long) DESC * slot);
    }

    public long descDst(final int slot) {
        return seg.get(U64, descBase + (long) DESC * slot + 8);
    }

    public long descSrc(final int slot) {
        return seg.get(U64, descBase + (long) DESC * slot + 16);
    }

    public int descLen(final int slot) {
        return seg.get(U32, descBase + (long) DESC * slot + 24);
    }

    public int descFlags(final int slot) {
        return seg.get(U32, descBase + (long) DESC * slot + 28);
    }

    public long descCeWait(final int slot) {
        return seg.get(U64, descBase + (long) DESC * slot + 32);
    }

    /**
     * Whether a completion word is one the agent can have written: 0, or a seq of this slot no newer than
     * {@code posted} (the last seq posted).
     */
    public boolean plausible(final int slot, final long word, final long posted) {
        return word == 0 || (word > 0 && word <= posted && slot(word) == slot);
    }
}
