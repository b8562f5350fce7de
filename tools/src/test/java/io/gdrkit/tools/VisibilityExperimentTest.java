/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.tools.VisibilityExperiment.Config;
import io.gdrkit.tools.VisibilityExperiment.Consumer;
import io.gdrkit.tools.VisibilityExperiment.Flag;
import io.gdrkit.tools.VisibilityExperiment.Readback;
import io.gdrkit.tools.VisibilityExperiment.Result;
import org.junit.jupiter.api.Test;

/** D6, D4 and D5 on the simulated GPU, seeded: no timing decides any outcome below. */
class VisibilityExperimentTest {
    private static Result run(final String gpu, final Consumer consumer, final Readback rb, final int split,
                              final long seed, final int skip) {
        return VisibilityExperiment.run(new Config(gpu, consumer, Flag.RECEIVER, rb, split, 16384, 6, seed, skip));
    }

    @Test
    void d6PersistentConsumerWithOrderingNoneFailsWithReadbackOffAndPassesWithOnAndFlush() {
        final Result off = run("sim:v100", Consumer.PERSISTENT, Readback.OFF, 1, 7, 0);
        assertEquals("NONE", off.ordering());
        assertTrue(off.failures() > 0, "OFF must fail: " + off);
        assertTrue(off.firstFailingRound() >= 1 && off.firstFailingPosition() >= 0, off.toString());
        assertTrue(off.what().equals("reordered") || off.what().equals("partial") || off.what().equals("stale"),
            off.toString());
        assertEquals(0, run("sim:v100", Consumer.PERSISTENT, Readback.ON, 1, 7, 0).failures(), "ON passes");
        assertEquals(0, run("sim:v100", Consumer.PERSISTENT, Readback.FLUSH, 1, 7, 0).failures(), "FLUSH passes");
    }

    @Test
    void d6IsReproducibleFromTheSeed() {
        for (final int split : new int[] {1, 16, 256}) {
            final Result a = run("sim:v100", Consumer.PERSISTENT, Readback.OFF, split, 11, 0);
            final Result b = run("sim:v100", Consumer.PERSISTENT, Readback.OFF, split, 11, 0);
            assertTrue(a.failures() > 0, a.toString());
            assertEquals(a.failures(), b.failures());
            assertEquals(a.firstFailingRound(), b.firstFailingRound());
            assertEquals(a.firstFailingPosition(), b.firstFailingPosition());
            assertEquals(a.what(), b.what());
            assertEquals(a.reorderedRounds(), b.reorderedRounds());
        }
    }

    @Test
    void aKernelLaunchedAfterTheCompletionPassesEvenWithOrderingNone() {
        for (final int split : new int[] {1, 16, 256}) {
            final Result r = run("sim:v100", Consumer.LAUNCH, Readback.OFF, split, 7, 0);
            assertEquals("NONE", r.ordering());
            assertEquals(0, r.failures(), r.toString());
            assertEquals(-1, r.firstFailingRound());
        }
    }

    @Test
    void orderingOwnerAndAllDevicesPassWithReadbackOff() {
        for (final String gpu : new String[] {"sim:h200", "sim:all-devices"}) {
            final Result r = run(gpu, Consumer.PERSISTENT, Readback.OFF, 16, 7, 0);
            assertEquals(0, r.failures(), r.toString());
        }
        assertEquals("OWNER", run("sim:h200", Consumer.PERSISTENT, Readback.ON, 1, 7, 0).ordering());
    }

    @Test
    void aSkippedWriteIsDetectedAsStaleByBothConsumers() {
        for (final Consumer c : Consumer.values()) {
            for (final String gpu : new String[] {"sim:h200", "sim:v100"}) {
                final Result r = run(gpu, c, Readback.ON, 16, 3, 4);
                assertEquals(1, r.failures(), c + " " + gpu + ": " + r);
                assertEquals(4, r.firstFailingRound());
                assertEquals(0, r.firstFailingPosition());
                assertEquals("stale", r.what());
                assertEquals(1, r.staleRounds());
            }
        }
    }

    @Test
    void classification() {
        assertEquals("ok", VisibilityExperiment.classify(100, 0, -1, 99, 0));
        assertEquals("stale", VisibilityExperiment.classify(100, 100, 0, -1, 100));
        assertEquals("partial", VisibilityExperiment.classify(100, 40, 60, 59, 40));
        assertEquals("reordered", VisibilityExperiment.classify(100, 40, 10, 99, 40));
        assertEquals("corrupt", VisibilityExperiment.classify(100, 40, 10, 99, 30));
    }

    @Test
    void badConfigurationsAreRejectedBeforeAnythingRuns() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new Config("sim:v100", Consumer.PERSISTENT,
            Flag.IMM, Readback.OFF, 1, 4096, 1, 1, 0)).getMessage().contains("not supported yet"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new Config("sim:v100", Consumer.PERSISTENT,
            Flag.RECEIVER, Readback.OFF, 3, 4096, 1, 1, 0)).getMessage().contains("--wr-split"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new Config("cuda:0", Consumer.PERSISTENT,
            Flag.RECEIVER, Readback.OFF, 1, 4096, 1, 1, 0)).getMessage().contains("not supported yet"));
    }
}
