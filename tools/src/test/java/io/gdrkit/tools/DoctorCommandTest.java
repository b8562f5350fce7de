/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DoctorCommandTest {
    @Test
    void thisMachineIsProbedHonestly() throws Exception {
        final Cli r = Cli.run("doctor", "--json");
        assertEquals(0, r.exitCode(), r::toString);
        final JsonNode root = new ObjectMapper().readTree(r.out());
        assertEquals(false, root.get("simulated").asBoolean());
        for (final JsonNode c : root.get("checks")) {
            assertTrue(c.has("name") && c.has("status") && c.has("evidence") && !c.get("evidence").asText().isBlank(),
                c.toString());
        }
        if (!io.gdrkit.gpu.cuda.CudaGpu.probe().found()) {
            assertEquals("HARDWARE_BLOCKED", root.get("verdict").asText());
        }
        assertEquals(1, Cli.run("doctor", "--strict").exitCode(), "strict: not proven end to end here");
    }

    @Test
    void softwareProviderProvesGdrEndToEndAndSaysSimulated() throws Exception {
        for (final String gpu : new String[] {"sim:h200", "sim:v100"}) {
            final Cli r = Cli.run("doctor", "--provider", "soft", "--gpu", gpu, "--json", "--strict");
            assertEquals(0, r.exitCode(), r::toString);
            final JsonNode root = new ObjectMapper().readTree(r.out());
            assertEquals("GDR_READY", root.get("verdict").asText());
            assertEquals(true, root.get("simulated").asBoolean());
        }
        final Cli text = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:v100");
        assertTrue(text.out().contains("SIMULATED") && text.out().contains("flushed (1-byte READ)"), text::toString);
        final Cli noGdr = Cli.run("doctor", "--provider", "soft", "--gpu", "sim:no-gdr", "--strict");
        assertEquals(1, noGdr.exitCode(), noGdr::toString);
        assertTrue(noGdr.out().contains("DEGRADED"), noGdr::toString);
    }

    @Test
    void fakeRootShowsWhatItRead(@TempDir final Path root) throws Exception {
        Files.createDirectories(root.resolve("sys/class/infiniband/mlx5_0"));
        Files.createDirectories(root.resolve("dev/infiniband"));
        Files.createFile(root.resolve("dev/infiniband/uverbs0"));
        Files.createDirectories(root.resolve("sys/module/nvidia_peermem"));
        final Cli r = Cli.run("doctor", "--sys", root.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().contains("/sys/class/infiniband: [mlx5_0]"), r::toString);
        assertTrue(r.out().contains("present: [/sys/module/nvidia_peermem]"), r::toString);
        assertTrue(r.out().contains("uverbs0"), r::toString);
    }

    @Test
    void acsDecoding() {
        final byte[] cfg = new byte[0x200];
        // extended capability at 0x100: ID 0x000D (ACS), version 1, next 0; control at +6 with RR|CR set
        cfg[0x100] = 0x0D;
        cfg[0x102] = 0x01;
        cfg[0x106] = 0x0C;
        assertTrue(DoctorCommand.acsControl(cfg).contains("redirect ON"));
        assertTrue(DoctorCommand.acsControl(new byte[64]).contains("needs root"));
    }

    @Test
    void badArguments() {
        assertEquals(2, Cli.run("doctor", "--provider", "mlx").exitCode());
        assertEquals(2, Cli.run("doctor", "--gpu", "sim:h200").exitCode());
        assertEquals(2, Cli.run("doctor", "--provider", "soft").exitCode());
    }
}
