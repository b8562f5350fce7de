/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.shmem;

import io.gdrkit.gpu.sim.DeviceView;
import io.gdrkit.verbs.DirectQueue;
import io.gdrkit.verbs.SendFlags;
import io.gdrkit.verbs.WcStatus;
import io.gdrkit.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The IBGDA poster of one QP, as the simulated GPU runs it: GPU threads write WQEs straight into the software NIC's
 * send queue ring ({@link DirectQueue}), fence, ring the doorbell record in order, and poll the CQ ring for
 * completions. kernels.cu's {@code gda_post}/{@code gda_wait} do the same on CUDA over the same layout.
 *
 * <p>Steps of one post: reserve an index (an atomic add; on CUDA on a counter in GPU memory), wait for a free slot,
 * write the WQE with its stamp, system-scope fence, wait until the doorbell reaches the index (doorbells go in
 * order), store index + 1 into the doorbell record (release). Without the fence the simulated GPU lets the
 * doorbell overtake the WQE's stores with the context's probability (drawn from the seeded generator): the WQE's
 * stores are then held back until the NIC has read the slot, so it reads the stale stamp and refuses the WQE
 * ({@link ShmemException.Reason#STALE_WQE}) whatever the threads' timing.
 */
final class GdaQueue {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG;
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT;
    private static final ValueLayout.OfByte U8 = ValueLayout.JAVA_BYTE;

    final DirectQueue dq;
    final int pe;
    private final MemorySegment ring;
    private final MemorySegment db;
    private final MemorySegment cq;
    private final MemorySegment cqc;
    private final int depth;
    private final int stride;
    private final int cqDepth;
    private final int inlineOffset;
    private final boolean fence;
    private final double staleP;
    private final SplittableRandom rnd;
    private final long timeoutNanos;
    /** The reservation counter (on CUDA a word in GPU memory that threads atomicAdd). */
    private final AtomicLong reserved = new AtomicLong();
    private volatile String error;
    private volatile ShmemException.Reason errorReason;
    final AtomicLong staleInjected = new AtomicLong();

    /** Device address and lkey of this queue's fetch slots: one 8-byte slot per send-queue slot. */
    private final long fetchBase;
    private final int fetchLkey;

    GdaQueue(final DirectQueue dq, final int pe, final ShmemContext ctx, final long seed, final long fetchBase,
             final int fetchLkey) {
        this.fetchBase = fetchBase;
        this.fetchLkey = fetchLkey;
        this.dq = dq;
        this.pe = pe;
        this.ring = dq.sqRing();
        this.db = dq.sqDoorbell();
        this.cq = dq.cqRing();
        this.cqc = dq.cqCounters();
        this.depth = dq.sqDepth();
        this.stride = dq.sqStride();
        this.cqDepth = dq.cqDepth();
        this.inlineOffset = dq.inlineOffset();
        this.fence = ctx.wqeFence();
        this.staleP = ctx.staleProbability();
        this.rnd = new SplittableRandom(seed);
        this.timeoutNanos = ctx.timeout().toNanos();
    }

    /** Offset from the heap's start of the fetch slot of WQE {@code idx} (atomics land their old value there). */
    long fetchOffset(final long idx, final long heapAddress) {
        return fetchBase - heapAddress + (idx & (depth - 1)) * 8;
    }

    /** WQEs reserved so far (the next index). */
    long reserved() {
        return reserved.get();
    }

    /**
     * Posts one WQE and returns its index. With INLINE in {@code flags} the data is {@code inlineFrom}'s
     * {@code length} bytes, or (null) the 8 bytes of {@code inlineValue}.
     */
    long post(final int opcode, final int flags, final long localAddr, final int length, final int lkey,
              final long remoteAddr, final int rkey, final long compareAdd, final long swap, final long inlineValue,
              final DeviceView inlineFrom) {
        final long idx = reserved.getAndIncrement();
        final Spin spin = new Spin(timeoutNanos);
        while (idx - (long) LONG.getAcquire(db, (long) DirectQueue.DB_CONSUMER) >= depth
            || idx - (long) LONG.getAcquire(cqc, (long) DirectQueue.DB_CONSUMER) >= cqDepth) {
            check();
            reap();
            if (spin.idle()) {
                throw Spin.timeout("a free send-queue slot for WQE " + idx + " to PE " + pe);
            }
        }
        final boolean overtaken = !fence && staleP > 0 && draw();
        if (overtaken) {
            staleInjected.incrementAndGet();
            final long refusedBefore = dq.staleWqes();
            ringInOrder(idx, spin); // the doorbell store reaches host memory first ...
            // ... and the NIC acts on it before the WQE's stores land. A schedule, not a race: the stores are held
            // back until the NIC has refused this WQE (or the QP failed on an earlier one, after which it reads
            // nothing more; or it completed the WQE: a NIC that does not check the stamp), however late the NIC's
            // thread runs. A wait of fixed length lets the stores win on a loaded machine, and then nothing is stale.
            final Spin nic = new Spin(timeoutNanos);
            while (dq.staleWqes() == refusedBefore && error == null && !isDone(idx)) {
                reap();
                if (nic.idle()) {
                    throw Spin.timeout("the NIC to read WQE " + idx + " to PE " + pe + " after its doorbell "
                        + "(the simulated overtaking holds the WQE's stores back until then)");
                }
            }
            writeWqe(idx, opcode, flags, localAddr, length, lkey, remoteAddr, rkey, compareAdd, swap, inlineValue,
                inlineFrom);
            return idx;
        }
        writeWqe(idx, opcode, flags, localAddr, length, lkey, remoteAddr, rkey, compareAdd, swap, inlineValue,
                inlineFrom);
        if (fence) {
            VarHandle.fullFence(); // fence.sc.sys on CUDA: the WQE is visible system-wide before the doorbell
        }
        ringInOrder(idx, spin);
        return idx;
    }

    private synchronized boolean draw() {
        return rnd.nextDouble() < staleP;
    }

    private void writeWqe(final long idx, final int opcode, final int flags, final long localAddr, final int length,
                          final int lkey, final long remoteAddr, final int rkey, final long compareAdd,
                          final long swap, final long inlineValue, final DeviceView inlineFrom) {
        final long o = (idx & (depth - 1)) * (long) stride;
        ring.set(U64, o + DirectQueue.OFF_WR_ID, idx);
        ring.set(U8, o + DirectQueue.OFF_OPCODE, (byte) opcode);
        ring.set(U8, o + DirectQueue.OFF_FLAGS, (byte) (flags | SendFlags.SIGNALED));
        ring.set(U16, o + DirectQueue.OFF_NUM_SGE, (short) 1);
        ring.set(U32, o + DirectQueue.OFF_IMM, 0);
        ring.set(U64, o + DirectQueue.OFF_REMOTE_ADDR, remoteAddr);
        ring.set(U32, o + DirectQueue.OFF_RKEY, rkey);
        ring.set(U32, o + DirectQueue.OFF_LENGTH, length);
        ring.set(U64, o + DirectQueue.OFF_COMPARE_ADD, compareAdd);
        ring.set(U64, o + DirectQueue.OFF_SWAP, swap);
        final boolean fetch = WrOpcode.isAtomic(opcode);
        ring.set(U64, o + DirectQueue.OFF_SGE, fetch ? fetchBase + (idx & (depth - 1)) * 8 : localAddr);
        ring.set(U32, o + DirectQueue.OFF_SGE + 8, length);
        ring.set(U32, o + DirectQueue.OFF_SGE + 12, fetch ? fetchLkey : lkey);
        if ((flags & SendFlags.INLINE) != 0) {
            if (inlineFrom != null) {
                inlineFrom.read(0, ring, o + inlineOffset, length);
            } else {
                ring.set(U64, o + inlineOffset, inlineValue);
            }
        }
        ring.set(U32, o + DirectQueue.OFF_STAMP, (int) (idx + 1));
    }

    private void ringInOrder(final long idx, final Spin spin) {
        while ((long) LONG.getAcquire(db, (long) DirectQueue.DB_PRODUCER) != idx) {
            check();
            if (spin.idle()) {
                throw Spin.timeout("the doorbell to reach WQE " + idx + " to PE " + pe + " (earlier posters ring first)");
            }
        }
        LONG.setRelease(db, (long) DirectQueue.DB_PRODUCER, idx + 1);
    }

    /** True once WQE {@code idx} has its CQE. */
    boolean isDone(final long idx) {
        return (long) LONG.getAcquire(cqc, (long) DirectQueue.DB_PRODUCER) > idx;
    }

    /** Waits for WQE {@code idx}'s completion (CQEs of one QP come in order); throws its failure. */
    void await(final long idx, final String what) {
        final Spin spin = new Spin(timeoutNanos);
        while (!isDone(idx)) {
            check();
            if (spin.idle()) {
                throw Spin.timeout(what + " (WQE " + idx + " to PE " + pe + ": its CQE)");
            }
        }
        reap();
        check();
    }

    /** Waits until every reserved WQE has completed (quiet). */
    void quiet() {
        final long upTo = reserved.get();
        if (upTo > 0) {
            await(upTo - 1, "quiet");
        }
    }

    /** Consumes the CQEs that arrived, checking their status, and frees their ring slots for the NIC. */
    void reap() {
        final long c = (long) LONG.getAcquire(cqc, (long) DirectQueue.DB_CONSUMER);
        final long p = (long) LONG.getAcquire(cqc, (long) DirectQueue.DB_PRODUCER);
        for (long i = c; i < p; i++) {
            final int status = cq.get(U8, (i & (cqDepth - 1)) * DirectQueue.CQE_SIZE + DirectQueue.CQE_OFF_STATUS) & 0xFF;
            if (status != WcStatus.SUCCESS && error == null) {
                final boolean stale = dq.staleWqes() > 0;
                errorReason = stale ? ShmemException.Reason.STALE_WQE : ShmemException.Reason.OPERATION_FAILED;
                error = "WQE " + i + " to PE " + pe + " completed with " + WcStatus.name(status)
                    + (stale ? " after the NIC refused " + dq.staleWqes() + " stale WQE(s): the doorbell overtook "
                    + "the WQE (no fence before the doorbell)" : "");
            }
        }
        if (p > c) {
            LONG.compareAndSet(cqc, (long) DirectQueue.DB_CONSUMER, c, p);
        }
    }

    void check() {
        final String e = error;
        if (e != null) {
            throw new ShmemException(errorReason, e);
        }
    }

    static int opcodeFor(final int op) {
        return switch (op) {
            case Op.GET -> WrOpcode.RDMA_READ;
            case Op.FETCH_ADD -> WrOpcode.ATOMIC_FETCH_AND_ADD;
            case Op.COMPARE_SWAP -> WrOpcode.ATOMIC_CMP_AND_SWP;
            default -> WrOpcode.RDMA_WRITE;
        };
    }
}
