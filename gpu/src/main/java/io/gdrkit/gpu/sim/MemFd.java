/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.sim;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * A memfd standing in for the DMA-BUF a simulated GPU exports: a real file descriptor of the buffer's size, so that
 * code handing fds around (registration by fd) runs, while nothing pretends a real dma-buf exporter exists.
 */
// native access is this class's purpose; the JVM must run with --enable-native-access=ALL-UNNAMED
@SuppressWarnings("restricted")
final class MemFd {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle MEMFD_CREATE = LINKER.downcallHandle(
        LINKER.defaultLookup().findOrThrow("memfd_create"),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle FTRUNCATE = LINKER.downcallHandle(
        LINKER.defaultLookup().findOrThrow("ftruncate"),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(
        LINKER.defaultLookup().findOrThrow("close"),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));

    private MemFd() {
    }

    /** A memfd of {@code size} bytes, or -1. */
    static int create(final String name, final long size) {
        try (Arena a = Arena.ofConfined()) {
            final int fd = (int) MEMFD_CREATE.invokeExact(a.allocateFrom(name), 1 /* MFD_CLOEXEC */);
            if (fd < 0) {
                return -1;
            }
            if ((int) FTRUNCATE.invokeExact(fd, size) != 0) {
                close(fd);
                return -1;
            }
            return fd;
        } catch (final Throwable t) {
            return -1;
        }
    }

    /** Closes an fd returned by an export. */
    static void close(final int fd) {
        try {
            final int ignored = (int) CLOSE.invokeExact(fd);
        } catch (final Throwable t) {
            // closing is best effort
        }
    }
}
