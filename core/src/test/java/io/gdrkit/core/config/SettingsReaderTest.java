/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SettingsReaderTest {
    enum Level { LOC, PIX, SYS }

    @Test
    void sourcesArePrecedenceOrderedAndRecorded() {
        final SettingsReader r = new SettingsReader(Map.of("NCCL_A", "3", "NCCL_B", "1"),
            Map.of("gdrkit.c", "false", "NCCL_A", "9"), Map.of("NCCL_B", "0"));
        assertEquals(new Setting<>("NCCL_A", 3, Source.ENVIRONMENT, "3"), r.integer("NCCL_A", 1, 0, 5));
        assertEquals(new Setting<>("NCCL_B", false, Source.FLAG, "0"), r.flag("NCCL_B", true));
        assertEquals(new Setting<>("gdrkit.c", false, Source.PROPERTY, "false"), r.flag("gdrkit.c", true));
        assertEquals(new Setting<>("NCCL_D", Level.PIX, Source.DEFAULT, null), r.choice("NCCL_D", Level.PIX,
            Level.class));
        assertEquals(List.of("NCCL_A", "NCCL_B", "gdrkit.c", "NCCL_D"),
            r.recorded().stream().map(Setting::name).toList());
        assertEquals("NCCL_A=3 (environment)", r.recorded().get(0).describe());
    }

    @Test
    void systemPropertiesTakesASnapshotOfOnePrefix() {
        System.setProperty("gdrkit.srtest.a", "1");
        System.setProperty("gdrkit.srtestx.b", "2");
        try {
            final Map<String, String> p = SettingsReader.systemProperties("gdrkit.srtest.");
            assertEquals(Map.of("gdrkit.srtest.a", "1"), p);
            System.setProperty("gdrkit.srtest.a", "3");
            assertEquals("1", p.get("gdrkit.srtest.a"), "a snapshot, not a view");
            assertEquals("2", SettingsReader.systemProperties("").get("gdrkit.srtestx.b"), "\"\": every property");
        } finally {
            System.clearProperty("gdrkit.srtest.a");
            System.clearProperty("gdrkit.srtestx.b");
        }
    }

    @Test
    void malformedValuesNameTheVariableAndTheExpectation() {
        final SettingsReader r = SettingsReader.ofEnv(Map.of("NCCL_X", "7", "NCCL_Y", "yes", "NCCL_Z", "abc",
            "NCCL_L", "far"));
        assertEquals("NCCL_X=7 is not an integer in [0, 5]",
            assertThrows(IllegalArgumentException.class, () -> r.integer("NCCL_X", 0, 0, 5)).getMessage());
        assertEquals("NCCL_Y=yes is not 0, 1, true or false",
            assertThrows(IllegalArgumentException.class, () -> r.flag("NCCL_Y", false)).getMessage());
        assertEquals("NCCL_Z=abc is not an integer in [0, 9]",
            assertThrows(IllegalArgumentException.class, () -> r.longValue("NCCL_Z", 0, 0, 9)).getMessage());
        assertEquals("NCCL_L=far is not one of [LOC, PIX, SYS]",
            assertThrows(IllegalArgumentException.class, () -> r.choice("NCCL_L", Level.LOC, Level.class))
                .getMessage());
        assertEquals(0, r.recorded().size());
    }

    @Test
    void threadsSharingAReaderLoseNoRecord() throws Exception {
        // ranks that are threads of one JVM share a reader and conclude their contexts at the same time
        final SettingsReader r = SettingsReader.ofEnv(Map.of("NCCL_T", "3"));
        final int threads = 8;
        final int reads = 2000;
        final Thread[] t = new Thread[threads];
        final Throwable[] err = new Throwable[threads];
        for (int i = 0; i < threads; i++) {
            final int me = i;
            t[i] = Thread.ofPlatform().start(() -> {
                try {
                    for (int k = 0; k < reads; k++) {
                        assertEquals(3, r.integer("NCCL_T", 0, 0, 9).value());
                        r.recorded().size(); // a snapshot while others add
                    }
                } catch (final Throwable e) {
                    err[me] = e;
                }
            });
        }
        for (final Thread th : t) {
            th.join(60_000);
        }
        for (final Throwable e : err) {
            assertEquals(null, e);
        }
        assertEquals(threads * reads, r.recorded().size());
        assertEquals("NCCL_T=3 (environment)", r.recorded().get(threads * reads - 1).describe());
    }
}
