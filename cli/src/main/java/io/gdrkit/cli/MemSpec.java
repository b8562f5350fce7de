/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.util.Locale;
import picocli.CommandLine;

/**
 * Where the buffers live ({@code --mem}): {@code host}, {@code gpu} (the GPU that {@code --gpu} names) or
 * {@code gpu:N} (CUDA device N, perftest's {@code --use_cuda=N}).
 *
 * @param gpu     buffers in GPU memory
 * @param ordinal with {@code gpu:N}: N; else -1
 */
record MemSpec(boolean gpu, int ordinal) {
    static final MemSpec HOST = new MemSpec(false, -1);
    static final MemSpec GPU = new MemSpec(true, -1);

    /** gpu:N. */
    boolean cudaOrdinal() {
        return ordinal >= 0;
    }

    @Override
    public String toString() {
        return !gpu ? "host" : ordinal < 0 ? "gpu" : "gpu:" + ordinal;
    }

    static final class Converter implements CommandLine.ITypeConverter<MemSpec> {
        @Override
        public MemSpec convert(final String value) {
            final String t = value.trim().toLowerCase(Locale.ROOT);
            if (t.equals("host")) {
                return HOST;
            }
            if (t.equals("gpu")) {
                return GPU;
            }
            if (t.startsWith("gpu:")) {
                try {
                    final int n = Integer.parseInt(t.substring(4));
                    if (n >= 0) {
                        return new MemSpec(true, n);
                    }
                } catch (final NumberFormatException e) {
                    // said below
                }
            }
            throw new CommandLine.TypeConversionException("'" + value + "' is not host, gpu or gpu:N");
        }
    }
}
