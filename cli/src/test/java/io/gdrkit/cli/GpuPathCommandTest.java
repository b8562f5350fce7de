/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** gpu-path and perf --mem gpu on simulated GPUs (CI has no GPU). */
class GpuPathCommandTest {
    @Test
    void bothPathsAreByteExactOnSimulatedGpus() {
        for (final String gpu : new String[] {"sim:h200", "sim:v100"}) {
            final Cli r = Cli.run("gpu-path", "--gpu", gpu, "-s", "300000", "-n", "20");
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.out().contains("(simulated)"), r::toString);
            assertTrue(r.lines().stream().anyMatch(l -> l.startsWith("gdr ") && l.endsWith("byte-exact")), r::toString);
            assertTrue(r.lines().stream().anyMatch(l -> l.startsWith("bounce ") && l.endsWith("byte-exact")),
                r::toString);
        }
    }

    @Test
    void gpuToGpuSourceOnSimulatedGpus() {
        final Cli r = Cli.run("gpu-path", "--gpu", "sim:h200", "--source-gpu", "sim:v100", "-s", "200000", "-n", "10");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.lines().stream().anyMatch(l -> l.startsWith("gpu->gpu ") && l.endsWith("byte-exact")),
            r::toString);
    }

    @Test
    void badGpuSpecsAreClearErrors() {
        final Cli a = Cli.run("gpu-path", "--gpu", "sim:rtx9000");
        assertEquals(2, a.exitCode(), a::toString);
        assertTrue(a.err().contains("'sim:rtx9000' names no simulated GPU (sim:<preset>, presets: v100, h100, h200, "
            + "all-devices, no-gdr)"), a::toString);
        final Cli b = Cli.run("gpu-path", "--gpu", "tpu:0");
        assertEquals(2, b.exitCode(), b::toString);
        assertTrue(b.err().contains("'tpu:0' is not a GPU: sim:<v100|h100|h200|all-devices|no-gdr>, cuda:N or "
            + "cuda:rank"), b::toString);
        final Cli c = Cli.run("gpu-path", "--path", "warp");
        assertEquals(2, c.exitCode(), c::toString);
    }

    @Test
    void perfOnGpuMemory() {
        for (final String test : new String[] {"write_bw", "read_bw", "send_bw", "read_lat", "send_lat",
            "atomic_lat"}) {
            final Cli r = Cli.run("perf", test, "--loopback", "--mem", "gpu", "--gpu", "sim:h200", "-n", "200",
                "--warmup", "50", "-s", test.equals("atomic_lat") ? "8" : "16384");
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.out().contains("# memory: GPU") && r.out().contains("(simulated)"), r::toString);
        }
        final Cli lat = Cli.run("perf", "write_lat", "--loopback", "--mem", "gpu");
        assertEquals(2, lat.exitCode(), lat::toString);
        assertTrue(lat.err().contains("cannot read GPU memory"), lat::toString);
        final Cli cuda = Cli.run("perf", "write_bw", "--loopback", "--mem", "gpu", "--gpu", "cuda:0", "-n", "10");
        if (!io.gdrkit.gpu.cuda.CudaGpu.probe().found()) {
            // a requested GPU this host lacks: exit code 3, one line, nothing printed
            assertEquals(Main.EXIT_NO_HARDWARE, cuda.exitCode(), cuda::toString);
            assertTrue(cuda.err().contains("--gpu cuda:0: this host has no CUDA GPU"), cuda::toString);
            assertEquals("", cuda.out(), cuda::toString);
        }
        final Cli gpuN = Cli.run("perf", "write_bw", "--loopback", "--mem", "gpu:0", "-n", "10");
        if (!io.gdrkit.gpu.cuda.CudaGpu.probe().found()) {
            assertEquals(Main.EXIT_NO_HARDWARE, gpuN.exitCode(), gpuN::toString);
            assertTrue(gpuN.err().contains("--mem gpu:0: this host has no CUDA GPU"), gpuN::toString);
        }
        final Cli remote = Cli.run("perf", "write_bw", "--fabric", "shm", "--loopback", "--mem", "gpu");
        assertEquals(2, remote.exitCode(), remote::toString);
    }
}
