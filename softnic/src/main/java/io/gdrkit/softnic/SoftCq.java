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
    final int handle;
    private final Arena arena = Arena.ofShared();
    private final CompletionRing ring;
    private volatile long overflowed;
    private volatile boolean closed;

    SoftCq(final SoftDevice device, final int handle, final int cqe) {
        this.device = device;
        this.handle = handle;
        this.ring = new CompletionRing(arena, cqe);
    }

    /** NIC side; returns false (and reports the overflow) when the ring is full. */
    boolean post(final long wrId, final int status, final int opcode, final int byteLen, final int imm,
                 final int qpNum, final int srcQp, final int wcFlags) {
        if (!ring.hasRoom()) {
            if (overflowed++ == 0) {
                device.raise(new AsyncEvent(AsyncEventType.CQ_ERR, handle, "CQ " + handle + " overflow ("
                    + ring.depth() + " entries): a completion of QP " + qpNum + " was lost"));
            }
            return false;
        }
        ring.post(wrId, status, opcode, byteLen, imm, qpNum, srcQp, wcFlags, 0);
        return true;
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
            throw new VerbsException(Errno.EIO, "device " + device.name() + " failed (DEVICE_FATAL): "
                + device.fatal() + "; its QPs are in ERR and flushed");
        }
        if (n == 0 && overflowed != 0) {
            throw new VerbsException(Errno.EIO, "CQ " + handle + " overflowed: " + overflowed
                + " completion(s) lost; the CQ is in error");
        }
        return n;
    }

    /** Flushing waits for room rather than lose a flush completion. */
    boolean hasRoomForFlush() {
        return ring.hasRoom();
    }


    @Override
    public void close() {
        if (!closed) {
            device.destroyCq(this);
            closed = true;
            arena.close();
        }
    }
}
