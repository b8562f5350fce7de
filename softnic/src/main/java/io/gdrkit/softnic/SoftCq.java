/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.softnic.queue.CompletionRing;
import io.gdrkit.verbs.AsyncEvent;
import io.gdrkit.verbs.AsyncEventType;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.core.Errno;
import io.gdrkit.verbs.VerbsException;
import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.Arena;

/**
 * A completion queue: a {@link CompletionRing} the device's NIC writes and one poller reads. Overflow is never
 * silent: the lost completion raises a CQ_ERR async event, the QP goes to ERR and poll fails with EIO once the
 * completions that did fit are consumed.
 */
final class SoftCq implements CompletionQueue {
    final SoftDevice device;
    /** The context that created the CQ: its CQ_ERR event goes there. */
    final SoftVerbsContext owner;
    final int handle;
    private final Arena arena = Arena.ofShared();
    private final CompletionRing ring;
    private volatile long overflowed;
    private volatile boolean closed;
    /** The channel events go to, or null. */
    final SoftCompChannel channel;
    final int compVector;
    /** {@link #NOT_ARMED}, {@link #ARMED_ANY} or {@link #ARMED_SOLICITED}: set by the application, cleared by the NIC. */
    private volatile int armed;
    private static final int NOT_ARMED = 0;
    private static final int ARMED_ANY = 1;
    private static final int ARMED_SOLICITED = 2;
    private static final java.lang.invoke.VarHandle ARMED;
    /** Events returned by getCqEvent and not yet acknowledged. */
    private final java.util.concurrent.atomic.AtomicLong unacked = new java.util.concurrent.atomic.AtomicLong();

