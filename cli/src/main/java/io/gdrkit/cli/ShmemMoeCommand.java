/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.labs.shmem.MoeRun;
import io.gdrkit.labs.shmem.ShmemContext;
import io.gdrkit.labs.shmem.ShmemException;
import io.gdrkit.labs.shmem.ShmemMode;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shmem-moe}: MoE-style dispatch and combine with device put-with-signal, byte-checked. */
@Command(name = "shmem-moe", mixinStandardHelpOptions = true,
    description = "MoE-style dispatch/combine on the shmem device API: tokens routed to experts on other PEs with "
        + "put-with-signal, results combined back, byte-checked (simulated GPUs, software NICs).")
final class ShmemMoeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--np", defaultValue = "4", description = "PEs, 2..8.")
    int np;

    @Option(names = "--mode", defaultValue = "ibgda", description = "ibrc or ibgda.")
    String mode;

    @Option(names = "--tokens", defaultValue = "32", description = "Tokens per PE.")
    int tokens;

    @Option(names = "--bytes", defaultValue = "1024", description = "Bytes per token (multiple of 8).")
    int bytes;

    @Option(names = "--gpu", defaultValue = "sim:h200", description = "sim:<preset> (Java kernels) or cuda:N (the "
        + "shmem_moe PTX kernel; every PE on that GPU).")
    String gpu;

    @Option(names = "--seed", defaultValue = "1", description = "Router seed.")
    long seed;

    @Option(names = "--json", description = "One JSON object instead of text.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        final PrintWriter out = spec.commandLine().getOut();
        if (np < 2 || np > 8) {
            throw new ParameterException(spec.commandLine(), "--np must be 2..8");
        }
        final ShmemMode m = switch (mode) {
            case "ibrc" -> ShmemMode.IBRC;
            case "ibgda" -> ShmemMode.IBGDA;
            default -> throw new ParameterException(spec.commandLine(), "--mode must be ibrc or ibgda");
        };
        final MoeRun.Result r;
        try {
            r = MoeRun.run(new ShmemContext().nPes(np).gpu(gpu).mode(m).seed(seed).sqDepth(64)
                .timeout(Duration.ofSeconds(60)), tokens, bytes);
        } catch (final ShmemException e) {
            if (e.reason() == ShmemException.Reason.BAD_ARGUMENT) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
            out.println("# FAILED: " + e.getMessage());
            return Main.EXIT_FAILURE;
        }
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            root.put("simulated", true);
            root.put("result", r);
            out.println(new ObjectMapper().writeValueAsString(root));
        } else {
            out.printf(Locale.ROOT, "# shmem-moe --np %d --mode %s: software NIC (simulated), GPU " + gpu
                    + (r.simulated() ? " (simulated kernels)" : " (CUDA kernel shmem_moe)") + "%n"
                    + "tokens/PE %d x %d B, tokens per expert %s, kernel %.1f ms on PE 0: %s%n", np, mode, tokens, bytes,
                Arrays.toString(r.tokensPerExpert()), r.kernelMillis(), r.verified() ? "every byte right"
                    : r.mismatches() + " BYTES WRONG");
            out.println("# device: " + r.device());
        }
        return r.verified() ? 0 : Main.EXIT_FAILURE;
    }
}
