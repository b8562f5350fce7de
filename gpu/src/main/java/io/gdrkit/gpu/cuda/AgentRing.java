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
 *  | w0 | w1 | ... | w31                                                     |  descriptor 0 (256 B): 32 words,
 *  | ...                                                                     |  each value u32 | tag u32 << 32
 *  +-------------------------------------------------------------------------+  descriptor slots-1
 *
 *  word:   0     1       2       3        4       5        6          7          8 .. 31
 *  value:  len | flags | dst lo | dst hi | src lo | src hi | ce_wait lo | ce_wait hi | inline payload, 4 B each
 * </pre>
 *
 * <p>Sequence numbers start at 1; descriptor {@code seq} lives in slot {@code (seq - 1) % slots} ({@code slots} a
 * power of two), and each of its words carries the tag {@code (int) seq} in its high half. An aligned 8-byte store is
 * single-copy atomic, so a word that bears the tag holds its value: the NIC writes the words in any order, and the
 * agent reads the whole descriptor in one poll (one PCIe read) and takes it when every word it needs bears the tag
 * (NCCL's LL protocol uses 8-byte stores the same way). A small delivery ({@link #INLINE}, at most
 * {@link #INLINE_MAX} bytes) carries its payload in words 8-31, so the agent reads no staging memory for it. A slot
 * is rewritten only after its completion word shows the seq one lap earlier, so before its turn a header word bears
 * tag 0 or that seq's, and a completion word holds 0 or a seq of the same slot no newer than the last posted:
 * anything else is corrupt. {@code fault} is written by the agent when it refuses a descriptor (code in the top
 * byte, the seq below); {@code ce_done} by the copy engine's stream ({@code cuStreamWriteValue64}) behind each large
 * copy, so the agent and the NIC see those complete too.
 */
public final class AgentRing {
    /** "GDRAGNT2" in little-endian order: the header's first word (2: tagged 256-byte descriptors). */
    public static final long MAGIC = 0x32544e4741524447L;
    public static final int HEADER = 64;
    public static final int DESC = 256;
    /** Words of a descriptor before its inline payload. */
    public static final int HEADER_WORDS = 8;
    /** The longest payload a descriptor carries itself: 24 words of 4 bytes. */
    public static final int INLINE_MAX = (DESC / 8 - HEADER_WORDS) * 4;
    /** Wait until every earlier descriptor is complete before copying (a flag after its data). */
    public static final int FENCE = 1;
    /** Complete, then end the kernel. */
    public static final int STOP = 2;
    /** Wait until {@code ce_done} reaches the descriptor's {@code ce_wait} (a large copy posted before it). */
    public static final int WAIT_CE = 4;
    /** The payload is in the descriptor's words 8-31 ({@link #postInline}), not at {@code src}. */
    public static final int INLINE = 8;
    /** Fault codes (the top byte of {@code fault}): a descriptor's seq was out of place, or its fields invalid. */
    public static final int FAULT_BAD_SEQ = 1;
    public static final int FAULT_BAD_DESC = 2;

    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG;
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfInt U32_UNALIGNED = ValueLayout.JAVA_INT_UNALIGNED;
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

    /** Writes descriptor {@code seq}'s header words: from the last of them on, the agent may take it. */
    public void post(final long seq, final long dst, final long src, final int len, final int flags, final long ceWait) {
        final long at = descBase + (long) DESC * slot(seq);
        final long tag = seq << 32;
        // the agent takes the descriptor once every header word bears the tag, and may then read staging: what was
        // staged before this call reaches memory before any of these words
        VarHandle.releaseFence();
        word(at, 2, tag, (int) dst);
        word(at, 3, tag, (int) (dst >>> 32));
        word(at, 4, tag, (int) src);
        word(at, 5, tag, (int) (src >>> 32));
        word(at, 6, tag, (int) ceWait);
        word(at, 7, tag, (int) (ceWait >>> 32));
        word(at, 1, tag, flags);
        word(at, 0, tag, len);
    }

    /**
     * Writes descriptor {@code seq} with its payload: {@code len} (1 to {@link #INLINE_MAX}) bytes of {@code data}
     * from {@code offset} to device address {@code dst}, flags plus {@link #INLINE} ({@link #STOP} is refused: the
     * agent treats an inline STOP as a bad descriptor, since every block ends on a STOP and only one warp sees an
     * inline descriptor).
     */
    public void postInline(final long seq, final long dst, final MemorySegment data, final long offset, final int len,
                           final int flags, final long ceWait) {
        if (len < 1 || len > INLINE_MAX || (flags & STOP) != 0) {
            throw new IllegalArgumentException("an inline delivery carries 1 to " + INLINE_MAX + " bytes and is no "
                + "STOP, not " + len + " bytes with flags " + flags);
        }
        final long at = descBase + (long) DESC * slot(seq);
        final long tag = seq << 32;
        final int whole = len >>> 2;
        for (int i = 0; i < whole; i++) {
            word(at, HEADER_WORDS + i, tag, data.get(U32_UNALIGNED, offset + 4L * i));
        }
        if ((len & 3) != 0) {
            int v = 0;
            for (int b = 0; b < (len & 3); b++) {
                v |= (data.get(ValueLayout.JAVA_BYTE, offset + 4L * whole + b) & 0xff) << (8 * b);
            }
            word(at, HEADER_WORDS + whole, tag, v);
        }
        post(seq, dst, 0, len, flags | INLINE, ceWait);
    }

    private void word(final long at, final int i, final long tag, final int value) {
        seg.set(U64, at + 8L * i, tag | (value & 0xffffffffL));
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

    /** Descriptor fields of {@code slot}, decoded (for tests and the test double): word 0's tag (seq's low half). */
    public int descTag(final int slot) {
        return (int) (wordAt(slot, 0) >>> 32);
    }

    /** The tag of word {@code i} of {@code slot}. */
    public int wordTag(final int slot, final int i) {
        return (int) (wordAt(slot, i) >>> 32);
    }

    /** The value half of word {@code i} of {@code slot}. */
    public int wordValue(final int slot, final int i) {
        return (int) wordAt(slot, i);
    }

    public long descDst(final int slot) {
        return pair(slot, 2);
    }

    public long descSrc(final int slot) {
        return pair(slot, 4);
    }

    public int descLen(final int slot) {
        return wordValue(slot, 0);
    }

    public int descFlags(final int slot) {
        return wordValue(slot, 1);
    }

    public long descCeWait(final int slot) {
        return pair(slot, 6);
    }

    private long wordAt(final int slot, final int i) {
        return (long) LONG_AT.getAcquire(seg, descBase + (long) DESC * slot + 8L * i);
    }

    private long pair(final int slot, final int i) {
        return (wordValue(slot, i) & 0xffffffffL) | ((long) wordValue(slot, i + 1) << 32);
    }

    /**
     * Whether a completion word is one the agent can have written: 0, or a seq of this slot no newer than
     * {@code posted} (the last seq posted).
     */
    public boolean plausible(final int slot, final long word, final long posted) {
        return word == 0 || (word > 0 && word <= posted && slot(word) == slot);
    }
}
