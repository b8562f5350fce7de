/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.comm.CollOp;
import io.gdrkit.comm.CollWorld;
import io.gdrkit.comm.DataType;
import io.gdrkit.comm.RedOp;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine;

/**
 * The closed sets the options take, as picocli types: a value outside the set is a usage error that lists the set,
 * and the set is the option's completion candidates. Lower-case names, '-' for '_'.
 */
final class Choices {
    private Choices() {
    }

    /** The fabric between the NICs. */
    enum Fabric {
        INJVM, SHM, TCP;

        String label() {
            return name().toLowerCase(Locale.ROOT);
        }

        @Override
        public String toString() {
            return label();
        }
    }

    /** --provider: which verbs provider (soft, native) or, for devices and doctor, which view. */
    enum Provider {
        SOFT, NATIVE, ALL, HOST;

        @Override
        public String toString() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    static String label(final Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** Converter by label for an enum; the candidates are its labels. */
    abstract static class EnumConverter<E extends Enum<E>> implements CommandLine.ITypeConverter<E>, Iterable<String> {
        private final Class<E> type;

        EnumConverter(final Class<E> type) {
            this.type = type;
        }

        @Override
        public E convert(final String value) {
            for (final E e : type.getEnumConstants()) {
                if (label(e).equalsIgnoreCase(value.trim()) || e.name().equalsIgnoreCase(value.trim())) {
                    return e;
                }
            }
            throw new CommandLine.TypeConversionException("'" + value + "' is not one of " + String.join(", ", this));
        }

        @Override
        public Iterator<String> iterator() {
            return Arrays.stream(type.getEnumConstants()).map(Choices::label).iterator();
        }
    }

    /** injvm, shm, tcp; "jvm" is read as injvm. */
    static final class FabricConverter extends EnumConverter<Fabric> {
        FabricConverter() {
            super(Fabric.class);
        }

        @Override
        public Fabric convert(final String value) {
            return value.trim().equalsIgnoreCase("jvm") ? Fabric.INJVM : super.convert(value);
        }
    }

    static final class ProviderConverter extends EnumConverter<Provider> {
        ProviderConverter() {
            super(Provider.class);
        }
    }

    /** A converter through a library's own parser (which accepts aliases); the candidates are the main names. */
    abstract static class ParsedConverter<T> implements CommandLine.ITypeConverter<T>, Iterable<String> {
        private final java.util.function.Function<String, T> parse;
        private final List<String> names;

        ParsedConverter(final java.util.function.Function<String, T> parse, final List<String> names) {
            this.parse = parse;
            this.names = names;
        }

        @Override
        public T convert(final String value) {
            try {
                return parse.apply(value.trim());
            } catch (final IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not one of " + String.join(", ",
                    names));
            }
        }

        @Override
        public Iterator<String> iterator() {
            return names.iterator();
        }
    }

    /** -d: nccl-tests' data types. */
    static final class DataTypeConverter extends ParsedConverter<DataType> {
        DataTypeConverter() {
            super(DataType::parse, List.of("int8", "int32", "int64", "half", "bfloat16", "float", "double"));
        }
    }

    /** -o: the reductions. */
    static final class RedOpConverter extends ParsedConverter<RedOp> {
        RedOpConverter() {
            super(RedOp::parse, List.of("sum", "prod", "min", "max"));
        }
    }

    /** --transport: NET/IB (software NICs) or NET/Socket. */
    static final class TransportConverter extends ParsedConverter<CollWorld.TransportKind> {
        TransportConverter() {
            super(CollWorld.TransportKind::parse, List.of("ib", "socket"));
        }
    }

    /** coll's OP. */
    static final class CollOpConverter extends ParsedConverter<CollOp> {
        CollOpConverter() {
            super(CollOp::parse, List.of("allreduce", "allgather", "reduce-scatter", "broadcast", "reduce",
                "alltoall", "sendrecv"));
        }
    }
}
