/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * The options several commands share, as picocli mixins: one declaration, one type and one check each. A command's
 * own default for a shared option is in {@link SharedDefaults}.
 */
final class Mixins {
    private Mixins() {
    }

    /** {@code --json}. */
    static final class Json {
        @Option(names = "--json", description = "JSON instead of text: one object per line.")
        boolean json;
    }

    /** {@code --report DIR}: checked to be a writable place before the command runs. */
    static final class Report {
        @Option(names = "--report", paramLabel = "DIR", description = "Also write a report folder into DIR "
            + "(Markdown, JSON and, where the command has charts, a self-contained report.html); DIR must be "
            + "writable, which is checked before the run.")
        Path dir;

        /** A usage error, before any work, when DIR cannot be made or written. */
        void check(final CommandLine cl) {
            if (dir == null) {
                return;
            }
            // made now (as the run would make it) and a file written and removed in it: what the run will do
            try {
                Files.createDirectories(dir);
                Files.delete(Files.createTempFile(dir, ".gdrkit-report-check", ".tmp"));
            } catch (final java.io.IOException | UnsupportedOperationException | SecurityException e) {
                throw new CommandLine.ParameterException(cl, "--report " + dir + ": cannot write there ("
                    + Errors.describeWithInput(e) + ")");
            }
        }
    }

    /** {@code --gpu SPEC}. */
    static final class Gpu {
        @Option(names = "--gpu", paramLabel = "SPEC", converter = GpuSpec.Converter.class, description = "The GPU: "
            + "sim:<v100|h100|h200|all-devices|no-gdr> (simulated) or cuda:N (a CUDA GPU); coll also takes cuda:rank "
            + "(each rank the device of its rank number). A cuda:N this host lacks ends with exit code 3.")
        GpuSpec spec;
    }

    /** {@code --mem host|gpu|gpu:N}. */
    static final class Mem {
        @Option(names = "--mem", paramLabel = "host|gpu|gpu:N", converter = MemSpec.Converter.class,
            description = "Where the buffers are: host memory, gpu (the GPU --gpu names) or gpu:N (CUDA GPU N).")
        MemSpec mem;

        /** A usage error for gpu:N where the command takes host or gpu only. */
        MemSpec hostOrGpu(final CommandLine cl) {
            if (mem != null && mem.cudaOrdinal()) {
                throw new CommandLine.ParameterException(cl, "--mem takes host or gpu here (and --gpu cuda:N), not "
                    + mem);
            }
            return mem;
        }
    }

    /** {@code --provider}. */
    static final class Provider {
        @Option(names = "--provider", paramLabel = "PROVIDER", converter = Choices.ProviderConverter.class,
            description = "soft: gdrkit's software NICs (simulated); native: the RDMA devices libibverbs finds (a "
                + "requested device that is absent ends with exit code 3); devices also takes all, doctor host.")
        Choices.Provider provider;

        /** A usage error unless the value is one of {@code allowed}. */
        Choices.Provider require(final CommandLine cl, final Set<Choices.Provider> allowed) {
            if (!allowed.contains(provider)) {
                throw new CommandLine.ParameterException(cl, "--provider takes " + String.join(", ", allowed.stream()
                    .map(Choices.Provider::toString).sorted().toList()) + " here, not " + provider);
            }
            return provider;
        }
    }

    /** {@code --fabric}. */
    static final class Fabric {
        @Option(names = "--fabric", paramLabel = "FABRIC", converter = Choices.FabricConverter.class,
            description = "How the NICs are joined: injvm (threads of this JVM), shm (processes over shared "
                + "memory) or tcp (processes or hosts over TCP).")
        Choices.Fabric fabric;

        /** A usage error unless the value (when given) is one of {@code allowed}. */
        Choices.Fabric require(final CommandLine cl, final List<Choices.Fabric> allowed) {
            if (fabric != null && !allowed.contains(fabric)) {
                throw new CommandLine.ParameterException(cl, "--fabric takes " + String.join(" or ", allowed.stream()
                    .map(Choices.Fabric::label).toList()) + " here, not " + fabric.label());
            }
            return fabric;
        }
    }

    /** {@code --bind} and {@code --token}: where this side listens, and the shared secret of the run. */
    static final class Endpoint {
        @Option(names = "--bind", paramLabel = "ADDR", description = "The address this side's listeners bind "
            + "(loopback by default; 0.0.0.0 opens them to the network, see docs/SECURITY.md).")
        String bind;

        @Option(names = "--token", paramLabel = "SECRET", description = "Shared secret every side must know "
            + "(checked on each hello). Default: the GDRKIT_TOKEN environment variable, else none.")
        String token;

        @Option(names = "--strict", description = "Refuse to listen beyond loopback without a token (else a "
            + "warning on stderr).")
        boolean strict;

        /**
         * Listening beyond loopback without a token lets anyone who reaches the port join: said on stderr before
         * anything listens, or refused with {@code --strict} (a usage error).
         */
        void checkExposure(final picocli.CommandLine cl) {
            if (bind == null || bind.isBlank()) {
                return;
            }
            final boolean loopback;
            try {
                final java.net.InetAddress a = java.net.InetAddress.ofLiteral(bind.trim());
                loopback = a.isLoopbackAddress();
            } catch (final IllegalArgumentException e) {
                return; // a host name: the command checks it, and says so, where it resolves it
            }
            final String env = System.getenv("GDRKIT_TOKEN");
            if (loopback || (token != null && !token.isBlank()) || (env != null && !env.isBlank())) {
                return;
            }
            final String why = "listening on " + bind + " without a token: anyone who reaches it can join (give "
                + "--token or set GDRKIT_TOKEN; docs/SECURITY.md)";
            if (strict) {
                throw new picocli.CommandLine.ParameterException(cl, "--strict: " + why);
            }
            cl.getErr().println("gdrkit " + cl.getCommandName() + ": warning: " + why);
            cl.getErr().flush();
        }
    }

    /** {@code --set NAME=VALUE}, repeatable: a setting for this run (see {@link Settings}). */
    static final class SetValues {
        @Option(names = "--set", paramLabel = "NAME=VALUE", converter = Settings.PairConverter.class,
            description = "A setting for this run, as if it were in the environment (NCCL_*, GDRKIT_*) or a "
                + "-Dgdrkit.* property; wins over both and reaches the processes the command starts. Repeatable.")
        List<Map.Entry<String, String>> pairs = List.of();

        Map<String, String> asMap() {
            final Map<String, String> m = new LinkedHashMap<>();
            pairs.forEach(e -> m.put(e.getKey(), e.getValue()));
            return m;
        }
    }
}
