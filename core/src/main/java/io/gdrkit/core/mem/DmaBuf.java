/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.mem;

import io.gdrkit.core.Errno;
import io.gdrkit.core.ErrnoException;


import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The in-process stand-in for the kernel's dma-buf framework, between an exporter (a simulated GPU's
 * {@code cuMemGetHandleForAddressRange}) and an importer (a software provider's {@code ibv_reg_dmabuf_mr}).
 *
 * <p>The file descriptor is real (the exporter creates it, a memfd for a simulated GPU), and the lookup checks it
 * the way {@code dma_buf_get(fd)} does: an fd that is not open is EBADF, an open file that is not a published
 * DMA-BUF is EINVAL. Identity is the fd's {@code /proc/self/fd} link target, recorded at publication, so a closed
 * and reused fd number never reaches the old exporter. What is simulated: no kernel exporter is involved; the
 * importer reaches the memory through {@link Exporter#attach()} in this JVM only.
 */
public final class DmaBuf {
    private static final ConcurrentHashMap<Integer, Entry> EXPORTS = new ConcurrentHashMap<>();

    private DmaBuf() {
    }

    /** The exporter side of a DMA-BUF (the kernel's {@code dma_buf_ops}). */
    public interface Exporter {
        /** Bytes of the exported buffer. */
        long size();

        /**
         * Maps the buffer for an importing device ({@code dma_buf_attach} + {@code dma_buf_map_attachment}): the
         * memory the importer's DMA goes through. Released with {@link #detach}.
         *
         * @throws RuntimeException naming why the exporter refused (buffer freed, aperture full ...)
         */
        DmaMemory attach();

        /** Unmaps an attachment from {@link #attach()}. */
        void detach(DmaMemory attachment);

        /** What is exported, for messages. */
        String describe();
    }

    private record Entry(String identity, Exporter exporter) {
    }

    /**
     * Makes {@code fd} importable as a DMA-BUF of {@code exporter}, replacing whatever an earlier, since closed,
     * file with this number published.
     *
     * @throws IllegalArgumentException when {@code fd} is not an open file of this process
     */
    public static void publish(final int fd, final Exporter exporter) {
        final String identity = identity(fd);
        if (identity == null) {
            throw new IllegalArgumentException("fd " + fd + " is not an open file of this process");
        }
        EXPORTS.put(fd, new Entry(identity, exporter));
    }

    /**
     * The exporter behind {@code fd} ({@code dma_buf_get}).
     *
     * @throws ErrnoException EBADF when {@code fd} is not open; EINVAL when it is open but not a published DMA-BUF
     */
    public static Exporter get(final int fd) {
        final String identity = identity(fd);
        if (identity == null) {
            EXPORTS.remove(fd);
            throw new ErrnoException(Errno.EBADF, "fd " + fd + " is not an open file descriptor");
        }
        final Entry e = EXPORTS.get(fd);
        if (e == null || !e.identity.equals(identity)) {
            throw new ErrnoException(Errno.EINVAL, "fd " + fd + " (" + identity + ") is not a DMA-BUF exported in "
                + "this process");
        }
        return e.exporter;
    }

    /**
     * Closes a DMA-BUF fd (close(2)) and forgets its publication. MRs registered from it keep their attachment,
     * as with the kernel's reference counting. Also closes fds of real exporters (the CUDA driver).
     */
    public static void close(final int fd) {
        if (fd < 0) {
            return;
        }
        EXPORTS.remove(fd);
        Native.close(fd);
    }

    /** The link target of {@code /proc/self/fd/N}, or null when the fd is not open. */
    private static String identity(final int fd) {
        if (fd < 0) {
            return null;
        }
        try {
            return Files.readSymbolicLink(Path.of("/proc/self/fd", Integer.toString(fd))).toString();
        } catch (final IOException | UnsupportedOperationException e) {
            return null;
        }
    }

    /** close(2) through FFM: the fd came from native code (memfd_create, the CUDA driver), not from Java. */
    // native access is this class's purpose; the JVM must run with --enable-native-access=ALL-UNNAMED
    @SuppressWarnings("restricted")
    private static final class Native {
        private static final MethodHandle CLOSE = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().findOrThrow("close"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));

        static void close(final int fd) {
            try {
                final int ignored = (int) CLOSE.invokeExact(fd);
            } catch (final Throwable t) {
                // closing is best effort: the fd is being given up either way
            }
        }
    }
}
