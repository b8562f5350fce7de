/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs.cm;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.MemoryRegion;
import io.gdrkit.verbs.QueuePair;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.SendWorkRequest;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WorkCompletion;
import io.gdrkit.verbs.WrOpcode;

/**
 * Stripes one message over several connected RC QPs (A8, the way NCCL splits a transfer over its QPs): the
 * message is cut into one chunk per QP, aligned to {@code alignment} bytes, each posted as a signaled
 * RDMA WRITE (or WRITE_WITH_IMM on the last chunk when asked) on its QP. RC orders each QP, not the stripes
 * between QPs, so a message is complete only when every stripe has completed: {@link #onCompletion} says when.
 *
 * <p>wr_id of a stripe = (message id &lt;&lt; 8) | QP index; message ids are 56-bit. One {@link SendWorkRequest} is
 * reused: nothing is allocated per message. Up to 256 QPs; a message may be in flight on each at once per
 * {@link #inFlightSlots} slot.
 */
public final class Striper {
    private final QueuePair[] qps;
    private final int alignment;
    private final SendWorkRequest wr = new SendWorkRequest(1);
    /** Stripes still outstanding, per in-flight slot (message id modulo slots). */
    private final int[] remaining;
    private final long[] messageOf;

    /**
     * @param qps           connected RC QPs towards the same peer (1..256)
     * @param alignment     chunk boundary in bytes (a power of two, e.g. 4096)
     * @param inFlightSlots how many messages may be outstanding at once (power of two)
     */
    public Striper(final QueuePair[] qps, final int alignment, final int inFlightSlots) {
        if (qps.length < 1 || qps.length > 256) {
            throw new IllegalArgumentException("stripe over 1..256 QPs, not " + qps.length);
        }
        if (alignment < 1 || Integer.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("alignment " + alignment + " is not a power of two");
        }
        if (inFlightSlots < 1 || Integer.bitCount(inFlightSlots) != 1) {
            throw new IllegalArgumentException("in-flight slots " + inFlightSlots + " is not a power of two");
        }
        this.qps = qps.clone();
        this.alignment = alignment;
        this.remaining = new int[inFlightSlots];
        this.messageOf = new long[inFlightSlots];
        java.util.Arrays.fill(messageOf, -1);
    }

    public int width() {
        return qps.length;
    }

    /**
     * Posts message {@code messageId}: {@code length} bytes at {@code offset} of {@code local} to
     * {@code remoteAddr}/{@code rkey}. With {@code imm} non-null the last stripe is a WRITE_WITH_IMM carrying it
     * (the receiver learns of the message once, but must still not read it before its own ordering allows).
     *
     * @return the number of stripes posted (fewer than the width for short messages)
     */
    public int postWrite(final long messageId, final MemoryRegion local, final long offset, final long length,
                         final long remoteAddr, final int rkey, final Integer imm) {
        if (messageId < 0 || messageId >= (1L << 56)) {
            throw new IllegalArgumentException("message id " + messageId + " outside 0..2^56-1");
        }
        if (length < 0 || offset < 0 || offset + length > local.length()) {
            throw new VerbsException(Errno.EINVAL, "stripe source [" + offset + ", " + (offset + length)
                + ") outside the local MR of " + local.length() + " bytes");
        }
        final int slot = (int) (messageId & (remaining.length - 1));
        if (remaining[slot] != 0) {
            throw new VerbsException(Errno.EAGAIN, "message " + messageOf[slot] + " still has " + remaining[slot]
                + " stripe(s) in flight in slot " + slot);
        }
        final long per = Math.max(alignment, (length + qps.length - 1) / qps.length + alignment - 1 & -alignment);
        int stripes = 0;
        long pos = 0;
        do {
            final long chunk = Math.min(per, length - pos);
            final boolean last = pos + chunk >= length;
            wr.clear().wrId(messageId << 8 | stripes).flags(SendFlags.SIGNALED)
                .opcode(last && imm != null ? WrOpcode.RDMA_WRITE_WITH_IMM : WrOpcode.RDMA_WRITE)
                .sge(local, offset + pos, (int) chunk).remote(remoteAddr + pos, rkey);
            if (last && imm != null) {
                wr.immData = imm;
            }
            qps[stripes].postSend(wr);
            stripes++;
            pos += chunk;
        } while (pos < length);
        remaining[slot] = stripes;
        messageOf[slot] = messageId;
        return stripes;
    }

    /**
     * Feeds a send completion of one of the QPs. Returns the message id when this was the last stripe of it,
     * otherwise -1.
     *
     * @throws VerbsException with EIO when a stripe failed (its status named)
     */
    public long onCompletion(final WorkCompletion wc) {
        final long messageId = wc.wrId >>> 8;
        if (wc.status != WcStatus.SUCCESS) {
            throw new VerbsException(Errno.EIO, "stripe " + (wc.wrId & 0xFF) + " of message " + messageId
                + " failed: " + WcStatus.name(wc.status));
        }
        final int slot = (int) (messageId & (remaining.length - 1));
        if (messageOf[slot] != messageId || remaining[slot] == 0) {
            throw new IllegalStateException("completion for message " + messageId + " which is not in flight");
        }
        return --remaining[slot] == 0 ? messageId : -1;
    }

    /** Messages with stripes still outstanding. */
    public int inFlight() {
        int n = 0;
        for (final int r : remaining) {
            if (r != 0) {
                n++;
            }
        }
        return n;
    }
}
