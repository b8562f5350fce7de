/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/** Builds the libcuda test double ({@code src/test/c/fakecuda.c}) for tests that load it in a child JVM. */
final class FakeCudaLib {
    private FakeCudaLib() {
    }

    /** Builds it as {@code target/fakecuda/<name>}; aborts the calling test where no C compiler builds it. */
    static Path build(final String name) throws Exception {
        final Path dir = Files.createDirectories(Path.of("target/fakecuda").toAbsolutePath());
        final Path lib = dir.resolve(name);
        final Path log = dir.resolve("cc-" + name + ".log");
        final Process cc;
        try {
            cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-O1", "-o", lib.toString(),
                Path.of("src/test/c/fakecuda.c").toAbsolutePath().toString()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        } catch (final java.io.IOException e) {
            Assumptions.abort("no C compiler to build the libcuda test double: " + e.getMessage());
            return null;
        }
        // a compiler that runs and fails is a broken double (or a broken shmem_device.cuh, which it includes): a
        // failure, never a skip
        org.junit.jupiter.api.Assertions.assertTrue(cc.waitFor(120, TimeUnit.SECONDS) && cc.exitValue() == 0,
            "the libcuda test double did not build: " + log);
        return lib;
    }

    /**
     * The exit status of the compiler run that built the double: 127 (no compiler) skips the calling test, any
     * other failure fails it.
     */
    static void requireBuilt(final int rc) {
        Assumptions.assumeTrue(rc != 127, "no C compiler to build the libcuda test double");
        org.junit.jupiter.api.Assertions.assertEquals(0, rc, "the libcuda test double did not build (cc exit " + rc
            + "; its log is under target/)");
    }
}
