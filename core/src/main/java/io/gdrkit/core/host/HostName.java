/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.host;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** This machine's host name, looked up once. */
public final class HostName {
    private static volatile String cached;

    private HostName() {
    }

    /** This host's name (the kernel's first; cached), or {@code unknown (why)}. */
    public static String get() {
        String h = cached;
        if (h == null) {
            h = lookup();
            cached = h;
        }
        return h;
    }

    /** The kernel's name first: InetAddress.getLocalHost() may wait on a resolver for seconds. */
    private static String lookup() {
        try {
            final String k = Files.readString(Path.of("/proc/sys/kernel/hostname"), StandardCharsets.UTF_8).strip();
            if (!k.isEmpty()) {
                return k;
            }
        } catch (final IOException | SecurityException ignored) {
            // not Linux: ask the resolver
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (final IOException e) {
            return "unknown (" + e.getMessage() + ")";
        }
    }
}
