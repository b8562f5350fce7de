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
        return bind(how, localRank, 1, launcherVariable(System.getenv()));
    }

    /** The environment variables by which a process knows it is one rank that a launcher started. */
    static final java.util.List<String> LAUNCHED = java.util.List.of(
        io.gdrkit.comm.config.CommConfiguration.BOOTSTRAP_ID.name(), "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
        "SLURM_PROCID", "LOCAL_RANK");

    /** {@return the first of {@link #LAUNCHED} that {@code env} sets, or null} */
    static String launcherVariable(final java.util.Map<String, String> env) {
        for (final String v : LAUNCHED) {
            final String x = env.get(v);
            if (x != null && !x.isBlank()) {
                return v;
            }
        }
        return null;
    }

    /**
     * As above, for a rank of {@code localRanks} on its host; {@code launcher} is the variable that says a launcher
     * started this process (null: none), which {@link CollContext.Bind#AUTO} needs to bind.
     */
    static String bind(final Setting<CollContext.Bind> how, final int localRank, final int localRanks,
                       final String launcher) {
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
            if (how.value() == CollContext.Bind.AUTO) {
                if (launcher == null) {
                    return "none (auto: not a rank process of a launcher (none of " + String.join(", ", LAUNCHED)
                        + " set): ranks that are threads of one JVM stay unpinned; " + setting + ")";
                }
                if (localRanks > allowed.length) {
                    return "none (auto: " + localRanks + " ranks on this host, " + allowed.length + " CPUs this "
                        + "process may use: some would share one; " + setting + ")";
                }
            }
            final int cpu = allowed[localRank % allowed.length];
            CpuAffinity.set(cpu);
            return "cpu " + cpu + " (local rank " + localRank + " of CPUs " + CpuAffinity.describe(allowed) + ", "
                + (how.value() == CollContext.Bind.AUTO ? "auto: " + launcher + " set, " + localRanks
                + " ranks on this host, " + allowed.length + " CPUs; " : "") + setting + ")";
        } catch (final IllegalStateException e) {
            return "none: " + e.getMessage() + " (" + setting + ")";
        }
    }
}
