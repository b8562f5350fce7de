/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.ibverbs.AbiCompare;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code abi-check}: the native provider's ABI self-check on any host. Compiles the C probe against this host's
 * rdma-core headers (or reads a probe output made elsewhere) and compares every size and offset with the FFM layouts.
 */
@Command(name = "abi-check", mixinStandardHelpOptions = true,
    description = "Compare the native provider's FFM layouts with this host's rdma-core headers (gcc + the probe).")
final class AbiCheckCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--probe-source", defaultValue = "ibverbs/src/test/c/abi_probe.c",
        description = "The probe's C source, compiled with gcc (default: ${DEFAULT-VALUE}).")
    Path source;

    @Option(names = "--probe-output", description = "Read a probe's output instead of compiling it here.")
    Path output;

    @picocli.CommandLine.Mixin
    Mixins.Json jsonOption;

    @picocli.CommandLine.Mixin
    Mixins.SetValues set;

    @Override
    public Integer call() throws IOException, InterruptedException {
        final boolean json = jsonOption.json;
        final Path lines = output != null ? output : compile();
        final Map<String, Long> probe;
        try {
            probe = AbiCompare.parse(Files.readAllLines(lines));
        } catch (final java.nio.file.NoSuchFileException e) {
            throw new ParameterException(spec.commandLine(), "cannot read " + lines + ": no such file");
        } catch (final IOException | IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "cannot read " + lines + ": " + e.getMessage());
        }
        final AbiCompare.Result r = AbiCompare.compare(probe);
        final PrintWriter out = spec.commandLine().getOut();
        if (json) {
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("compared", r.compared());
            m.put("mismatches", r.mismatches());
            m.put("passed", r.passed());
            m.put("probe", lines.toString());
            out.println(new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(m));
        } else {
            out.println("# native provider ABI check: " + r.compared() + " sizes/offsets from " + lines);
            r.mismatches().forEach(x -> out.println("MISMATCH " + x));
            out.println(r.passed() ? "PASS: every size and offset matches the FFM layouts" : "FAIL");
        }
        out.flush();
        return r.passed() ? 0 : Main.EXIT_FAILURE;
    }

    private Path compile() throws IOException, InterruptedException {
        if (!Files.isRegularFile(source)) {
            throw new ParameterException(spec.commandLine(), "cannot read " + source + ": no such file "
                + "(run from the repository root, or give --probe-source)");
        }
        final Path dir = Files.createTempDirectory("gdrkit-abi");
        final Path exe = dir.resolve("abi_probe");
        final Path log = dir.resolve("cc.log");
        final Process cc;
        try {
            cc = new ProcessBuilder("gcc", "-o", exe.toString(), source.toString()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        } catch (final IOException e) {
            throw new ParameterException(spec.commandLine(), "gcc not found (" + e.getMessage() + ")");
        }
        if (!cc.waitFor(120, TimeUnit.SECONDS) || cc.exitValue() != 0) {
            throw new ParameterException(spec.commandLine(), "the probe does not compile against this "
                + "host's headers (apt-get install libibverbs-dev librdmacm-dev): " + Files.readString(log).strip());
        }
        final Path out = dir.resolve("abi.txt");
        final Process p = new ProcessBuilder(exe.toString()).redirectErrorStream(true).redirectOutput(out.toFile())
            .start();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new ParameterException(spec.commandLine(), "the probe failed: " + Files.readString(out));
        }
        return out;
    }
}
