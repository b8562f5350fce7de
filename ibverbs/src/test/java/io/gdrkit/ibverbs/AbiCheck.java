/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Builds and runs src/test/c/abi_probe.c against the installed rdma-core headers and compares it with layouts. */
final class AbiCheck {
    private AbiCheck() {
    }

    /** What the C compiler says, or a reason it could not be asked. */
    record Probe(Map<String, Long> values, String unavailable) {
    }

    static Probe runProbe() throws IOException, InterruptedException {
        if (!Files.exists(Path.of("/usr/include/infiniband/verbs.h"))) {
            return new Probe(Map.of(), "no rdma-core headers at /usr/include/infiniband/verbs.h (apt-get install "
                + "libibverbs-dev)");
        }
        final Path dir = Files.createDirectories(Path.of("target/abi").toAbsolutePath());
        final Path exe = dir.resolve("abi_probe");
        final Path log = dir.resolve("cc.log");
        final int cc = run(List.of("gcc", "-Wall", "-o", exe.toString(),
            Path.of("src/test/c/abi_probe.c").toAbsolutePath().toString()), log);
        if (cc == 127) {
            return new Probe(Map.of(), "no gcc on PATH");
        }
        if (cc != 0) {
            throw new AssertionError("the ABI probe does not compile against the installed headers:\n"
                + Files.readString(log));
        }
        final Path out = dir.resolve("abi.txt");
        if (run(List.of(exe.toString()), out) != 0) {
            throw new AssertionError("the ABI probe failed:\n" + Files.readString(out));
        }
        final Map<String, Long> values = new LinkedHashMap<>();
        for (final String line : Files.readAllLines(out)) {
            final String[] kv = line.trim().split(" ");
            values.put(kv[0], Long.parseLong(kv[1]));
        }
        return new Probe(values, null);
    }

    static List<String> mismatches(final Map<String, Long> c, final Map<String, Long> java) {
        return AbiCompare.mismatches(c, java);
    }

    private static int run(final List<String> cmd, final Path log) throws IOException, InterruptedException {
        final Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        } catch (final IOException e) {
            return 127;
        }
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out after 120 s waiting for " + cmd.get(0));
        }
        return p.exitValue();
    }
}
