/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import java.util.Locale;

/** Where the ranks' software NICs exchange packets. */
public enum Fabric {
    /** Ranks are threads of one JVM; their NICs share one in-process driver. */
    INJVM,
    /** Ranks are processes of one host; the fabric lives in shared memory ({@code /dev/shm}), named after the run. */
    SHM,
    /** Ranks anywhere; each rank's fabric port travels through the bootstrap. */
    TCP;

    /**
     * {@return the lower-case name the engine, the CLI and the docs use ({@code injvm}, {@code shm}, {@code tcp})}
     */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The fabric named {@code s} ({@code injvm}, {@code shm} or {@code tcp}, any case).
     *
     * @param s the name
     * @return the fabric
     * @throws IllegalArgumentException naming the allowed values
     */
    public static Fabric parse(final String s) {
        for (final Fabric f : values()) {
            if (f.wireName().equalsIgnoreCase(s == null ? "" : s.trim())) {
                return f;
            }
        }
        throw new IllegalArgumentException("fabric '" + s + "' is not injvm, shm or tcp");
    }
}
