/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * One setting of a module's catalogue ({@code <Module>Configuration}, Aeron's {@code Configuration} style): its name,
 * default, what is valid, a one-line description, and where it is read from. A Context reads the setting only through
 * {@link #read(SettingsReader)}, which goes through {@link SettingsReader} so that the value's {@link Source} is still
 * recorded; a setter's value goes through {@link #given(Object)}, which checks it with the same rule and records it as
 * {@link Source#FLAG}.
 *
 * <p>{@link #validate(String)} parses a text exactly as a read would, without recording anything: the check a
 * command line runs on {@code --set NAME=VALUE} before doing any work (with {@link Catalogues#find(String)}).
 *
 * @param <T> the parsed value's type
 */
public final class SettingDef<T> {
    /** Where a setting's value may come from besides a setter or flag. */
    public enum Origin {
        /** An environment variable ({@code NCCL_*}, {@code GDRKIT_*}). */
        ENVIRONMENT,
        /** A JVM system property ({@code gdrkit.*}). */
        PROPERTY
    }

    private final String name;
    private final T defaultValue;
    private final String defaultText;
    private final String valid;
    private final String doc;
    private final Function<String, T> parser;
    private final Function<T, String> format;
    private final String readBy;

    private SettingDef(final String name, final T defaultValue, final String defaultText, final String valid,
                       final String doc, final Function<String, T> parser, final Function<T, String> format) {
        this(name, defaultValue, defaultText, valid, doc, parser, format, "");
    }

    private SettingDef(final String name, final T defaultValue, final String defaultText, final String valid,
                       final String doc, final Function<String, T> parser, final Function<T, String> format,
                       final String readBy) {
        this.name = requireName(name);
        this.defaultValue = defaultValue;
        this.defaultText = Objects.requireNonNull(defaultText, "defaultText");
        this.valid = Objects.requireNonNull(valid, "valid");
        this.doc = Objects.requireNonNull(doc, "doc");
        this.parser = Objects.requireNonNull(parser, "parser");
        this.format = Objects.requireNonNull(format, "format");
        this.readBy = Objects.requireNonNull(readBy, "readBy");
        if (doc.isBlank() || doc.contains("\n")) {
            throw new IllegalArgumentException(name + ": the description must be one non-blank line");
        }
    }

    /**
     * A setting with its own parser.
     *
     * @param name    the variable or property name
     * @param dflt    the default ({@code null} allowed: "unset")
     * @param valid   what is valid, for documentation and messages
     * @param doc     one line saying what the setting does
     * @param parser  parses a text; throws {@link IllegalArgumentException} naming the setting, the text and what it
     *                expected (see {@link #bad(String, String)})
     * @param <T>     the value's type
     * @return the descriptor
     */
    public static <T> SettingDef<T> of(final String name, final T dflt, final String valid, final String doc,
                                       final Function<String, T> parser) {
        return new SettingDef<>(name, dflt, String.valueOf(dflt), valid, doc, parser, String::valueOf);
    }

    /** An integer in {@code [min, max]}; a malformed value reads {@code name=text is not an integer in [min, max]}. */
    public static SettingDef<Integer> integer(final String name, final int dflt, final int min, final int max,
                                              final String doc) {
        final String want = "an integer in [" + min + ", " + max + "]";
        return new SettingDef<>(name, dflt, String.valueOf(dflt), min + ".." + max, doc, s -> {
            final long v = parseLong(name, s, want);
            if (v < min || v > max) {
                throw badValue(name, s, want);
            }
            return (int) v;
        }, String::valueOf);
    }

    /** A long in {@code [min, max]}. */
    public static SettingDef<Long> longValue(final String name, final long dflt, final long min, final long max,
                                             final String doc) {
        final String want = "an integer in [" + min + ", " + max + "]";
        return new SettingDef<>(name, dflt, String.valueOf(dflt), min + ".." + max, doc, s -> {
            final long v = parseLong(name, s, want);
            if (v < min || v > max) {
                throw badValue(name, s, want);
            }
            return v;
        }, String::valueOf);
    }

    /** A flag: {@code 0}, {@code 1}, {@code true} or {@code false}. */
    public static SettingDef<Boolean> flag(final String name, final boolean dflt, final String doc) {
        return new SettingDef<>(name, dflt, String.valueOf(dflt), "flag: 0, 1, true, false", doc,
            s -> switch (s.trim().toLowerCase(Locale.ROOT)) {
                case "1", "true" -> true;
                case "0", "false" -> false;
                default -> throw badValue(name, s, "0, 1, true or false");
            }, String::valueOf);
    }

    /** Free text, trimmed. */
    public static SettingDef<String> text(final String name, final String dflt, final String doc) {
        return new SettingDef<>(name, dflt, dflt == null || dflt.isEmpty() ? "unset" : dflt, "text", doc,
            String::trim, String::valueOf);
    }

    /** One of an enum's constants by name, case-insensitive, {@code -} read as {@code _}; formatted in lower case. */
    public static <E extends Enum<E>> SettingDef<E> choice(final String name, final E dflt, final Class<E> type,
                                                           final String doc) {
        final String all = String.join(", ", Arrays.stream(type.getEnumConstants())
            .map(e -> e.name().toLowerCase(Locale.ROOT)).toList());
        return new SettingDef<>(name, dflt, dflt == null ? "unset" : dflt.name().toLowerCase(Locale.ROOT), all, doc,
            s -> {
                try {
                    return Enum.valueOf(type, s.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
                } catch (final IllegalArgumentException e) {
                    throw badValue(name, s, "one of " + Arrays.toString(type.getEnumConstants()));
                }
            }, e -> e.name().toLowerCase(Locale.ROOT));
    }

    /** The same setting with the default shown as {@code text} in documentation (a computed or symbolic default). */
    public SettingDef<T> defaultText(final String text) {
        return new SettingDef<>(name, defaultValue, text, valid, doc, parser, format, readBy);
    }

    /** The same setting with {@code text} as what is valid in documentation. */
    public SettingDef<T> valid(final String text) {
        return new SettingDef<>(name, defaultValue, defaultText, text, doc, parser, format, readBy);
    }

    /** The same setting whose values a setter records as {@code format(value)} (the raw text of a flag). */
    public SettingDef<T> format(final Function<T, String> f) {
        return new SettingDef<>(name, defaultValue, defaultText, valid, doc, parser, f, readBy);
    }

    /** The same setting, documented as read by {@code reader} (the Context or class that reads it). */
    public SettingDef<T> readBy(final String reader) {
        return new SettingDef<>(name, defaultValue, defaultText, valid, doc, parser, format, reader);
    }

    /** The Context or class that reads the setting, as documentation shows it ("" when the catalogue says). */
    public String readBy() {
        return readBy;
    }

    /** The variable or property name. */
    public String name() {
        return name;
    }

    /** The default value (may be {@code null}: unset). */
    public T defaultValue() {
        return defaultValue;
    }

    /** The default as documentation shows it. */
    public String defaultText() {
        return defaultText;
    }

    /** What is valid, as documentation shows it. */
    public String valid() {
        return valid;
    }

    /** One line saying what the setting does. */
    public String doc() {
        return doc;
    }

    /**
     * Where the value is read from besides a setter or flag: the environment for {@code NCCL_*} and {@code GDRKIT_*}
     * names, a system property otherwise (the rule {@link SettingsReader} applies).
     */
    public Origin origin() {
        return SettingsReader.isEnvironmentName(name) ? Origin.ENVIRONMENT : Origin.PROPERTY;
    }

    /** Reads the setting with its default; the reader records it with its source. */
    public Setting<T> read(final SettingsReader reader) {
        return reader.read(name, defaultValue, parser);
    }

    /** Reads the setting with a default a caller chose (a lab's own default); recorded as {@link Source#DEFAULT}. */
    public Setting<T> read(final SettingsReader reader, final T dflt) {
        return reader.read(name, dflt, parser);
    }

    /** Parses {@code text} as a read would, without recording it. */
    public T parse(final String text) {
        return parser.apply(Objects.requireNonNull(text, name));
    }

    /**
     * Checks that {@code text} is a valid value of this setting (parses and is in range), as
     * {@link #read(SettingsReader)} would find it.
     *
     * @return the parsed value
     * @throws IllegalArgumentException naming the setting, the text and what was expected
     */
    public T validate(final String text) {
        return parse(text);
    }

    /**
     * A setter's value, checked by the same rule as a read ({@code format(value)} parsed again) and recorded as
     * {@link Source#FLAG}.
     *
     * @throws IllegalArgumentException naming the setting when the value is out of range
     */
    public Setting<T> given(final T value) {
        final String raw = format.apply(value);
        parse(raw);
        return new Setting<>(name, value, Source.FLAG, raw);
    }

    /** The message a parser throws: {@code name=text is not want}. */
    public IllegalArgumentException bad(final String text, final String want) {
        return badValue(name, text, want);
    }

    private static IllegalArgumentException badValue(final String name, final String text, final String want) {
        return new IllegalArgumentException(name + "=" + text + " is not " + want);
    }

    private static long parseLong(final String name, final String s, final String want) {
        try {
            return Long.parseLong(s.trim());
        } catch (final NumberFormatException e) {
            throw badValue(name, s, want);
        }
    }

    private static String requireName(final String name) {
        Objects.requireNonNull(name, "name");
        if (!name.matches("gdrkit(\\.[a-z0-9]+)+|(NCCL|GDRKIT)_[A-Z0-9_]+")) {
            throw new IllegalArgumentException("setting name " + name + " is neither gdrkit.<lower.dotted> nor "
                + "NCCL_/GDRKIT_<UPPER>");
        }
        return name;
    }

    @Override
    public String toString() {
        return name + " (default " + defaultText + "; " + valid + ")";
    }
}
