/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.verbs.QpState;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * The QPs a device's engines visit each duty cycle (the active set). A QP with nothing to do for any engine for
 * {@link #PARK_AFTER} consecutive cycles is parked: left out of the scan until something gives it work. Under duty
 * that is a packet for it ({@link #touch} by the receiver), modify_qp, and the move to ERR; from any thread, a post
 * to its send queue ({@link #wakeAfterPost}), which pushes it on a lock-free intrusive stack that the next
 * {@link #refresh} drains. No allocation on any path.
 *
 * <p>Lost wake-ups are excluded as in Dekker's protocol: the NIC sets {@code parked}, fences, then looks at the
 * queue again; the poster rings the doorbell, fences, then looks at {@code parked}. At least one of them sees the
 * other's write, so either the NIC keeps the QP or the poster wakes it. QPs whose work the NIC cannot see being
 * posted never park: UD QPs (the UD engine has its own list), QPs whose doorbell a direct poster (IBGDA) writes,
 * and QPs in SQD or ERR (drain reporting and flushing).
 */
final class ScanSet {
    /** Idle duty cycles before a QP is parked: a QP between two messages of a ping-pong stays in the scan. */
    static final int PARK_AFTER = 1024;
    /**
     * Duty cycles between two looks for idle QPs: the look costs a few loads per scanned QP, which a ping-pong's
     * short cycles would feel every cycle; a QP is parked once idle at {@code PARK_AFTER / SWEEP_EVERY} looks in a
     * row.
     */
    static final int SWEEP_EVERY = 64;
    private static final VarHandle PARKED;
    private static final VarHandle WOKEN;

    static {
        try {
            final MethodHandles.Lookup l = MethodHandles.lookup();
            PARKED = l.findVarHandle(SoftQp.class, "parked", int.class);
            WOKEN = l.findVarHandle(ScanSet.class, "woken", SoftQp.class);
        } catch (final ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final SoftDevice dev;
    /** The scanned QPs, [0, count); replaced when it grows. Under duty. */
    private SoftQp[] qps = new SoftQp[8];
    private int count;
    /** Head of the stack of QPs woken by posters since the last refresh (linked through {@code wokenNext}). */
    @SuppressWarnings("unused")
    private volatile SoftQp woken;
    private int cycle;
    /** Whether idle QPs are parked at all ({@code gdrkit.nic.scan.park}); set before any QP exists. */
    private boolean parking = true;
    private long parks;
    private long wakes;

    ScanSet(final SoftDevice dev) {
        this.dev = dev;
    }

    /** The QPs to visit: the first {@link #count()} entries. Under duty; valid until the next refresh. */
    SoftQp[] qps() {
        return qps;
    }

    int count() {
        return count;
    }

    /** Under duty: the QP is (back) in the scan. Idempotent. */
    void touch(final SoftQp qp) {
        qp.idleCycles = 0;
        if (qp.scanned) {
            return;
        }
        if (qp.parked != 0) {
            PARKED.compareAndSet(qp, 1, 0); // a poster may have woken it already: then it is on the stack too
        }
        qp.scanned = true;
        if (count == qps.length) {
            qps = Arrays.copyOf(qps, count * 2);
        }
        qps[count++] = qp;
    }

    /** Under duty: a destroyed QP leaves the scan (and is skipped if it is still on the woken stack). */
    void remove(final SoftQp qp) {
        for (int i = 0; i < count; i++) {
            if (qps[i] == qp) {
                System.arraycopy(qps, i + 1, qps, i, count - i - 1);
                qps[--count] = null;
                break;
            }
        }
        qp.scanned = false;
    }

    /**
     * Any thread, after publishing work in the QP's send queue (the doorbell's release store): wakes it if the NIC
     * parked it. The fence orders the doorbell before the read of {@code parked} (Dekker, see the class comment).
     */
    /** Before the first QP: false keeps every QP in the scan, and posts skip the handshake's fence. */
    void parking(final boolean on) {
        parking = on;
    }

    void wakeAfterPost(final SoftQp qp) {
        if (!parking) {
            return; // nothing is ever parked: no wake-up can be lost
        }
        VarHandle.fullFence();
        if (qp.parked != 0 && PARKED.compareAndSet(qp, 1, 0)) {
            SoftQp head;
            do {
                head = woken;
                qp.wokenNext = head;
            } while (!WOKEN.compareAndSet(this, head, qp));
        }
    }

    /**
     * Under duty, once per duty cycle: takes the woken QPs back into the scan, and every {@link #SWEEP_EVERY} cycles
     * parks those idle for about {@link #PARK_AFTER} cycles. Returns how many QPs were woken.
     */
    int refresh() {
        int n = 0;
        if (woken != null) {
            SoftQp q = (SoftQp) WOKEN.getAndSet(this, (SoftQp) null);
            while (q != null) {
                final SoftQp next = q.wokenNext;
                q.wokenNext = null;
                if (!q.scanned && dev.qp(q.qpn) == q) {
                    touch(q);
                    n++;
                }
                q = next;
            }
            wakes += n;
        }
        if ((++cycle & (SWEEP_EVERY - 1)) != 0 || !parking) {
            return n;
        }
        int j = 0;
        for (int i = 0; i < count; i++) {
            final SoftQp qp = qps[i];
            if (idle(qp)) {
                if (++qp.idleCycles >= PARK_AFTER / SWEEP_EVERY && park(qp)) {
                    qp.scanned = false;
                    parks++;
                    continue;
                }
            } else {
                qp.idleCycles = 0;
            }
            qps[j++] = qp;
        }
        for (int i = j; i < count; i++) {
            qps[i] = null;
        }
        count = j;
        return n;
    }

    /** Parks the QP unless work appeared meanwhile; returns whether it is parked. */
    private boolean park(final SoftQp qp) {
        PARKED.setVolatile(qp, 1);
        VarHandle.fullFence();
        if (idle(qp)) {
            return true;
        }
        // work came: keep it. If a poster already took the park back, the QP is also on the woken stack; the
        // drain finds it scanned and leaves it.
        PARKED.compareAndSet(qp, 1, 0);
        return false;
    }

    /** Nothing for any engine: no send work, nothing outstanding, no timer, no response owed. */
    private static boolean idle(final SoftQp qp) {
        final int s = qp.state;
        if (qp.ud || qp.directOwned || s == QpState.SQD || s == QpState.ERR) {
            return false;
        }
        final long producer = qp.sq.doorbell().producer();
        return qp.reqHead == producer && qp.compTail == producer && qp.timerDeadline == 0 && qp.rnrWaitUntil == 0
            && qp.resources.isEmpty();
    }

    /** QPs parked since the device started. */
    long parks() {
        return parks;
    }

    /** QPs woken by a post since the device started. */
    long wakes() {
        return wakes;
    }
}
