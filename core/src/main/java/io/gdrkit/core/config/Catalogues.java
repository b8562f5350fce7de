/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * Every {@link SettingsCatalogue} on the class path (found with {@link ServiceLoader}), and a setting by name.
 *
 * <p>The hook for a command line's {@code --set NAME=VALUE}: {@link #validate(String, String)} refuses a name that no
 * catalogue lists and a value that does not parse in the setting's range, with a message naming both, before any work
 * starts:
 *
 * <pre>{@code
 * SettingDef<?> def = Catalogues.validate("gdrkit.nic.window", "0");
 * // IllegalArgumentException: gdrkit.nic.window=0 is not an integer in [1, 4194304]
 * }</pre>
 *
 * {@link #find(String)} answers whether a name is catalogued without checking a value.
 */
public final class Catalogues {
    private static volatile Registry registry;

    private Catalogues() {
    }

    /** Every catalogue, in documentation order. */
    public static List<SettingsCatalogue> all() {
        return registry().catalogues;
    }

    /** Every catalogued setting by name, in documentation order. */
    public static Map<String, SettingDef<?>> byName() {
        return registry().byName;
    }

    /** The setting called {@code name}, if a catalogue lists it. */
    public static Optional<SettingDef<?>> find(final String name) {
        return Optional.ofNullable(registry().byName.get(name));
    }

    /**
     * Checks a {@code NAME=VALUE} given from outside (a command line's {@code --set}) without recording it.
     *
     * @return the setting's descriptor
     * @throws IllegalArgumentException when no catalogue lists {@code name} ({@code unknown setting NAME}), or when
     *                                  {@code value} does not parse in the setting's range (the setting's own message,
     *                                  {@code NAME=VALUE is not ...})
     */
    public static SettingDef<?> validate(final String name, final String value) {
        final SettingDef<?> def = find(name).orElseThrow(() -> new IllegalArgumentException("unknown setting "
            + name + ": no module's catalogue lists it (docs/CONFIGURATION.md lists them all)"));
        def.validate(value);
        return def;
    }

    private static Registry registry() {
        Registry r = registry;
        if (r == null) {
            r = of(ServiceLoader.load(SettingsCatalogue.class, Catalogues.class.getClassLoader()).stream()
                .map(ServiceLoader.Provider::get).toList());
            registry = r;
        }
        return r;
    }

    /**
     * The catalogues in documentation order with their settings by name.
     *
     * @throws IllegalStateException when two catalogues (or one twice) list the same name
     */
    static Registry of(final List<SettingsCatalogue> found) {
        final List<SettingsCatalogue> sorted = new ArrayList<>(found);
        sorted.sort(Comparator.comparingInt(SettingsCatalogue::order).thenComparing(SettingsCatalogue::module));
        final Map<String, SettingDef<?>> names = new LinkedHashMap<>();
        final Map<String, String> owner = new LinkedHashMap<>();
        for (final SettingsCatalogue c : sorted) {
            for (final SettingDef<?> d : c.settings()) {
                final String before = owner.putIfAbsent(d.name(), c.module());
                if (before != null) {
                    throw new IllegalStateException("setting " + d.name() + " is catalogued twice: by " + before
                        + " and by " + c.module());
                }
                names.put(d.name(), d);
            }
        }
        return new Registry(List.copyOf(sorted), java.util.Collections.unmodifiableMap(names));
    }

    /** The catalogues and their settings by name. */
    record Registry(List<SettingsCatalogue> catalogues, Map<String, SettingDef<?>> byName) {
    }
}
