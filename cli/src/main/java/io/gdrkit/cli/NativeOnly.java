/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.labs.provider.NativeReadiness;
import java.io.PrintWriter;
import picocli.CommandLine;

/**
 * {@code --provider} for the commands whose experiments run on software NICs only (visibility, ordering, coll):
 * soft runs them; native runs the lab's readiness steps (device found and opened, GPU memory registered), prints
 * them, and ends with the lab's named reason. Without a device the lab ends first, with NO_RDMA_DEVICE and the
 * probe's evidence.
 */
final class NativeOnly {
    private NativeOnly() {
    }

    /**
     * True when the command should run on the software provider (soft); a usage error for anything but soft or
     * native.
     */
    static boolean soft(final CommandLine cl, final Mixins.Provider provider) {
        return provider.require(cl, java.util.EnumSet.of(Choices.Provider.SOFT, Choices.Provider.NATIVE))
            == Choices.Provider.SOFT;
    }

    /** Runs the readiness steps, prints them, then ends with the named reason (never returns normally). */
    static int run(final CommandLine cl, final String what, final String gpuSpec) {
        final PrintWriter out = cl.getOut();
        final NativeReadiness.Result r;
        try {
            r = NativeReadiness.check(what, gpuSpec);
        } catch (final IllegalArgumentException e) {
            throw new CommandLine.ParameterException(cl, e.getMessage());
        }
        out.println("# native provider (libibverbs through FFM): device " + r.device() + ", " + r.port());
        if (r.registration() != null) {
            out.println("# GPU memory registered by " + r.registration().path() + ": " + r.registration().evidence());
        }
        out.flush();
        throw new IllegalStateException(NativeReadiness.notBuilt(what));
    }
}
