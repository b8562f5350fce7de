/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * The one place a component reads its {@code NCCL_*} / {@code GDRKIT_*} environment variables or {@code gdrkit.*}
 * properties. Each read
 * is parsed and range-checked once, recorded with its {@link Source}, and a malformed value is an
 * {@link IllegalArgumentException} that names the variable, the text and what was expected. A Context calls this from
 * its {@code conclude()}; nothing on a data path reads the environment.
 *
 * <p>Overrides (a flag or setter) win over the environment and properties, which win over defaults. A reader may be
 * shared by threads (ranks of one JVM): its record of reads is synchronized.
 */
public final class SettingsReader {
    private final Map<String, String> env;
    private final Map<String, String> props;
    private final Map<String, String> overrides;
    /** Synchronized: ranks that are threads of one JVM may share a reader and conclude their contexts at once. */
    private final List<Setting<?>> recorded = Collections.synchronizedList(new ArrayList<>());

    /**
     * @param env       environment variables (usually {@code System.getenv()}); read for {@code NCCL_*} names
     * @param props     system properties as strings; read for {@code gdrkit.*} names
     * @param overrides values given by flags or setters; they win and are recorded as {@link Source#FLAG}
     */
    public SettingsReader(final Map<String, String> env, final Map<String, String> props,
                          final Map<String, String> overrides) {
        this.env = Map.copyOf(env);
        this.props = Map.copyOf(props);
        this.overrides = Map.copyOf(overrides);
    }

    /**
     * Values set for this whole process by its command line ({@code gdrkit --set NAME=VALUE}), any name: they win
     * over the environment and the properties in every {@link #ofProcess()} reader, recorded as {@link Source#FLAG}.
     */
    private static final Map<String, String> PROCESS_OVERRIDES = new java.util.concurrent.ConcurrentHashMap<>();

    /** Reads the process's environment and system properties, with the process's {@code --set} values on top. */
    public static SettingsReader ofProcess() {
        return new SettingsReader(System.getenv(), systemProperties(""), processOverrides());
    }

    /** Sets {@code name} to {@code value} for every later {@link #ofProcess()} reader of this process. */
    public static void setProcessOverride(final String name, final String value) {
        PROCESS_OVERRIDES.put(name, value);
    }

    /** Takes back a {@link #setProcessOverride} (the previous value, or none when {@code value} is null). */
    public static void restoreProcessOverride(final String name, final String value) {
        if (value == null) {
            PROCESS_OVERRIDES.remove(name);
        } else {
            PROCESS_OVERRIDES.put(name, value);
        }
    }

    /**
     * The process's {@code --set} values as a child JVM receives them: {@code -Dname=value} for property names (to
     * put before the main class), sorted by name.
     */
    public static List<String> processOverrideFlags() {
        final List<String> out = new ArrayList<>();
        new java.util.TreeMap<>(PROCESS_OVERRIDES).forEach((k, v) -> {
            if (!isEnvironmentName(k)) {
                out.add("-D" + k + "=" + v);
            }
        });
        return out;
    }

    /** The process's {@code --set} values of environment names ({@code NCCL_*}, {@code GDRKIT_*}), for a child. */
    public static Map<String, String> processOverrideEnvironment() {
        final Map<String, String> out = new java.util.TreeMap<>();
        PROCESS_OVERRIDES.forEach((k, v) -> {
            if (isEnvironmentName(k)) {
                out.put(k, v);
            }
        });
        return out;
    }

    /** A snapshot of the process's {@code --set} values, by name. */
    public static Map<String, String> processOverrides() {
        return Map.copyOf(PROCESS_OVERRIDES);
    }

    /**
     * A snapshot of the JVM's system properties whose names start with {@code prefix} ("" for all), as strings: what
     * a Context reads its {@code gdrkit.<component>.*} properties from when no map was given to it.
     */
    public static Map<String, String> systemProperties(final String prefix) {
        final Map<String, String> p = new java.util.HashMap<>();
        System.getProperties().forEach((k, v) -> {
            if (String.valueOf(k).startsWith(prefix)) {
                p.put(String.valueOf(k), String.valueOf(v));
            }
        });
        return p;
    }

