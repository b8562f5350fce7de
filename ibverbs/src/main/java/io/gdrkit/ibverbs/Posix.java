/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The two libc calls the event paths need: {@code poll(2)} with a timeout (so no thread waits on a verbs fd for
 * ever) and {@code fcntl(2)} to put a verbs fd in O_NONBLOCK (so a read after a spurious wake-up returns EAGAIN
 * instead of blocking), as rdma-core's own examples do for {@code async_fd}.
 */
final class Posix {
    private static final Linker LINKER = Linker.nativeLinker();
    /** {@code int poll(struct pollfd *, nfds_t, int)}. */
    private static final MethodHandle POLL = LINKER.downcallHandle(LINKER.defaultLookup().find("poll").orElseThrow(),
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), Linker.Option.captureCallState("errno"));
    /** {@code int fcntl(int, int, ...)}: variadic from the third argument. */
    private static final MethodHandle FCNTL = LINKER.downcallHandle(LINKER.defaultLookup().find("fcntl")
        .orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
        Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    /** O_NONBLOCK on Linux (x86-64 and aarch64). */
    static final int O_NONBLOCK = 0x800;
    private static final short POLLIN = 1;
    private static final MemoryLayout STATE = Linker.Option.captureStateLayout();

    private Posix() {
    }

    /**
     * Adds O_NONBLOCK to {@code fd}'s status flags.
     *
     * @throws VerbsException with fcntl's errno, naming {@code what}
     */
    static void nonBlocking(final int fd, final String what) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = a.allocate(STATE);
            final int flags = Native.call(() -> (int) FCNTL.invokeExact(st, fd, F_GETFL, 0));
            if (flags < 0) {
                final int e = IbvLibrary.errnoOf(st);
                throw new VerbsException(e, "fcntl(" + what + " fd " + fd + ", F_GETFL): " + Errno.name(e));
            }
            final int rc = Native.call(() -> (int) FCNTL.invokeExact(st, fd, F_SETFL, flags | O_NONBLOCK));
            if (rc < 0) {
                final int e = IbvLibrary.errnoOf(st);
                throw new VerbsException(e, "fcntl(" + what + " fd " + fd + ", F_SETFL O_NONBLOCK): " + Errno.name(e));
            }
        }
    }

    /** {@code fd}'s status flags (tests check O_NONBLOCK). */
    static int statusFlags(final int fd) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment st = a.allocate(STATE);
            return Native.call(() -> (int) FCNTL.invokeExact(st, fd, F_GETFL, 0));
        }
    }

    /**
     * Waits up to {@code timeoutMs} for {@code fd} to be readable.
     *
     * @param pollfd 8 bytes of scratch (a {@code struct pollfd}) the caller owns, so a wait allocates nothing
     * @return true when readable, false when the time ran out (or a signal interrupted the wait)
     */
    static boolean readable(final MemorySegment pollfd, final MemorySegment state, final int fd,
                            final int timeoutMs, final String what) {
        pollfd.set(JAVA_INT, 0, fd);
        pollfd.set(JAVA_SHORT, 4, POLLIN);
        pollfd.set(JAVA_SHORT, 6, (short) 0);
        final int n = Native.call(() -> (int) POLL.invokeExact(state, pollfd, 1L, timeoutMs));
        if (n < 0) {
            final int e = IbvLibrary.errnoOf(state);
            if (e == Errno.EINTR) {
                return false;
            }
            throw new VerbsException(e, "poll(" + what + " fd " + fd + "): " + Errno.name(e));
        }
        return n > 0;
    }

    /**
     * Waits until {@code fd} is readable or {@code deadlineNanos} (System.nanoTime) passes; the scratch is the
     * calling thread's own, so any number of threads may wait on one fd at once.
     */
    static boolean readableBy(final int fd, final long deadlineNanos, final String what) {
        final long left = deadlineNanos - System.nanoTime();
        final int ms = (int) Math.min(Integer.MAX_VALUE, (Math.max(0, left) + 999_999) / 1_000_000);
        try (Arena wait = Arena.ofConfined()) {
            return readable(wait.allocate(8, 4), state(wait), fd, ms, what);
        }
    }

    /** A capture-state segment for {@link #readable}. */
    static MemorySegment state(final Arena a) {
        return a.allocate(STATE);
    }
}