    static {
        try {
            ARMED = java.lang.invoke.MethodHandles.lookup().findVarHandle(SoftCq.class, "armed", int.class);
        } catch (final ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    SoftCq(final SoftDevice device, final SoftVerbsContext owner, final int handle, final int cqe,
           final SoftCompChannel channel, final int compVector) {
        this.device = device;
        this.owner = owner;
        this.handle = handle;
        this.ring = new CompletionRing(arena, cqe);
        this.channel = channel;
        this.compVector = compVector;
    }

    /** NIC side; returns false (and reports the overflow) when the ring is full. */
    boolean post(final long wrId, final int status, final int opcode, final int byteLen, final int imm,
                 final int qpNum, final int srcQp, final int wcFlags) {
        return post(wrId, status, opcode, byteLen, imm, qpNum, srcQp, wcFlags, false);
    }

    /**
     * NIC side, with the SE bit of the message a receive completion is for: an armed CQ raises its event once the
     * completion is in the ring (solicited-only: on a solicited receive or any error completion, IB spec 11.4.2.2).
     */
    boolean post(final long wrId, final int status, final int opcode, final int byteLen, final int imm,
                 final int qpNum, final int srcQp, final int wcFlags, final boolean solicited) {
        return post(wrId, status, opcode, byteLen, imm, qpNum, srcQp, wcFlags, solicited, 0);
    }

    /** With the source LID of a successful receive (UD: what the application answers to). */
    boolean post(final long wrId, final int status, final int opcode, final int byteLen, final int imm,
                 final int qpNum, final int srcQp, final int wcFlags, final boolean solicited, final int slid) {
        if (!ring.hasRoom()) {
            if (overflowed++ == 0) {
                device.raise(new AsyncEvent(AsyncEventType.CQ_ERR, handle, "CQ " + handle + " overflow ("
                    + ring.depth() + " entries): a completion of QP " + qpNum + " was lost"), owner);
            }
            return false;
        }
        ring.post(wrId, status, opcode, byteLen, imm, qpNum, srcQp, wcFlags,
            status == io.gdrkit.verbs.WcStatus.SUCCESS ? slid : 0);
        final int a = armed;
        if (a != NOT_ARMED && (a == ARMED_ANY || solicited || status != io.gdrkit.verbs.WcStatus.SUCCESS)
            && ARMED.compareAndSet(this, a, NOT_ARMED)) {
            channel.signal(this);
        }
        return true;
    }

    @Override
    public void reqNotifyCq(final boolean solicitedOnly) {
        if (closed) {
            throw new VerbsException(Errno.EINVAL, "ibv_req_notify_cq on a destroyed CQ");
        }
        if (channel == null) {
            throw new VerbsException(Errno.EINVAL, "ibv_req_notify_cq: CQ " + handle + " has no completion channel");
        }
        // a solicited-only request never weakens a pending request for any completion (IB spec: the stronger wins)
        if (solicitedOnly) {
            ARMED.compareAndSet(this, NOT_ARMED, ARMED_SOLICITED);
        } else {
            armed = ARMED_ANY;
        }
    }

    /** The channel handed an event of this CQ to the application. */
    void eventDelivered() {
        unacked.incrementAndGet();
    }

    @Override
    public void ackCqEvents(final int n) {
        if (n < 0) {
            throw new VerbsException(Errno.EINVAL, "ibv_ack_cq_events: negative count " + n);
        }
        while (true) {
            final long cur = unacked.get();
            if (n > cur) {
                throw new VerbsException(Errno.EINVAL, "ibv_ack_cq_events: " + n + " acknowledged but only " + cur
                    + " event(s) of CQ " + handle + " are unacknowledged");
            }
            if (unacked.compareAndSet(cur, cur - n)) {
                return;
            }
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
    public int capacity() {
        return ring.depth();
    }

    @Override
    public int poll(final WorkCompletion[] wcs) {
        return poll(wcs, wcs.length);
    }

    /** 1 while a poll runs: one poller at a time, checked (see {@link CompletionQueue}). */
    private volatile int poller;
    private static final java.lang.invoke.VarHandle POLLER;

    static {
        try {
            POLLER = java.lang.invoke.MethodHandles.lookup().findVarHandle(SoftCq.class, "poller", int.class);
        } catch (final ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Override
    public int poll(final WorkCompletion[] wcs, final int max) {
        if (!POLLER.compareAndSet(this, 0, 1)) {
            throw new VerbsException(Errno.EBUSY, "concurrent poll on CQ " + handle + ": a CQ has one poller at a "
                + "time; nothing was consumed");
        }
        try {
            return pollOwned(wcs, max);
        } finally {
            POLLER.setRelease(this, 0);
        }
    }

    private int pollOwned(final WorkCompletion[] wcs, final int max) {
        if (closed) {
            throw new VerbsException(Errno.EINVAL, "poll on a destroyed CQ");
        }
        int n = ring.poll(wcs, max);
        if (n == 0) {
            device.driver().progressFor(device);
            n = ring.poll(wcs, max);
        }
        if (n == 0 && device.fatal() != null) {
            device.flushPending(); // a WR posted after the NIC thread's last flush cycle is flushed, not lost
            n = ring.poll(wcs, max);
        }
        if (n == 0 && device.fatal() != null) {
            throw new VerbsException(Errno.EIO, "device " + device.name() + " failed (DEVICE_FATAL): "
                + device.fatal() + "; its QPs are in ERR and flushed");
        }
        if (n == 0 && overflowed != 0) {
            throw new VerbsException(Errno.EIO, "CQ " + handle + " overflowed: " + overflowed
                + " completion(s) lost; the CQ is in error");
        }
        return n;
    }

    CompletionRing ring() {
        return ring;
    }

    /** Flushing waits for room rather than lose a flush completion. */
    boolean hasRoomForFlush() {
        return ring.hasRoom();
    }


    @Override
    public void close() {
        if (!closed) {
            if (unacked.get() != 0) {
                throw new VerbsException(Errno.EBUSY, "CQ " + handle + " has " + unacked.get() + " unacknowledged "
                    + "completion event(s): ibv_ack_cq_events first (libibverbs would wait for them forever)");
            }
            device.destroyCq(this);
            if (channel != null) {
                channel.cqs.remove(this);
            }
            closed = true;
            arena.close();
        }
    }
}
