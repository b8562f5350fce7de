/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.gpupath;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.gpu.GpuDevice;
import io.gdrkit.gpu.devices.GpuDevices;
import java.util.List;
import org.junit.jupiter.api.Test;

class GpuPathLabTest {
    @Test
    void gdrAndBounceAreByteExactRecords() {
        try (GpuDevice gpu = GpuDevices.open("sim:v100")) {
            final GpuPathLab.Result r = GpuPathLab.run(gpu, null, 300_000, 10, true, true);
            assertEquals(List.of("gdr", "bounce", "bounce-pipelined", "pinned"),
                r.runs().stream().map(GpuPathLab.PathRun::path).toList());
            assertTrue(r.allByteExact(), r::toString);
            assertTrue(r.simulated());
            assertNull(r.source());
            for (final GpuPathLab.PathRun run : r.runs()) {
                assertEquals(300_000, run.bytes());
                assertEquals(10, run.iters());
                assertEquals(-1, run.mismatch());
                assertTrue(run.nanos() > 0 && run.mibPerSecond() > 0, run::toString);
            }
        }
    }

    @Test
    void gpuToGpuSourceAndOnePath() {
        try (GpuDevice gpu = GpuDevices.open("sim:h200"); GpuDevice src = GpuDevices.open("sim:v100")) {
            final GpuPathLab.Result r = GpuPathLab.run(gpu, src, 200_000, 5, false, true);
            assertEquals(List.of("bounce", "bounce-pipelined", "pinned", "gpu->gpu"),
                r.runs().stream().map(GpuPathLab.PathRun::path).toList());
            assertTrue(r.allByteExact(), r::toString);
            assertTrue(r.source().contains("V100"), r.source());
        }
    }

    @Test
    void badArgumentsAreNamed() {
        try (GpuDevice gpu = GpuDevices.open("sim:h200")) {
            assertTrue(assertThrows(IllegalArgumentException.class, () -> GpuPathLab.run(gpu, null, 0, 1, true,
                true)).getMessage().contains("size must be"));
            assertTrue(assertThrows(IllegalArgumentException.class, () -> GpuPathLab.run(gpu, null, 4096, 0, true,
                true)).getMessage().contains("iterations must be"));
        }
    }
}
