/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm;

import io.gdrkit.core.config.Setting;
import io.gdrkit.core.cpu.CpuAffinity;
import java.util.Locale;
import java.util.Optional;

/** Where a rank's collectives thread runs ({@code gdrkit.coll.bind}). */
final class ThreadBinding {
    private ThreadBinding() {
    }

    /**
     * Pins the calling thread (the one that opened the communicator and will run its collectives) as
     * {@code gdrkit.coll.bind} says; returns what was done. A refusal by the OS is not an error: the rank runs where
     * the scheduler puts it, and the description says why.
     */
    static String bind(final Setting<CollContext.Bind> how, final int localRank) {
        final String setting = how.name() + "=" + (how.raw() != null ? how.raw() : how.value().name()
            .toLowerCase(Locale.ROOT)) + " (" + how.source().name().toLowerCase(Locale.ROOT) + ")";
        if (how.value() == CollContext.Bind.NONE) {
            return "none (" + setting + ")";
        }
        final Optional<String> why = CpuAffinity.unavailable();
        if (why.isPresent()) {
            return "none: " + why.get() + " (" + setting + ")";
        }
        try {
            final int[] allowed = CpuAffinity.allowed();
            final int cpu = allowed[localRank % allowed.length];
            CpuAffinity.set(cpu);
            return "cpu " + cpu + " (local rank " + localRank + " of CPUs " + CpuAffinity.describe(allowed) + ", "
                + setting + ")";
        } catch (final IllegalStateException e) {
            return "none: " + e.getMessage() + " (" + setting + ")";
        }
    }
}
