/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.Errno;
import io.gdrkit.softnic.queue.RecvQueue;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.PostException;
import io.gdrkit.verbs.RecvWorkRequest;
import io.gdrkit.verbs.SharedReceiveQueue;
import io.gdrkit.verbs.SrqAttr;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.Arena;

/**
 * A shared receive queue: a {@link RecvQueue} that one poster fills and the device's NIC drains. A QP attached to it
 * takes the next WQE when a message starts, copying it into its own one-slot receive queue (as rxe copies the SRQ
 * WQE into the QP), so a multi-packet message keeps its WQE while other QPs take the following ones, and the rest
 * of the responder is unchanged.
 */
final class SoftSrq implements SharedReceiveQueue {
    final SoftDevice device;
    final SoftPd pd;
    final int handle;
    final int maxSge;
    private final Arena arena = Arena.ofShared();
    final RecvQueue rq;
    /** Poster side. */
    private long postHead;
    /** NIC side: the next WQE to hand to a QP. */
    long head;
    /** Armed limit, 0 when not armed: set by modifySrq, cleared by the NIC when it fires. */
    volatile int limit;
    private volatile boolean closed;

    SoftSrq(final SoftDevice device, final SoftPd pd, final int handle, final int maxWr, final int maxSge,
            final int limit) {
        this.device = device;
        this.pd = pd;
        this.handle = handle;
        this.maxSge = maxSge;
        this.rq = new RecvQueue(arena, maxWr, maxSge);
        this.limit = limit;
    }

    /**
     * NIC side: hands the next WQE to {@code qp} (copied into its receive queue at {@code index}); false when the
     * SRQ is empty. Raises SRQ_LIMIT_REACHED (once per arming) when fewer than the limit remain.
     */
    boolean take(final RecvQueue into, final long index) {
        if (head >= rq.doorbell().producer()) {
            return false;
        }
        into.copyFrom(index, rq, head);
        head++;
        rq.doorbell().consumer(head);
        final int l = limit;
        if (l > 0 && rq.doorbell().producer() - head < l) {
            limit = 0;
            device.raise(new AsyncEvent(AsyncEventType.SRQ_LIMIT_REACHED, handle, "SRQ " + handle + ": fewer than "
                + l + " receive WQEs left"), pd.owner());
        }
        return true;
    }

    @Override
    public void modifySrq(final SrqAttr attr, final int attrMask) {
        checkOpen();
        if ((attrMask & SrqAttr.MAX_WR) != 0) {
            throw new VerbsException(Errno.EINVAL, "ibv_modify_srq: resizing (IBV_SRQ_MAX_WR) is not supported "
                + "(device_cap_flags has no SRQ_RESIZE)");
        }
        if (attrMask != SrqAttr.LIMIT) {
            throw new VerbsException(Errno.EINVAL, "ibv_modify_srq: unknown attribute mask 0x"
                + Integer.toHexString(attrMask));
        }
        if (attr.srqLimit < 0 || attr.srqLimit > rq.depth()) {
            throw new VerbsException(Errno.EINVAL, "ibv_modify_srq: srq_limit " + attr.srqLimit + " outside 0.."
                + rq.depth() + " (max_wr)");
        }
        limit = attr.srqLimit;
    }

    @Override
    public SrqAttr querySrq() {
        checkOpen();
        return new SrqAttr().maxWr(rq.depth()).maxSge(maxSge).srqLimit(limit);
    }

    @Override
    public void postSrqRecv(final RecvWorkRequest first) {
        if (closed) {
            throw new PostException(Errno.EINVAL, 0, "ibv_post_srq_recv on a destroyed SRQ");
        }
        long h = postHead;
        final long consumer = rq.doorbell().consumer();
        int index = 0;
        try {
            for (RecvWorkRequest wr = first; wr != null; wr = wr.next, index++) {
                if (h - consumer >= rq.depth()) {
                    throw new PostException(Errno.ENOMEM, index, "SRQ " + handle + " is full (" + rq.depth()
                        + " WQEs)");
                }
                if (wr.numSge() > maxSge) {
                    throw new PostException(Errno.EINVAL, index, "num_sge " + wr.numSge() + " > max_sge " + maxSge);
                }
                rq.write(h, wr);
                h++;
            }
        } finally {
            if (h != postHead) {
                postHead = h;
                rq.doorbell().ring(h);
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new VerbsException(Errno.EINVAL, "SRQ " + handle + " was destroyed");
        }
    }

    @Override
    public void close() {
        if (!closed) {
            device.destroySrq(this);
            closed = true;
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "SRQ " + handle + " on " + device.name();
    }
}
