/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.shmem.MoeRun;
import io.gdrkit.shmem.ShmemContext;
import io.gdrkit.shmem.ShmemException;
import io.gdrkit.shmem.ShmemMode;
import java.io.PrintWriter;
import java.time.Duration;
import io.gdrkit.comm.bootstrap.Bootstrap;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.BootstrapException;
import io.gdrkit.comm.bootstrap.UniqueId;
import io.gdrkit.comm.launch.Launcher;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;
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

    @Option(names = "--bytes", defaultValue = "1024", converter = Sizes.IntConverter.class, description = "Bytes "
        + "per token, a multiple of 8, with K or M (default ${DEFAULT-VALUE}).")
    int bytes;

    /** sim:* runs Java kernels; cuda:N the shmem_moe PTX kernel, every PE on that GPU. */
    @picocli.CommandLine.Mixin
    Mixins.Gpu gpuOption;

    private String gpu;

    @Option(names = "--seed", defaultValue = "1", description = "Router seed.")
    long seed;

    /** injvm: the PEs are threads of this JVM; shm: --np processes, one PE each (or, launched, this one PE). */
    @picocli.CommandLine.Mixin
    Mixins.Fabric fabricOption;

    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    private String fabric;
    private boolean json;

    @Override
    public Integer call() throws Exception {
        final PrintWriter out = spec.commandLine().getOut();
        fabric = fabricOption.require(spec.commandLine(), List.of(Choices.Fabric.INJVM, Choices.Fabric.SHM)).label();
        json = jsonOption.json;
        if (gpuOption.spec.kind() == GpuSpec.Kind.CUDA_RANK) {
            throw new ParameterException(spec.commandLine(), "--gpu takes sim:<preset> or cuda:N here, not cuda:rank");
        }
        gpu = gpuOption.spec.toString();
        if (tokens < 1 || tokens > 1024 || bytes < 8 || bytes > 65536 || bytes % 8 != 0) {
            throw new ParameterException(spec.commandLine(), tokens < 1 || tokens > 1024 ? "--tokens must be 1 .. "
                + "1024, not " + tokens : "--bytes must be a multiple of 8 in 8 .. 65536, not " + bytes);
        }
        if (np < 2 || np > 8) {
            throw new ParameterException(spec.commandLine(), "--np must be 2..8");
        }
        final ShmemMode m = switch (mode) {
            case "ibrc" -> ShmemMode.IBRC;
            case "ibgda" -> ShmemMode.IBGDA;
            default -> throw new ParameterException(spec.commandLine(), "--mode must be ibrc or ibgda");
        };
        final boolean launched = BootstrapContext.launched(System.getenv());
        if (launched && fabric.equals("injvm")) {
            throw new ParameterException(spec.commandLine(), "--fabric injvm joins threads of one JVM; a launched "
                + "PE needs --fabric shm");
        }
        gpuOption.spec.requirePresent("--gpu");
        if (!launched && fabric.equals("shm")) {
            return selfLaunch();
        }
        final boolean printer = !launched || System.getenv(BootstrapContext.ENV_RANK).equals("0");
        final MoeRun.Result r;
        try {
            final ShmemContext c = new ShmemContext().nPes(np).gpu(gpu).mode(m).seed(seed).sqDepth(64)
                .timeout(Duration.ofSeconds(60));
            r = launched ? MoeRun.runProcess(c, Bootstrap.init(BootstrapContext.fromProcess()), tokens, bytes)
                : MoeRun.run(c, tokens, bytes);
        } catch (final BootstrapException e) {
            failed(out, "BOOTSTRAP", e.getMessage());
            return Main.EXIT_FAILURE;
        } catch (final ShmemException e) {
            if (e.reason() == ShmemException.Reason.BAD_ARGUMENT) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
            failed(out, e.reason().name(), e.getMessage());
            return Main.EXIT_FAILURE;
        }
        if (!printer) {
            return r.verified() ? 0 : Main.EXIT_FAILURE;
        }
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            root.put("simulated", true);
            root.put("result", r);
            out.println(new ObjectMapper().writeValueAsString(root));
        } else {
            out.printf(Locale.ROOT, "# shmem-moe --np %d --mode %s --fabric " + fabric
                    + ": software NIC (simulated), GPU " + gpu
                    + (r.simulated() ? " (simulated kernels)" : " (CUDA kernel shmem_moe)") + "%n"
                    + "tokens/PE %d x %d B, tokens per expert %s, kernel %.1f ms on PE 0: %s%n", np, mode, tokens, bytes,
                Arrays.toString(r.tokensPerExpert()), r.kernelMillis(), r.verified() ? "every byte right"
                    : r.mismatches() + " BYTES WRONG");
            out.println("# time split on PE 0: " + io.gdrkit.shmem.MoeRun.format(r.split()));
            out.println("# measured: " + r.split().method());
            out.println("# device: " + r.device());
        }
        return r.verified() ? 0 : Main.EXIT_FAILURE;
    }

    /**
     * A run that ended in a named error: with --json one JSON object (error, reason, simulated), so that a stream of
     * JSON lines stays parseable; else the text line "# FAILED: ...".
     */
    private void failed(final PrintWriter out, final String reason, final String message) throws Exception {
        if (json) {
            final Map<String, Object> root = new LinkedHashMap<>();
            root.put("error", message);
            root.put("reason", reason);
            root.put("simulated", true);
            out.println(new ObjectMapper().writeValueAsString(root));
        } else {
            out.println("# FAILED: " + message);
        }
        out.flush();
    }

    /** Starts --np processes of this same command under a launcher, one PE each; rank 0 prints. */
    private int selfLaunch() {
        final PrintWriter err = spec.commandLine().getErr();
        // the ranks see the gdrkit.* properties this process was given (NIC progress, timeouts ...)
        final List<String> cmd = ForwardedProperties.gdrkitCommand();
        final List<String> args = spec.commandLine().getParseResult().originalArgs();
        cmd.add("shmem-moe");
        cmd.addAll(args.subList(1, args.size()));
        cmd.addAll(Settings.childArgs());
        final Launcher.Result r = Launcher.run(new Launcher.Spec(np, 0, np, null, new InetSocketAddress(
            InetAddress.getLoopbackAddress(), 0), cmd, System.getenv("GDRKIT_TOKEN"), Duration.ofSeconds(120),
            Duration.ofSeconds(120), Map.of()), new Launcher.Listener() {
                @Override
                public void started(final UniqueId id) {
                }

                @Override
                public void rankFailed(final int rank, final int exitCode) {
                    err.println("# gdrkit shmem-moe: PE " + rank + " (a process) exited with " + exitCode);
                    err.flush();
                }
            });
        if (r.exitCode() != 0 && r.rootFailure() != null) {
            err.println("gdrkit shmem-moe: error: " + r.rootFailure());
            err.flush();
        }
        return r.exitCode();
    }
}
