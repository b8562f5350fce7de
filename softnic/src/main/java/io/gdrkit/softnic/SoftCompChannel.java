/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.CompletionChannel;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.VerbsException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;

/**
 * A completion channel: the NIC thread queues an armed CQ here when its completion arrives; one application thread
 * waits in {@link #getCqEvent}. How the wait keeps the NIC moving depends on the driver's progress mode:
 * INVOKER steps every NIC of the driver, OWN_DEVICE the NICs of this channel's CQs, DEDICATED parks (the NIC
 * thread unparks it when it queues an event), DETERMINISTIC waits for the runner (the test) and times out.
 */
final class SoftCompChannel implements CompletionChannel {
    private final SoftVerbsContext context;
    private final ConcurrentLinkedQueue<SoftCq> events = new ConcurrentLinkedQueue<>();
    final CopyOnWriteArrayList<SoftCq> cqs = new CopyOnWriteArrayList<>();
    private volatile Thread waiter;
    private volatile boolean closed;

    SoftCompChannel(final SoftVerbsContext context) {
        this.context = context;
    }

    SoftVerbsContext context() {
        return context;
    }

    boolean isClosed() {
        return closed;
    }

    /** NIC side: an armed CQ got its completion. */
    void signal(final SoftCq cq) {
        events.add(cq);
        final Thread w = waiter;
        if (w != null) {
            LockSupport.unpark(w);
        }
    }

    @Override
    public CompletionQueue getCqEvent(final long timeoutNanos) {
        if (closed) {
            throw new VerbsException(Errno.EBADF, "ibv_get_cq_event on a destroyed completion channel");
        }
        final SoftDevice device = context.device();
        final SoftNicDriver driver = device.driver();
        final long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        waiter = Thread.currentThread();
        try {
            while (true) {
                final SoftCq cq = events.poll();
                if (cq != null) {
                    cq.eventDelivered();
                    return cq;
                }
                if (closed) {
                    throw new VerbsException(Errno.EBADF, "the completion channel was destroyed while waiting");
                }
                final long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                int work = 0;
                switch (driver.context().progressMode()) {
                    case INVOKER -> work = driver.progress();
                    case OWN_DEVICE -> {
                        for (final SoftCq c : cqs) {
                            work += c.device.doWork();
                        }
                    }
                    case DEDICATED -> LockSupport.parkNanos(this, Math.min(left, 1_000_000L));
                    default -> Thread.onSpinWait();
                }
                if (work == 0 && driver.context().progressMode() != SoftNicContext.ProgressMode.DEDICATED) {
                    Thread.onSpinWait();
                }
            }
        } finally {
            waiter = null;
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (!cqs.isEmpty()) {
            throw new VerbsException(Errno.EBUSY, "completion channel still used by " + cqs.size() + " CQ(s)");
        }
        closed = true;
        final Thread w = waiter;
        if (w != null) {
            LockSupport.unpark(w);
        }
    }
}
