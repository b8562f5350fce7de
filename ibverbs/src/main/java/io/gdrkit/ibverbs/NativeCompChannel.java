/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.CompletionChannel;
import io.gdrkit.verbs.CompletionQueue;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code struct ibv_comp_channel}. Its fd is made O_NONBLOCK at creation, so a wait is {@code poll(2)} with the
 * caller's timeout and then {@code ibv_get_cq_event}, which can no longer block (a wake-up whose event another
 * thread took reads EAGAIN and the wait goes on until its deadline). The CQ pointer an event carries is looked up
 * among the CQs created on this channel; an unknown one is a named error, never a made-up CQ.
 */
final class NativeCompChannel implements CompletionChannel {
    private final NativeContext ctx;
    final MemorySegment channel;
    private final int fd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment outCq;
    private final MemorySegment outCtx;
    private final Map<Long, NativeCq> cqs = new ConcurrentHashMap<>();
    private volatile boolean closed;

    NativeCompChannel(final NativeContext ctx, final MemorySegment channel) {
        this.ctx = ctx;
        this.channel = channel;
        this.fd = channel.get(JAVA_INT, IbvLayouts.offset(IbvLayouts.COMP_CHANNEL, "fd"));
        Posix.nonBlocking(fd, "comp_channel fd");
        this.outCq = arena.allocate(ADDRESS);
        this.outCtx = arena.allocate(ADDRESS);
    }

    NativeContext context() {
        return ctx;
    }

    void attach(final NativeCq cq) {
        cqs.put(cq.cq.address(), cq);
    }

    void detach(final NativeCq cq) {
        cqs.remove(cq.cq.address());
    }

    @Override
    public CompletionQueue getCqEvent(final long timeoutNanos) {
        final long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        while (true) {
            if (closed) {
                throw new VerbsException(Errno.EBADF, "ibv_get_cq_event: the completion channel was destroyed");
            }
            if (!Posix.readableBy(fd, deadline, "comp_channel fd")) {
                return null;
            }
            final NativeCq cq = take();
            if (cq != null || deadline - System.nanoTime() <= 0) {
                return cq;
            }
        }
    }

    /** One ibv_get_cq_event on the non-blocking fd; null when another reader took the event (EAGAIN). */
    private synchronized NativeCq take() {
        if (closed) {
            throw new VerbsException(Errno.EBADF, "ibv_get_cq_event: the completion channel was destroyed");
        }
        final MemorySegment ch = channel;
        final MemorySegment c = outCq;
        final MemorySegment x = outCtx;
        final int rc = Native.call(() -> (int) ctx.lib.getCqEvent.invokeExact(ch, c, x));
        if (rc != 0) {
            return null;
        }
        final long at = c.get(ADDRESS, 0).address();
        final NativeCq cq = cqs.get(at);
        if (cq == null) {
            throw new VerbsException(Errno.EIO, "ibv_get_cq_event: an event for CQ 0x" + Long.toHexString(at)
                + ", which was not created on this channel");
        }
        cq.eventDelivered();
        return cq;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (!cqs.isEmpty()) {
            throw new VerbsException(Errno.EBUSY, "ibv_destroy_comp_channel: " + cqs.size() + " CQ(s) still use the "
                + "channel");
        }
        final MemorySegment ch = channel;
        Native.check("ibv_destroy_comp_channel", Native.call(() -> (int) ctx.lib.destroyCompChannel.invokeExact(ch)));
        closed = true;
        arena.close();
    }
}
