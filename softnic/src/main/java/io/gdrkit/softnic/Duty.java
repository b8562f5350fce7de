/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.VerbsException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * Who may touch a device's NIC state right now. The hot path only ever tries (a poller that loses simply moves
 * on); control operations (register, modify, destroy) wait for it, with a timeout, so that they never race a
 * packet in flight. This is what makes an MR's keys dead the moment deregistration returns.
 */
final class Duty {
    private static final VarHandle OWNER;

    static {
        try {
            OWNER = MethodHandles.lookup().findVarHandle(Duty.class, "owner", Thread.class);
        } catch (final ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused")
    private volatile Thread owner;
    private int depth;

    boolean tryAcquire() {
        final Thread me = Thread.currentThread();
        if (owner == me) {
            depth++;
            return true;
        }
        if (OWNER.compareAndSet(this, (Thread) null, me)) {
            depth = 1;
            return true;
        }
        return false;
    }

    void release() {
        if (--depth == 0) {
            OWNER.setRelease(this, (Thread) null);
        }
    }

    void acquire(final long timeoutNanos, final String what) {
        final long deadline = System.nanoTime() + timeoutNanos;
        int spins = 0;
        while (!tryAcquire()) {
            if (System.nanoTime() - deadline > 0) {
                throw new VerbsException(Errno.ETIMEDOUT, "timed out after " + timeoutNanos / 1_000_000
                    + " ms waiting for the NIC to be idle to " + what + " (held by " + owner + ")");
            }
            if (++spins < 100) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(10_000);
            }
        }
    }
}
