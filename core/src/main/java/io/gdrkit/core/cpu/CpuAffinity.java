/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Optional;

/**
 * Which CPUs the calling thread may run on, through Linux's {@code sched_getaffinity}/{@code sched_setaffinity} (pid
 * 0: the calling thread only, not its process). A rank pins the one thread that waits on its peers, as {@code mpirun
 * --bind-to core} pins a rank's process: a spinning waiter that the scheduler moves loses its cache and, on a
 * many-core host, lands on cores that are farther from its peer's. Threads a pinned thread starts inherit its
 * mask; gdrkit's own helpers call {@link #release()} first so that they run where the process may.
 *
 * <p>{@link #unavailable()} says why affinity cannot be used here (another OS, no libc symbol); the calls then
 * throw {@link UnsupportedOperationException} with that reason.
 */
public final class CpuAffinity {
    /** The largest CPU number a mask here holds (glibc's cpu_set_t: 1024 bits). */
    public static final int MAX_CPUS = 1024;
    private static final long MASK_BYTES = MAX_CPUS / 8;

    private static final MethodHandle GET;
    private static final MethodHandle SET;
    private static final StructLayout CAPTURED = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURED.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final String UNAVAILABLE;

    /** The mask the first pin replaced: {@link #release()} gives a thread this one back. */
    private static volatile int[] before;

    static {
        MethodHandle g = null;
        MethodHandle s = null;
        String why = null;
        final String os = System.getProperty("os.name", "unknown");
        if (!os.toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            why = "CPU affinity is Linux's sched_setaffinity; this is " + os;
        } else {
            try {
                final Linker linker = Linker.nativeLinker();
                final FunctionDescriptor fd = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_LONG, ValueLayout.ADDRESS);
                final Linker.Option errno = Linker.Option.captureCallState("errno");
                g = linker.downcallHandle(linker.defaultLookup().findOrThrow("sched_getaffinity"), fd, errno);
                s = linker.downcallHandle(linker.defaultLookup().findOrThrow("sched_setaffinity"), fd, errno);
            } catch (final RuntimeException e) {
                why = "libc has no sched_getaffinity/sched_setaffinity here: " + e.getMessage();
            }
        }
        GET = g;
        SET = s;
        UNAVAILABLE = why;
    }

    private CpuAffinity() {
    }

    /** Why affinity cannot be used on this host, or empty when it can. */
    public static Optional<String> unavailable() {
        return Optional.ofNullable(UNAVAILABLE);
    }

    /**
     * The CPUs the calling thread may run on, ascending.
     *
     * @throws UnsupportedOperationException where {@link #unavailable()} says why
     * @throws IllegalStateException naming the errno when the kernel refuses
     */
    public static int[] allowed() {
        check();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment mask = a.allocate(MASK_BYTES, 8);
            final MemorySegment state = a.allocate(CAPTURED);
            final int rc = (int) GET.invokeExact(state, 0, MASK_BYTES, mask);
            if (rc != 0) {
                throw new IllegalStateException("sched_getaffinity failed: errno " + (int) ERRNO.get(state, 0L));
            }
            return decode(mask);
        } catch (final RuntimeException | Error e) {
            throw e;
        } catch (final Throwable t) {
            throw new IllegalStateException("sched_getaffinity: " + t, t);
        }
    }

    /**
     * Lets the calling thread run only on {@code cpus}. The first call in this process remembers the mask it
     * replaced, for {@link #release()}.
     *
     * @throws IllegalArgumentException when {@code cpus} is empty or names a CPU outside 0..{@value #MAX_CPUS}-1
     * @throws IllegalStateException naming the errno when the kernel refuses (EINVAL: none of them is allowed here)
     */
    public static void set(final int... cpus) {
        check();
        if (cpus.length == 0) {
            throw new IllegalArgumentException("an empty CPU set");
        }
        for (final int c : cpus) {
            if (c < 0 || c >= MAX_CPUS) {
                throw new IllegalArgumentException("CPU " + c + " outside 0.." + (MAX_CPUS - 1));
            }
        }
        if (before == null) {
            synchronized (CpuAffinity.class) {
                if (before == null) {
                    before = allowed();
                }
            }
        }
        apply(cpus);
    }

    /**
     * Gives the calling thread back the mask the process's first {@link #set} replaced (nothing when nothing was
     * set, or where affinity is unavailable): a helper thread started by a pinned thread calls it first.
     */
    public static void release() {
        final int[] b = before;
        if (b != null && UNAVAILABLE == null) {
            apply(b);
        }
    }

    /** CPUs as a list in Linux's own form: {@code 0-3,8,10-11}. */
    public static String describe(final int[] cpus) {
        final int[] c = cpus.clone();
        Arrays.sort(c);
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < c.length; ) {
            int j = i;
            while (j + 1 < c.length && c[j + 1] == c[j] + 1) {
                j++;
            }
            if (sb.length() > 0) {
                sb.append(',');
            }
            sb.append(c[i]);
            if (j > i) {
                sb.append('-').append(c[j]);
            }
            i = j + 1;
        }
        return sb.toString();
    }

    private static void apply(final int[] cpus) {
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment mask = a.allocate(MASK_BYTES, 8);
            for (final int c : cpus) {
                final long word = c / 64;
                mask.setAtIndex(ValueLayout.JAVA_LONG, word, mask.getAtIndex(ValueLayout.JAVA_LONG, word)
                    | 1L << (c % 64));
            }
            final MemorySegment state = a.allocate(CAPTURED);
            final int rc = (int) SET.invokeExact(state, 0, MASK_BYTES, mask);
            if (rc != 0) {
                final int e = (int) ERRNO.get(state, 0L);
                throw new IllegalStateException("sched_setaffinity to CPUs " + describe(cpus) + " failed: "
                    + io.gdrkit.core.Errno.name(e) + (e == io.gdrkit.core.Errno.EINVAL ? " (none of them is one "
                    + "this process may use)" : ""));
            }
        } catch (final RuntimeException | Error e) {
            throw e;
        } catch (final Throwable t) {
            throw new IllegalStateException("sched_setaffinity: " + t, t);
        }
    }

    private static int[] decode(final MemorySegment mask) {
        int count = 0;
        for (long w = 0; w < MASK_BYTES / 8; w++) {
            count += Long.bitCount(mask.getAtIndex(ValueLayout.JAVA_LONG, w));
        }
        final int[] out = new int[count];
        int k = 0;
        for (int w = 0; w < MASK_BYTES / 8; w++) {
            long bits = mask.getAtIndex(ValueLayout.JAVA_LONG, w);
            while (bits != 0) {
                out[k++] = w * 64 + Long.numberOfTrailingZeros(bits);
                bits &= bits - 1;
            }
        }
        return out;
    }

    private static void check() {
        if (UNAVAILABLE != null) {
            throw new UnsupportedOperationException(UNAVAILABLE);
        }
    }
}
