/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.cuda.CudaGpu;
import io.gdrkit.gpu.cuda.CudaProbe;
import io.gdrkit.gpu.sim.SimPreset;
import java.util.Locale;
import picocli.CommandLine;

/**
 * A GPU named on the command line: {@code sim:<preset>} (a simulated GPU), {@code cuda:N} (CUDA device N) or
 * {@code cuda:rank} (each rank its own CUDA device, for coll). Parsed and checked when the option is read, so a bad
 * spec is a usage error; {@link #toString()} is the spec text the libraries take.
 */
record GpuSpec(Kind kind, String preset, int ordinal) {
    /** What the spec names. */
    enum Kind { SIM, CUDA, CUDA_RANK }

    /** The simulated presets, as typed. */
    static final String PRESETS = "v100, h100, h200, all-devices, no-gdr";

    /** The forms, for messages and help. */
    static final String FORMS = "sim:<v100|h100|h200|all-devices|no-gdr>, cuda:N or cuda:rank";

    static final GpuSpec SIM_H200 = parse("sim:h200");

    /** @throws IllegalArgumentException naming the forms */
    static GpuSpec parse(final String text) {
        final String t = text.trim().toLowerCase(Locale.ROOT);
        final int colon = t.indexOf(':');
        final String scheme = colon < 0 ? t : t.substring(0, colon);
        final String rest = colon < 0 ? "" : t.substring(colon + 1);
        switch (scheme) {
            case "sim" -> {
                try {
                    return new GpuSpec(Kind.SIM, SimPreset.byLabel(rest).label(), -1);
                } catch (final IllegalArgumentException e) {
                    throw new IllegalArgumentException("'" + text + "' names no simulated GPU (sim:<preset>, presets: "
                        + PRESETS + ")");
                }
            }
            case "cuda" -> {
                if (rest.equals("rank")) {
                    return new GpuSpec(Kind.CUDA_RANK, null, -1);
                }
                try {
                    final int n = Integer.parseInt(rest);
                    if (n >= 0) {
                        return new GpuSpec(Kind.CUDA, null, n);
                    }
                } catch (final NumberFormatException e) {
                    // said below
                }
                throw new IllegalArgumentException("'" + text + "' needs a device number: cuda:N (N >= 0) or "
                    + "cuda:rank");
            }
            default -> throw new IllegalArgumentException("'" + text + "' is not a GPU: " + FORMS);
        }
    }

    boolean simulated() {
        return kind == Kind.SIM;
    }

    boolean cuda() {
        return kind != Kind.SIM;
    }

    /**
     * A CUDA spec whose device this host lacks ends the command with {@link Main#EXIT_NO_HARDWARE}, before any
     * output; a simulated one is always there. {@code cuda:rank} needs one device at least.
     */
    GpuSpec requirePresent(final String option) {
        return requirePresent(option, toString());
    }

    /** {@link #requirePresent(String)}, the option's value shown as typed ({@code --mem gpu:0}). */
    GpuSpec requirePresent(final String option, final String shown) {
        if (!cuda()) {
            return this;
        }
        final CudaProbe probe = CudaGpu.probe();
        final int need = kind == Kind.CUDA ? ordinal + 1 : 1;
        if (!probe.found() || probe.deviceCount() < need) {
            throw new HardwareAbsentException(option + " " + shown + ": this host has " + (probe.found()
                ? probe.deviceCount() + " CUDA device(s)" : "no CUDA GPU (" + probe + ")"));
        }
        return this;
    }

    @Override
    public String toString() {
        return switch (kind) {
            case SIM -> "sim:" + preset;
            case CUDA -> "cuda:" + ordinal;
            case CUDA_RANK -> "cuda:rank";
        };
    }

    /** picocli's converter: a bad spec is a usage error naming the forms. */
    static final class Converter implements CommandLine.ITypeConverter<GpuSpec> {
        @Override
        public GpuSpec convert(final String value) {
            try {
                return parse(value);
            } catch (final IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }
}
