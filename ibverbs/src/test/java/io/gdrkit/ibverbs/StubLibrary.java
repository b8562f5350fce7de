/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Builds src/test/c/stubverbs.c (a libibverbs test double, not a NIC) under target/stub with a given soname tail. */
final class StubLibrary {
    private StubLibrary() {
    }

    /** The built library's path, or null when gcc or the rdma-core headers are missing. */
    static Path build(final String version) throws IOException, InterruptedException {
        return build("stubverbs.c", "libibverbs.so." + version, "/usr/include/infiniband/verbs.h");
    }

    /** The stub librdmacm (src/test/c/stubrdmacm.c), or null when gcc or the rdma-core headers are missing. */
    static Path buildRdmaCm() throws IOException, InterruptedException {
        return build("stubrdmacm.c", "librdmacm-stub.so", "/usr/include/rdma/rdma_cma.h");
    }

    private static Path build(final String source, final String name, final String header)
        throws IOException, InterruptedException {
        if (!Files.exists(Path.of(header))) {
            return null;
        }
        final String version = name;
        final Path dir = Files.createDirectories(Path.of("target/stub").toAbsolutePath());
        final Path lib = dir.resolve(name);
        final Path src = Path.of("src/test/c/" + source).toAbsolutePath();
        if (Files.exists(lib) && Files.getLastModifiedTime(lib).compareTo(Files.getLastModifiedTime(src)) >= 0) {
            return lib; // built from this source already
        }
        final Path tmp = dir.resolve("build-" + version + ".so");
        final Process p;
        try {
            p = new ProcessBuilder("gcc", "-Wall", "-shared", "-fPIC", "-O2", "-o", tmp.toString(),
                src.toString()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("cc-" + version + ".log").toFile()).start();
        } catch (final IOException e) {
            return null;
        }
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new AssertionError("the stub libibverbs does not build: "
                + Files.readString(dir.resolve("cc-" + version + ".log")));
        }
        Files.move(tmp, lib, java.nio.file.StandardCopyOption.ATOMIC_MOVE,
            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        return lib;
    }

}
