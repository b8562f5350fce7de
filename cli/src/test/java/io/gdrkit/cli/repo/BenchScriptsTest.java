/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli.repo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The measurement scripts under bench/ fail loudly: each one, run with a JDK path that does not exist, exits
 * non-zero within seconds and says why, before it builds, installs or measures anything; and each one sources
 * bench/lib.sh (the JDK lookup, progress and failure handling they share) and runs under {@code set -euo pipefail}.
 */
class BenchScriptsTest {

    static List<Path> scripts() throws IOException {
        try (Stream<Path> files = Files.list(LicenseHeaderTest.root().resolve("bench"))) {
            return files.filter(p -> p.getFileName().toString().endsWith(".sh"))
                .filter(p -> !p.getFileName().toString().equals("lib.sh")).sorted().toList();
        }
    }

    @Test
    void theKeptScriptsAreThere() throws IOException {
        final List<String> names = scripts().stream().map(p -> p.getFileName().toString()).toList();
        assertEquals(List.of("ab-jars.sh", "coll-peers.sh", "coll-vs-mpi.sh", "gpu-paths.sh", "peers.sh", "perf-check.sh"), names,
            "bench/'s scripts changed: add the new one to this list once it sources lib.sh and fails loudly");
    }

    @Test
    void everyScriptSourcesTheSharedLibrary() throws IOException {
        final String lib = Files.readString(LicenseHeaderTest.root().resolve("bench/lib.sh"), StandardCharsets.UTF_8);
        assertTrue(lib.contains("set -euo pipefail"), "lib.sh sets -euo pipefail");
        for (final Path s : scripts()) {
            final String text = Files.readString(s, StandardCharsets.UTF_8);
            assertTrue(text.contains(". \"$(dirname \"${BASH_SOURCE[0]}\")/lib.sh\""), s + " sources bench/lib.sh");
            assertTrue(!text.contains("runtime/bin/java}") && !text.contains("JAVA:-java}"),
                s + " has its own java default instead of lib.sh's lookup");
        }
    }

    @Test
    void aBrokenJdkPathFailsEveryScriptAtOnce() throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/bin/bash")), "needs /bin/bash");
        final Path root = LicenseHeaderTest.root();
        for (final Path s : scripts()) {
            for (final Map<String, String> env : List.of(
                Map.of("JAVA_HOME", "/nonexistent", "JAVA", "/nonexistent/java"),
                Map.of("JAVA", "/nonexistent/java"))) {
                final Path out = Files.createTempDirectory("gdrkit-bench-test");
                final ProcessBuilder pb = new ProcessBuilder("/bin/bash", s.toString()).directory(root.toFile())
                    .redirectErrorStream(true);
                pb.environment().putAll(env);
                pb.environment().put("OUT", out.resolve("out").toString());
                // what would make a script start work, were the JDK check not first
                pb.environment().put("A", "/nonexistent/a.jar");
                pb.environment().put("B", "/nonexistent/b.jar");
                pb.environment().put("SKIP_MPI", "1");
                pb.environment().put("GPU", "sim:h200");
                final long t0 = System.nanoTime();
                final Process p = pb.start();
                final boolean ended = p.waitFor(30, TimeUnit.SECONDS);
                if (!ended) {
                    p.descendants().forEach(ProcessHandle::destroyForcibly);
                    p.destroyForcibly();
                }
                final String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                final long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(ended, s.getFileName() + " still running after 30 s with " + env + ":\n" + output);
                assertNotEquals(0, p.exitValue(), s.getFileName() + " exited 0 with " + env + ":\n" + output);
                assertTrue(output.contains("/nonexistent/java"), s.getFileName() + " names the bad JDK path:\n" + output);
                assertTrue(ms < 10_000, s.getFileName() + " took " + ms + " ms to fail");
                assertTrue(!Files.exists(out.resolve("out")), s.getFileName() + " made its output folder before the JDK check");
                Files.deleteIfExists(out);
            }
        }
    }
}
