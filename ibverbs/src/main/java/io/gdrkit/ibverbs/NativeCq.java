/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static io.gdrkit.ibverbs.IbvLayouts.WC;
import static io.gdrkit.ibverbs.IbvLayouts.offset;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * {@code struct ibv_cq}. {@link #poll} calls the provider's {@code poll_cq} through the ops table into a native
 * {@code ibv_wc} array allocated once, then copies into the caller's records: nothing is allocated per poll.
 */
final class NativeCq implements CompletionQueue {
    private static final int BATCH = 64;
    private static final long WC_SIZE = WC.byteSize();
    private static final long O_STATUS = offset(WC, "status");
    private static final long O_OPCODE = offset(WC, "opcode");
    private static final long O_VENDOR = offset(WC, "vendor_err");
    private static final long O_LEN = offset(WC, "byte_len");
    private static final long O_IMM = offset(WC, "$imm", "imm_data");
    private static final long O_QPN = offset(WC, "qp_num");
    private static final long O_SRC = offset(WC, "src_qp");
    private static final long O_FLAGS = offset(WC, "wc_flags");
    private static final long O_SLID = offset(WC, "slid");

    final MemorySegment cq;
    private final NativeContext ctx;
    private final int capacity;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment wcs;
    private final long wcsAddr;
    private final long cqAddr;
    private boolean closed;
    private final int compVector;
    private final NativeCompChannel channel;
    /** Events handed out by the channel and not yet acknowledged (libibverbs' destroy would wait for them). */
    private final java.util.concurrent.atomic.AtomicLong unacked = new java.util.concurrent.atomic.AtomicLong();

    NativeCq(final NativeContext ctx, final MemorySegment cq, final int capacity, final int compVector,
             final NativeCompChannel channel) {
        this.channel = channel;
        this.compVector = compVector;
        this.ctx = ctx;
        this.cq = cq;
        this.capacity = capacity;
        this.wcs = arena.allocate(WC, BATCH);
        this.wcsAddr = wcs.address();
        this.cqAddr = cq.address();
    }

    @Override
    public int capacity() {
        return capacity;
    }

    /** Without completion channels (not bound yet) there is nothing to arm: EINVAL, as for a CQ without one. */
    /**
     * Arms the CQ ({@code ops.req_notify_cq}): the next completion (a solicited one with {@code solicitedOnly})
     * raises one event on its channel.
     */
    @Override
    public void reqNotifyCq(final boolean solicitedOnly) {
        if (closed) {
            throw new io.gdrkit.verbs.VerbsException(io.gdrkit.core.Errno.EINVAL, "ibv_req_notify_cq on a destroyed "
                + "CQ");
        }
        if (channel == null) {
            throw new io.gdrkit.verbs.VerbsException(io.gdrkit.core.Errno.EINVAL, "ibv_req_notify_cq: the CQ has no "
                + "completion channel");
        }
        reqNotify(solicitedOnly);
    }

    /** The channel handed out one of this CQ's events. */
    void eventDelivered() {
        unacked.incrementAndGet();
    }

    @Override
    public void ackCqEvents(final int n) {
        if (n < 0) {
            throw new io.gdrkit.verbs.VerbsException(io.gdrkit.core.Errno.EINVAL, "ibv_ack_cq_events: negative count "
                + n);
        }
        while (true) {
            final long cur = unacked.get();
            if (n > cur) {
                throw new io.gdrkit.verbs.VerbsException(io.gdrkit.core.Errno.EINVAL, "ibv_ack_cq_events: " + n
                    + " acknowledged but only " + cur + " event(s) of this CQ are unacknowledged");
            }
            if (unacked.compareAndSet(cur, cur - n)) {
                break;
            }
        }
        if (n > 0) {
            final MemorySegment c = cq;
            Native.call(() -> {
                ctx.lib.ackCqEvents.invokeExact(c, n);
                return null;
            });
        }
    }

    @Override
    public io.gdrkit.verbs.CompletionChannel channel() {
        return channel;
    }

    @Override
    public int compVector() {
        return compVector;
    }

    @Override
    public int poll(final WorkCompletion[] out) {
        return poll(out, out.length);
    }

    @Override
    public int poll(final WorkCompletion[] out, final int max) {
        final int n = Math.min(Math.min(max, out.length), BATCH);
        final int got;
        try {
            got = (int) IbvLibrary.OPS_POLL_CQ.invokeExact(ctx.pollCqFn, cqAddr, n, wcsAddr);
        } catch (final Throwable t) {
            throw new IllegalStateException("poll_cq: " + t, t);
        }
        if (got < 0) {
            throw IbvLibrary.error("ibv_poll_cq", -got > 0 ? -got : io.gdrkit.core.Errno.EIO);
        }
        for (int i = 0; i < got; i++) {
            final long b = i * WC_SIZE;
            WorkCompletion w = out[i];
            if (w == null) {
                w = new WorkCompletion(); // only the first time a caller hands a plain array
                out[i] = w;
            }
            w.wrId = wcs.get(JAVA_LONG, b);
            w.status = wcs.get(JAVA_INT, b + O_STATUS);
            w.opcode = wcs.get(JAVA_INT, b + O_OPCODE);
            w.vendorErr = wcs.get(JAVA_INT, b + O_VENDOR);
            w.byteLen = wcs.get(JAVA_INT, b + O_LEN);
            // imm_data is __be32 in memory; the verbs API carries it in host order
            w.immData = Integer.reverseBytes(wcs.get(JAVA_INT, b + O_IMM));
            w.qpNum = wcs.get(JAVA_INT, b + O_QPN);
            w.srcQp = wcs.get(JAVA_INT, b + O_SRC);
            w.wcFlags = wcs.get(JAVA_INT, b + O_FLAGS);
            w.slid = Short.toUnsignedInt(wcs.get(JAVA_SHORT, b + O_SLID));
        }
        return got;
    }

    /** ibv_req_notify_cq through the ops table. */
    void reqNotify(final boolean solicitedOnly) {
        final int rc;
        try {
            rc = (int) IbvLibrary.OPS_REQ_NOTIFY_CQ.invokeExact(ctx.reqNotifyFn, cqAddr, solicitedOnly ? 1 : 0);
        } catch (final Throwable t) {
            throw new IllegalStateException("req_notify_cq: " + t, t);
        }
        Native.check("ibv_req_notify_cq", rc);
    }

    @Override
    public void close() {
        if (!closed) {
            if (unacked.get() > 0) {
                // libibverbs' ibv_destroy_cq would wait for them for ever
                throw new io.gdrkit.verbs.VerbsException(io.gdrkit.core.Errno.EBUSY, "ibv_destroy_cq: "
                    + unacked.get() + " completion event(s) not acknowledged (ackCqEvents first)");
            }
            closed = true;
            Native.check("ibv_destroy_cq", Native.call(() -> (int) ctx.lib.destroyCq.invokeExact(cq)));
            if (channel != null) {
                channel.detach(this);
            }
            arena.close();
        }
    }

}
