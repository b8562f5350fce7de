/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.core.config.SettingsReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The {@code -Dname=value} flags that hand this process's {@code gdrkit.*} properties on to a child JVM it starts
 * (a perf server, coll or shmem ranks), so both sides run with the same settings. The properties are taken from
 * {@link SettingsReader#systemProperties}, the snapshot each component's Context reads them from, not by scanning
 * {@link System#getProperties()} here; they are passed on verbatim, and the child's Context reads (and records as
 * property-sourced) each one as this process's would.
 */
final class ForwardedProperties {
    private ForwardedProperties() {
    }

    /** The flags for this process's system properties under any of {@code prefixes}, sorted by name. */
    static List<String> flags(final String... prefixes) {
        final Map<String, String> all = new TreeMap<>();
        for (final String p : prefixes) {
            all.putAll(SettingsReader.systemProperties(p));
        }
        return flags(all);
    }

    /**
     * {@code -Dname=value} for each of {@code properties}, sorted by name. Each is one argument of the child's
     * command line (ProcessBuilder, no shell), so a value with spaces or '=' arrives as it was.
     */
    static List<String> flags(final Map<String, String> properties) {
        final List<String> out = new ArrayList<>(properties.size());
        new TreeMap<>(properties).forEach((k, v) -> out.add("-D" + k + "=" + v));
        return out;
    }
}
