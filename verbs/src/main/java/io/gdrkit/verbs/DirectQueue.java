/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import java.lang.foreign.MemorySegment;

/**
 * Direct access to one QP's send queue and its send CQ (like mlx5dv's {@code mlx5dv_init_obj} on a QP and a CQ): the
 * memory of the WQE ring, of its doorbell record and of the CQ ring, with their layouts, so that a poster that is
 * not a CPU thread calling {@link QueuePair#postSend} (a GPU kernel: IBGDA) can write WQEs and ring the doorbell
 * itself. Obtained from {@link QueuePair#direct()}; {@link #takeOwnership()} hands the send queue to the direct
 * poster, after which {@code postSend} is refused.
 *
 * <pre>
 * send queue ring: depth() slots of stride() bytes; the slot of WQE index i is (i mod depth) * stride
 *   WQE +0  wr_id (u64)       +8  opcode (u8)  +9 send_flags (u8)  +10 num_sge (u16)  +12 imm (u32)
 *       +16 remote_addr (u64) +24 rkey (u32)   +28 length (u32)    +32 compare_add (u64)  +40 swap (u64)
 *       +48 stamp (u32): (u32)(i + 1), written by a direct poster; the NIC refuses a WQE whose stamp differs
 *       +64 sge[0]: addr (u64) length (u32) lkey (u32) ...           inline data at inlineOffset()
 * doorbell record (128 bytes): +0 producer (u64, the poster's release store: the doorbell the NIC polls)
 *                              +64 consumer (u64, the NIC's: WQEs retired, slots free again)
 * CQ ring: cqDepth() CQEs of 32 bytes: +0 wr_id (u64) +8 byte_len +12 imm +16 qp_num +20 src_qp
 *          +24 status (u8) +25 opcode (u8) +26 wc_flags (u8) +27 lap (u8) +28 vendor_err; the 8 bytes at +24
 *          are the NIC's last store of a CQE (release), lap = (index / cqDepth) % 255 + 1
 * CQ counters (128 bytes): +0 producer (u64, NIC's release store) +64 consumer (u64, the poller's)
 * </pre>
 * All fields in native byte order (little-endian on every host gdrkit runs on, and on the GPU).
 */
public interface DirectQueue {
    int OFF_WR_ID = 0;
    int OFF_OPCODE = 8;
    int OFF_FLAGS = 9;
    int OFF_NUM_SGE = 10;
    int OFF_IMM = 12;
    int OFF_REMOTE_ADDR = 16;
    int OFF_RKEY = 24;
    int OFF_LENGTH = 28;
    int OFF_COMPARE_ADD = 32;
    int OFF_SWAP = 40;
    int OFF_STAMP = 48;
    int OFF_SGE = 64;
    int CQE_SIZE = 32;
    int CQE_OFF_STATUS = 24;
    int DB_PRODUCER = 0;
    int DB_CONSUMER = 64;

    MemorySegment sqRing();

    int sqDepth();

    int sqStride();

    int inlineOffset();

    MemorySegment sqDoorbell();

    MemorySegment cqRing();

    int cqDepth();

    MemorySegment cqCounters();

    /**
     * Hands the send queue to the direct poster: later {@code postSend} calls fail with EPERM, the NIC checks each
     * WQE's stamp, and the doorbells it sees count as {@link #directDoorbells()}. The send CQ must be this QP's
     * alone, and nobody may poll it through {@link CompletionQueue#poll}: the direct poster consumes it.
     */
    void takeOwnership();

    boolean owned();

    /** Doorbells rung by {@code postSend} (a CPU thread). */
    long cpuDoorbells();

    /** New producer values the NIC saw on an owned queue: doorbells rung by the direct poster (the GPU). */
    long directDoorbells();

    /** WQEs the NIC refused because their stamp was not (u32)(index + 1): stale or partly written. */
    long staleWqes();

    /**
     * Turns per-WQE pick-up stamps on: the NIC's clock ({@code System.nanoTime}) when its requester first read the
     * WQE, kept per slot until the slot is reused.
     */
    void stampPickups(boolean on);

    /**
     * The NIC's pick-up stamp of WQE {@code index}, 0 when none: stamping off, not yet picked up, or its slot already
     * reused by a later WQE (the stamp there is that WQE's, not this one's).
     */
    long pickupNanos(long index);

    /**
     * With {@link #stampPickups} on: the {@code System.nanoTime()} at which the NIC made WQE {@code index}'s
     * completion visible (its CQE written), or 0 when it has none (not completed yet, not stamped, or its slot since
     * reused by a later WQE).
     */
    long completionNanos(long index);

    /** {@link #pathNanos} step: the connected QP's responder placed the WQE's last packet and queued its ACK. */
    int PATH_PLACED = 0;
    /** {@link #pathNanos} step: that ACK left the responder, after the completion fence of what it placed. */
    int PATH_ACK_SENT = 1;
    /** {@link #pathNanos} step: this QP's completer took up the WQE's completion, before its CQE was written. */
    int PATH_ACK_TAKEN = 2;

    /**
     * With {@link #stampPickups} on here and on the connected QP: the NIC's stamp ({@code System.nanoTime}) of one
     * step of WQE {@code index}'s way ({@link #PATH_PLACED}, {@link #PATH_ACK_SENT}, {@link #PATH_ACK_TAKEN}), or 0
     * when unknown: stamping off, the connected QP not in this process, or the stamp since overwritten by a later
     * WQE's. A diagnostic for a time split, read after the run.
     */
    default long pathNanos(final long index, final int step) {
        return 0;
    }

}
