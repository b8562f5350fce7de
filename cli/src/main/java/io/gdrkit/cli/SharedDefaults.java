/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.util.Map;
import picocli.CommandLine;

/**
 * Each command's default for the options it shares through {@link Mixins} (a mixin declares an option once, for
 * every command; the default may differ by command). {@link Main} adds "(default: X)" to the help of those options.
 */
public final class SharedDefaults implements CommandLine.IDefaultValueProvider {
    /** "command option" to the default value. */
    static final Map<String, String> TABLE = Map.ofEntries(
        Map.entry("coll --fabric", "injvm"),
        Map.entry("coll --mem", "host"),
        Map.entry("coll --provider", "soft"),
        Map.entry("coll --bind", "127.0.0.1"),
        Map.entry("launch --bind", "127.0.0.1"),
        Map.entry("perf --mem", "host"),
        Map.entry("perf --gpu", "sim:h200"),
        Map.entry("perf --provider", "soft"),
        Map.entry("perf --bind", "127.0.0.1"),
        Map.entry("gpu-path --gpu", "sim:h200"),
        Map.entry("crossover --gpu", "sim:h200"),
        Map.entry("topology --gpu", "sim:h200"),
        Map.entry("shmem-perf --gpu", "sim:h200"),
        Map.entry("shmem-moe --gpu", "sim:h200"),
        Map.entry("shmem-moe --fabric", "injvm"),
        Map.entry("visibility --fabric", "shm"),
        Map.entry("visibility --provider", "soft"),
        Map.entry("ordering --provider", "soft"),
        Map.entry("devices --provider", "all"),
        Map.entry("doctor --provider", "host"),
        Map.entry("demo --report", "gdrkit-reports/demo"));

    @Override
    public String defaultValue(final CommandLine.Model.ArgSpec arg) {
        if (!(arg instanceof CommandLine.Model.OptionSpec o) || arg.command() == null) {
            return null;
        }
        return TABLE.get(arg.command().name() + " " + o.longestName());
    }
}
