/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.host;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

/**
 * The process's open-file limit (Linux {@code RLIMIT_NOFILE}, through {@code getrlimit}/{@code setrlimit}), and
 * {@link #exhaust()}: fault injection that leaves the process without a free descriptor, so that a test can show
 * a listener meeting EMFILE in {@code accept} backs off and serves again once descriptors are free.
 */
public final class FileDescriptorLimit {
    private static final int RLIMIT_NOFILE = 7; // Linux, every architecture gdrkit runs on
    private static final MethodHandle GET;
    private static final MethodHandle SET;
    private static final String UNAVAILABLE;

    static {
        MethodHandle g = null;
        MethodHandle s = null;
        String why = null;
        final String os = System.getProperty("os.name", "unknown");
        if (!os.toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            why = "RLIMIT_NOFILE is read here through Linux's getrlimit; this is " + os;
        } else {
            try {
                final Linker linker = Linker.nativeLinker();
                final FunctionDescriptor fd = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                    ValueLayout.ADDRESS);
                g = linker.downcallHandle(linker.defaultLookup().findOrThrow("getrlimit"), fd);
                s = linker.downcallHandle(linker.defaultLookup().findOrThrow("setrlimit"), fd);
            } catch (final RuntimeException e) {
                why = "libc has no getrlimit/setrlimit here: " + e.getMessage();
            }
        }
        GET = g;
        SET = s;
        UNAVAILABLE = why;
    }

    private FileDescriptorLimit() {
    }

    /** Why the limit cannot be read or set here, or empty when it can. */
    public static Optional<String> unavailable() {
        return Optional.ofNullable(UNAVAILABLE);
    }

    /** The soft limit: one more than the highest descriptor number {@code open} may return. */
    public static long soft() {
        return get()[0];
    }

    /** Sets the soft limit (at most the hard one); descriptors open above it stay open. */
    public static void setSoft(final long limit) {
        final long hard = get()[1];
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment r = a.allocate(16, 8);
            r.set(ValueLayout.JAVA_LONG, 0, limit);
            r.set(ValueLayout.JAVA_LONG, 8, hard);
            if ((int) SET.invokeExact(RLIMIT_NOFILE, r) != 0) {
                throw new IllegalStateException("setrlimit(RLIMIT_NOFILE, " + limit + ") failed");
            }
        } catch (final RuntimeException | Error e) {
            throw e;
        } catch (final Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static long[] get() {
        if (UNAVAILABLE != null) {
            throw new UnsupportedOperationException(UNAVAILABLE);
        }
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment r = a.allocate(16, 8);
            if ((int) GET.invokeExact(RLIMIT_NOFILE, r) != 0) {
                throw new IllegalStateException("getrlimit(RLIMIT_NOFILE) failed");
            }
            return new long[] {r.get(ValueLayout.JAVA_LONG, 0), r.get(ValueLayout.JAVA_LONG, 8)};
        } catch (final RuntimeException | Error e) {
            throw e;
        } catch (final Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Leaves the process without a free descriptor until {@link Exhaustion#close()}: the soft limit drops to the
     * lowest free descriptor number and the gaps below it are filled with {@code /dev/null}, so every {@code open},
     * {@code socket} and {@code accept} of any thread fails with EMFILE meanwhile. Sockets created before stay
     * usable (a pre-opened channel may still connect). Close promptly: the whole process is affected.
     */
    public static Exhaustion exhaust() {
        final long before = soft();
        // classes load from files: whatever runs while no descriptor is free must be loaded before
        preload(Exhaustion.class);
        final List<FileChannel> fillers = new ArrayList<>();
        final Path devNull = Path.of("/dev/null");
        try {
            setSoft(lowestFree());
            for (int i = 0; i < 4096; i++) {
                try {
                    fillers.add(FileChannel.open(devNull, StandardOpenOption.READ));
                } catch (final IOException e) {
                    return new Exhaustion(before, fillers, e.getMessage());
                }
            }
            throw new IllegalStateException("4096 descriptors opened under the lowered limit: not exhausted");
        } catch (final RuntimeException | Error e) {
            new Exhaustion(before, fillers, "").close();
            throw e;
        }
    }

    /**
     * Loads and initialises {@code classes} now: a class first used while the process is exhausted cannot be read
     * from its file (NoClassDefFoundError). A test calls this for its own nested classes before {@link #exhaust()}.
     */
    public static void preload(final Class<?>... classes) {
        for (final Class<?> c : classes) {
            try {
                java.lang.invoke.MethodHandles.lookup().ensureInitialized(c);
            } catch (final IllegalAccessException e) {
                try {
                    Class.forName(c.getName(), true, c.getClassLoader());
                } catch (final ClassNotFoundException impossible) {
                    throw new IllegalStateException(impossible);
                }
            }
        }
    }

    private static long lowestFree() {
        final TreeSet<Integer> used = new TreeSet<>();
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            s.forEach(p -> {
                try {
                    used.add(Integer.parseInt(p.getFileName().toString()));
                } catch (final NumberFormatException ignored) {
                    // not a descriptor
                }
            });
        } catch (final IOException e) {
            throw new UncheckedIOException(e);
        }
        int fd = 0;
        while (used.contains(fd)) {
            fd++;
        }
        // the descriptor that listed /proc/self/fd is closed again: it was the lowest free one
        return fd;
    }

    /** The process out of descriptors; {@link #close()} restores the limit and closes the fillers. */
    public static final class Exhaustion implements AutoCloseable {
        private final long before;
        private final List<FileChannel> fillers;
        private final String error;

        private Exhaustion(final long before, final List<FileChannel> fillers, final String error) {
            this.before = before;
            this.fillers = fillers;
            this.error = error;
        }

        /**
         * Takes any descriptor freed since (another thread closed one below the limit), so that the next
         * {@code open} or {@code accept} fails again; returns how many were taken.
         */
        public int refill() {
            int n = 0;
            for (int i = 0; i < 4096; i++) {
                try {
                    fillers.add(FileChannel.open(Path.of("/dev/null"), StandardOpenOption.READ));
                    n++;
                } catch (final IOException e) {
                    return n;
                }
            }
            throw new IllegalStateException("4096 descriptors opened under the lowered limit: not exhausted");
        }

        /** What the open that found no free descriptor said (for instance "Too many open files"). */
        public String error() {
            return error;
        }

        @Override
        public void close() {
            setSoft(before);
            for (final FileChannel f : fillers) {
                try {
                    f.close();
                } catch (final IOException ignored) {
                    // closing anyway
                }
            }
        }
    }
}
