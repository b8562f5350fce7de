/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.gpu.cuda.CudaDriver;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CUDA NIC path's batching keeps RDMA's visibility rule: a completion is raised only after the copies it covers
 * have landed. Runs {@link NicStagingProbe} in a child JVM against the libcuda test double in its deferred mode,
 * where a host-to-device copy lands only at a synchronisation point, and where device memory can be read behind the
 * driver's back at the moment a completion is polled. Skipped where no {@code cc} is installed.
 */
class CudaNicStagingTest {

    @Test
    void completionsComeOnlyAfterTheStagedCopiesLanded() throws Exception {
        final Path src = Path.of("src/test/c/fakecuda.c").toAbsolutePath();
        final Path dir = Files.createDirectories(Path.of("target/fakecuda-staging").toAbsolutePath());
        final Path lib = dir.resolve("libfakecuda.so");
        final Process cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-O1", "-o", lib.toString(), src.toString())
            .redirectErrorStream(true).redirectOutput(dir.resolve("cc.log").toFile()).start();
        org.junit.jupiter.api.Assertions.assertTrue(cc.waitFor(120, TimeUnit.SECONDS) && cc.exitValue() == 0,
            "the libcuda test double did not build: " + dir.resolve("cc.log"));
        final String java = ProcessHandle.current().info().command().orElse("java");
        final Path log = dir.resolve("probe.log");
        // the staged path: GPU-to-GPU packets carry their bytes (the NIC's source ring, which makes them direct, is
        // off; CudaNicDirectTest runs it)
        final ProcessBuilder pb = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED",
            "-D" + CudaDriver.LIBRARY_PROPERTY + "=" + lib, "-Dgdrkit.nic.source.ring=false", "-cp",
            System.getProperty("java.class.path"), NicStagingProbe.class.getName())).redirectErrorStream(true)
            .redirectOutput(log.toFile());
        pb.environment().put("FAKECUDA_DEFER", "1");
        final Process p = pb.start();
        if (!p.waitFor(180, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out after 180 s waiting for the probe: " + Files.readString(log));
        }
        final String out = Files.readString(log);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("control: landed before the fence false, after the fence true"), out);
        assertTrue(out.contains("held event: 0 completion(s) before the copy's event reported done"), out);
        for (final String check : List.of("WRITE 1048576 B after a held event", "WRITE 17 B", "WRITE 4097 B", "WRITE 3145733 B", "24 x 1 MiB WRITE",
            "READ 1048579 B", "READ 2097152 B", "SEND 200000 B")) {
            assertTrue(out.lines().anyMatch(l -> l.startsWith(check)) && out.lines().filter(l -> l.startsWith(check))
                .allMatch(l -> l.contains("byte-exact at completion")), check + ": " + out);
        }
        assertTrue(out.contains("all checks passed"), out);
        // the READs and the GPU-sourced WRITEs read through the read-ahead, which is pinned: no staging copy
        assertTrue(out.lines().anyMatch(l -> l.matches("NIC reads: [1-9][0-9]* into pinned memory, 0 through "
            + "staging;.*")), out);
        // both buffers are GPU memory: a written packet's bytes come from a link's buffer, reused at once, so staged
        assertTrue(out.lines().anyMatch(l -> l.matches(".*; NIC writes: [1-9][0-9]* B staged .*, 0 B direct .*")), out);
        // CudaGpu.isPinned: partly inside is not pinned, freed allocations are forgotten (NicStagingProbe.pinned)
        assertTrue(out.contains("isPinned: 12 of 12 ranges right, freed allocation forgotten true"), out);
    }

    /**
     * Writes that end one buffer and start its neighbour are two copies, never one across the allocations (the
     * driver refuses that with CUDA_ERROR_INVALID_VALUE; it failed {@code coll reduce} once on the H200).
     */
    @Test
    void writesThatEndOneBufferAndStartItsNeighbourAreNeverOneCopy() throws Exception {
        final Path lib = buildFake();
        final Path log = lib.resolveSibling("span.log");
        final String java = ProcessHandle.current().info().command().orElse("java");
        final ProcessBuilder pb = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED",
            "-D" + CudaDriver.LIBRARY_PROPERTY + "=" + lib, "-cp", System.getProperty("java.class.path"),
            NicSpanProbe.class.getName())).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("FAKECUDA_ALLOC_ARENA", "1");
        final Process p = pb.start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out after 120 s waiting for the probe: " + Files.readString(log));
        }
        final String out = Files.readString(log);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("adjacent allocations: true"), out);
        assertTrue(out.contains("across the boundary: byte-exact true"), out);
        assertTrue(out.contains("one copy across: CUDA_ERROR_INVALID_VALUE (1)"), out);
    }

    private static Path buildFake() throws Exception {
        final Path src = Path.of("src/test/c/fakecuda.c").toAbsolutePath();
        final Path dir = Files.createDirectories(Path.of("target/fakecuda-span").toAbsolutePath());
        final Path lib = dir.resolve("libfakecuda.so");
        final Process cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-O1", "-o", lib.toString(), src.toString())
            .redirectErrorStream(true).redirectOutput(dir.resolve("cc.log").toFile()).start();
        org.junit.jupiter.api.Assertions.assertTrue(cc.waitFor(120, TimeUnit.SECONDS) && cc.exitValue() == 0,
            "the libcuda test double did not build: " + dir.resolve("cc.log"));
        return lib;
    }
}
