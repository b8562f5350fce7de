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
    /**
     * The JVM prints its own warnings (a thread it could not start, a full code cache) on standard output by default;
     * a child's standard output is data (JSON rows, a server's port line), so its warnings go to standard error.
     */
    static final List<String> JVM_WARNINGS_TO_STDERR = List.of("-Xlog:disable", "-Xlog:all=warning:stderr");

    private ForwardedProperties() {
    }

    /**
     * The command line that starts gdrkit again in a child JVM, up to the subcommand: this JVM's java, native access,
     * this process's {@code gdrkit.*} properties (so the child's components read what this one's did), this class
     * path and {@link Main}. A mutable list: the caller adds the subcommand and its arguments.
     */
    static List<String> gdrkitCommand() {
        final List<String> cmd = new ArrayList<>();
        cmd.add(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.addAll(JVM_WARNINGS_TO_STDERR);
        cmd.addAll(flags("gdrkit."));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        return cmd;
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