    /** Reads only {@code env} (tests, or a child's environment). */
    public static SettingsReader ofEnv(final Map<String, String> env) {
        return new SettingsReader(env, Map.of(), Map.of());
    }

    /** The same environment and properties with {@code more} overrides (flags) on top of this reader's. */
    public SettingsReader withOverrides(final Map<String, String> more) {
        final Map<String, String> all = new java.util.HashMap<>(overrides);
        all.putAll(more);
        return new SettingsReader(env, props, all);
    }

    /** An integer in {@code [min, max]}. */
    public Setting<Integer> integer(final String name, final int dflt, final int min, final int max) {
        return read(name, dflt, s -> {
            final int v;
            try {
                v = Integer.parseInt(s.trim());
            } catch (final NumberFormatException e) {
                throw bad(name, s, "an integer in [" + min + ", " + max + "]");
            }
            if (v < min || v > max) {
                throw bad(name, s, "an integer in [" + min + ", " + max + "]");
            }
            return v;
        });
    }

    /** A long in {@code [min, max]}. */
    public Setting<Long> longValue(final String name, final long dflt, final long min, final long max) {
        return read(name, dflt, s -> {
            final long v;
            try {
                v = Long.parseLong(s.trim());
            } catch (final NumberFormatException e) {
                throw bad(name, s, "an integer in [" + min + ", " + max + "]");
            }
            if (v < min || v > max) {
                throw bad(name, s, "an integer in [" + min + ", " + max + "]");
            }
            return v;
        });
    }

    /** A flag: {@code 0/1} or {@code true/false} (NCCL uses 0/1, gdrkit properties true/false). */
    public Setting<Boolean> flag(final String name, final boolean dflt) {
        return read(name, dflt, s -> switch (s.trim().toLowerCase(Locale.ROOT)) {
            case "1", "true" -> true;
            case "0", "false" -> false;
            default -> throw bad(name, s, "0, 1, true or false");
        });
    }

    /** Free text (an interface list, a plugin name). */
    public Setting<String> text(final String name, final String dflt) {
        return read(name, dflt, String::trim);
    }

    /** One of an enum's constants, by name, case-insensitive, '-' read as '_'. */
    public <E extends Enum<E>> Setting<E> choice(final String name, final E dflt, final Class<E> type) {
        return read(name, dflt, s -> {
            try {
                return Enum.valueOf(type, s.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
            } catch (final IllegalArgumentException e) {
                throw bad(name, s, "one of " + java.util.Arrays.toString(type.getEnumConstants()));
            }
        });
    }

    /** Any value with its own parser; the parser throws IllegalArgumentException naming what it expected. */
    public <T> Setting<T> read(final String name, final T dflt, final Function<String, T> parse) {
        final Setting<T> s;
        if (overrides.containsKey(name)) {
            s = new Setting<>(name, parse.apply(overrides.get(name)), Source.FLAG, overrides.get(name));
        } else if (isEnvironmentName(name) && present(env.get(name))) {
            s = new Setting<>(name, parse.apply(env.get(name)), Source.ENVIRONMENT, env.get(name));
        } else if (!isEnvironmentName(name) && present(props.get(name))) {
            s = new Setting<>(name, parse.apply(props.get(name)), Source.PROPERTY, props.get(name));
        } else {
            s = new Setting<>(name, dflt, Source.DEFAULT, null);
        }
        recorded.add(s);
        return s;
    }

    /** Every setting read so far, in order (a snapshot): what a settings table or a report prints. */
    public List<Setting<?>> recorded() {
        synchronized (recorded) {
            return List.copyOf(recorded);
        }
    }

    /**
     * Whether {@code name} is read from the environment: {@code NCCL_*} and {@code GDRKIT_*} names are environment
     * variables; the rest are system properties.
     */
    public static boolean isEnvironmentName(final String name) {
        return name.startsWith("NCCL_") || name.startsWith("GDRKIT_");
    }

    private static boolean present(final String v) {
        return v != null && !v.isBlank();
    }

    private static IllegalArgumentException bad(final String name, final String text, final String want) {
        return new IllegalArgumentException(name + "=" + text + " is not " + want);
    }
}
