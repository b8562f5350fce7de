/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.util.Locale;
import picocli.CommandLine;

/** Byte counts on the command line: digits with an optional K, M or G (powers of 1024), in every size option. */
final class Sizes {
    private Sizes() {
    }

    /** @throws IllegalArgumentException naming the forms */
    static long parse(final String s) {
        final String t = s.trim().toUpperCase(Locale.ROOT);
        final String num = t.endsWith("K") || t.endsWith("M") || t.endsWith("G") ? t.substring(0, t.length() - 1) : t;
        final long unit = t.endsWith("G") ? 1L << 30 : t.endsWith("M") ? 1L << 20 : t.endsWith("K") ? 1L << 10 : 1;
        try {
            if (num.isEmpty() || !num.chars().allMatch(Character::isDigit)) {
                throw new NumberFormatException();
            }
            return Math.multiplyExact(Long.parseLong(num), unit);
        } catch (final NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("'" + s + "' is not a byte count (e.g. 8, 64K, 16M, 1G)");
        }
    }

    /** A byte count as a long. */
    static final class Converter implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(final String value) {
            try {
                return parse(value);
            } catch (final IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** A byte count that must fit an int (message sizes of one work request). */
    static final class IntConverter implements CommandLine.ITypeConverter<Integer> {
        @Override
        public Integer convert(final String value) {
            final long v = new Converter().convert(value);
            if (v > Integer.MAX_VALUE) {
                throw new CommandLine.TypeConversionException("'" + value + "' is more than " + Integer.MAX_VALUE
                    + " bytes");
            }
            return (int) v;
        }
    }
}
