/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.core.config.SettingsReader;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;

/**
 * {@code --set NAME=VALUE}: a setting for this run. Every name goes to {@link SettingsReader}'s process overrides
 * (so each {@link SettingsReader#ofProcess()} reader sees it, recorded as a flag); a property name ({@code gdrkit.*},
 * anything but {@code NCCL_*} and {@code GDRKIT_*}) is also set as a system property, which the code that reads
 * properties directly and the {@code -D} flags handed to child JVMs see. Child gdrkit processes get the same
 * {@code --set} flags ({@link #childArgs()}), other child JVMs {@code -D} flags and environment variables.
 */
final class Settings {
    private Settings() {
    }

    /** NAME=VALUE; the name is letters, digits, '.', '_' and '-'. */
    static final class PairConverter implements CommandLine.ITypeConverter<Map.Entry<String, String>> {
        @Override
        public Map.Entry<String, String> convert(final String value) {
            final int eq = value.indexOf('=');
            final String name = eq < 0 ? "" : value.substring(0, eq).trim();
            if (eq < 0 || name.isEmpty() || !name.chars().allMatch(c -> Character.isLetterOrDigit(c) || c == '.'
                || c == '_' || c == '-')) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not NAME=VALUE (e.g. "
                    + "NCCL_NET_GDR_LEVEL=PHB or gdrkit.coll.nics=2)");
            }
            try {
                // a setting no module reads, or a value outside its range, is refused here, before any work
                io.gdrkit.core.config.Catalogues.validate(name, value.substring(eq + 1));
            } catch (final IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
            return new AbstractMap.SimpleImmutableEntry<>(name, value.substring(eq + 1));
        }
    }

    /** NCCL_* and GDRKIT_* are environment variables; the rest properties (as {@link SettingsReader} reads them). */
    static boolean envName(final String name) {
        return name.startsWith("NCCL_") || name.startsWith("GDRKIT_");
    }

    /** Applies {@code values} to this process; the returned handle takes them back (in-process callers, tests). */
    static Runnable apply(final Map<String, String> values) {
        final Map<String, String> previousOverride = new LinkedHashMap<>();
        final Map<String, String> previousProperty = new LinkedHashMap<>();
        final Map<String, String> now = SettingsReader.processOverrides();
        values.forEach((k, v) -> {
            previousOverride.put(k, now.get(k));
            SettingsReader.setProcessOverride(k, v);
            if (!envName(k)) {
                previousProperty.put(k, System.getProperty(k));
                System.setProperty(k, v);
            }
        });
        return () -> {
            previousOverride.forEach(SettingsReader::restoreProcessOverride);
            previousProperty.forEach((k, v) -> {
                if (v == null) {
                    System.clearProperty(k);
                } else {
                    System.setProperty(k, v);
                }
            });
        };
    }

    /** {@code --set NAME=VALUE} for each of this process's settings: what a child gdrkit command is given. */
    static List<String> childArgs() {
        final List<String> out = new ArrayList<>();
        new java.util.TreeMap<>(SettingsReader.processOverrides()).forEach((k, v) -> {
            out.add("--set");
            out.add(k + "=" + v);
        });
        return out;
    }
}
