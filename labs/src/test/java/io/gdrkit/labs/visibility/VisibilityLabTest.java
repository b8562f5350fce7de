/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.visibility;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.labs.visibility.VisConfig.Consumer;
import io.gdrkit.labs.visibility.VisConfig.Flag;
import io.gdrkit.labs.visibility.VisConfig.Injection;
import io.gdrkit.labs.visibility.VisConfig.Poll;
import io.gdrkit.labs.visibility.VisConfig.Readback;
import io.gdrkit.labs.visibility.VisConfig.Source;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The visibility experiment with the senders in threads of this JVM (in-JVM fabric; the control channel is still
 * TCP). The failable baseline (D6) follows from the simulated GPU's ordering model and seed.
 */
class VisibilityLabTest {
    private static VisibilityLab lab;

    @BeforeAll
    static void start() {
        lab = VisibilityLab.start(VisibilityLab.Transport.JVM, 2, 0, false);
    }

    @AfterAll
    static void stop() {
        lab.close();
    }

    static VisConfig cfg(final String gpu, final Consumer consumer, final Flag flag, final Readback rb) {
        return cfg(gpu, consumer, flag, rb, 1, Injection.NONE);
    }

    static VisConfig cfg(final String gpu, final Consumer consumer, final Flag flag, final Readback rb,
                         final int senders, final Injection inject) {
        return new VisConfig(gpu, consumer, flag, rb, 16, 16384, 6, senders, false, Source.HOST, Poll.ACQUIRE, 7,
            inject, false);
    }

    @Test
    void d6PersistentReceiverFlagWithOrderingNoneFailsWithOffAndPassesWithOnAndFlush() {
        final VisResult off = lab.run(cfg("sim:v100", Consumer.PERSISTENT, Flag.RECEIVER, Readback.OFF), null);
        assertEquals("NONE", off.ordering());
        assertTrue(off.failures() > 0, off.toString());
        assertEquals(1, off.firstFailingRound(), off.toString());
        assertTrue(List.of("stale", "partial", "reordered").contains(off.what()), off.what());
        assertEquals(off.failures(), off.stale() + off.partial() + off.reordered(), off.toString());
        assertEquals(off.failures(), off.failuresToldSenders(), "every failure goes back to the sender");
        for (final Readback rb : new Readback[] {Readback.ON, Readback.FLUSH}) {
            final VisResult r = lab.run(cfg("sim:v100", Consumer.PERSISTENT, Flag.RECEIVER, rb), null);
            assertTrue(r.passed(), r.toString());
            assertEquals(6, r.checks());
            assertEquals(-1, r.firstFailingRound());
            assertEquals("none", r.what());
        }
    }

    @Test
    void orderingOwnerAndAllDevicesPassWithReadbackOff() {
        for (final String gpu : new String[] {"sim:h200", "sim:all-devices"}) {
            final VisResult r = lab.run(cfg(gpu, Consumer.PERSISTENT, Flag.RECEIVER, Readback.OFF), null);
            assertTrue(r.passed(), r.toString());
            assertFalse("NONE".equals(r.ordering()));
        }
    }

    @Test
    void d6IsReproducibleFromTheSeed() {
        final VisConfig c = cfg("sim:v100", Consumer.PERSISTENT, Flag.RECEIVER, Readback.OFF);
        final VisResult a = lab.run(c, null);
        final VisResult b = lab.run(c, null);
        assertEquals(a.failures(), b.failures());
        assertEquals(a.firstFailingPosition(), b.firstFailingPosition());
        assertEquals(a.what(), b.what());
        assertEquals(List.of(a.stale(), a.partial(), a.reordered()), List.of(b.stale(), b.partial(), b.reordered()));
    }

    @Test
    void aKernelLaunchedAfterTheCompletionPassesEvenWithOrderingNone() {
        for (final Flag f : new Flag[] {Flag.RECEIVER, Flag.IMM}) {
            final VisResult r = lab.run(cfg("sim:v100", Consumer.LAUNCH, f, Readback.OFF), null);
            assertTrue(r.passed(), r.toString());
        }
    }

    @Test
    void everyFlagModeFailsWithOffAndPassesWithOnUnderOrderingNone() {
        for (final Flag f : new Flag[] {Flag.SENDER_SAME_QP, Flag.SENDER_OTHER_QP, Flag.IMM}) {
            final VisResult off = lab.run(cfg("sim:v100", Consumer.PERSISTENT, f, Readback.OFF), null);
            assertTrue(off.failures() > 0, f + ": " + off);
            final VisResult on = lab.run(cfg("sim:v100", Consumer.PERSISTENT, f, Readback.ON), null);
            assertTrue(on.passed(), f + ": " + on);
        }
    }

    @Test
    void manySendersEachIntoItsOwnBuffer() {
        final VisResult on = lab.run(new VisConfig("sim:v100", Consumer.PERSISTENT, Flag.RECEIVER, Readback.ON, 1,
            4096, 3, 64, false, Source.HOST, Poll.ACQUIRE, 3, Injection.NONE, false), null);
        assertTrue(on.passed(), on.toString());
        assertEquals(64 * 3, on.checks());
        final VisResult launch = lab.run(new VisConfig("sim:h200", Consumer.LAUNCH, Flag.RECEIVER, Readback.OFF, 1,
            4096, 2, 128, true, Source.HOST, Poll.ACQUIRE, 3, Injection.NONE, false), null);
        assertTrue(launch.passed(), launch.toString());
        assertEquals(128 * 2, launch.checks());
        final VisResult off = lab.run(new VisConfig("sim:v100", Consumer.PERSISTENT, Flag.RECEIVER, Readback.OFF, 1,
            4096, 2, 64, false, Source.HOST, Poll.ACQUIRE, 3, Injection.NONE, false), null);
        assertTrue(off.failures() > 0, off.toString());
    }

    @Test
    void aGpuSourceAndSyncMemopsAndLargeBuffersAreByteExact() {
        final VisResult gpuSrc = lab.run(new VisConfig("sim:h200", Consumer.PERSISTENT, Flag.SENDER_SAME_QP,
            Readback.OFF, 256, 1 << 20, 2, 2, true, Source.GPU, Poll.ACQUIRE, 5, Injection.NONE, false), null);
        assertTrue(gpuSrc.passed(), gpuSrc.toString());
        final VisResult big = lab.run(new VisConfig("sim:v100", Consumer.LAUNCH, Flag.RECEIVER, Readback.OFF, 16,
            8 << 20, 2, 1, false, Source.HOST, Poll.ACQUIRE, 5, Injection.NONE, false), null);
        assertTrue(big.passed(), big.toString());
    }

    @Test
    void aSkippedWriteIsDetectedAsStaleAndReportedToTheSender() {
        for (final Consumer consumer : Consumer.values()) {
            final VisResult r = lab.run(cfg("sim:h200", consumer, Flag.RECEIVER, Readback.OFF, 1,
                Injection.parse("skip-write@3")), null);
            assertEquals(1, r.failures(), r.toString());
            assertEquals(3, r.firstFailingRound());
            assertEquals("stale", r.what());
            assertEquals(0, r.firstFailingPosition());
            assertEquals(1, r.failuresToldSenders());
            assertNull(r.aborted());
            assertEquals(6, r.rounds());
        }
    }

    @Test
    void anErrorCompletionIsCountedAndStopsTheConfiguration() {
        final VisResult r = lab.run(cfg("sim:h200", Consumer.PERSISTENT, Flag.RECEIVER, Readback.OFF, 2,
            Injection.parse("bad-rkey@2")), null);
        assertEquals(1, r.errorCompletions(), r.toString());
        assertEquals(2, r.rounds());
        assertEquals(2, r.firstFailingRound());
        assertEquals("error-completion", r.what());
        assertNotNull(r.aborted());
        assertTrue(r.aborted().contains("REM_ACCESS_ERR"), r.aborted());
        // the lab is still usable afterwards
        assertTrue(lab.run(cfg("sim:h200", Consumer.LAUNCH, Flag.RECEIVER, Readback.OFF), null).passed());
    }

    @Test
    void launchFailuresAreCounted() {
        final VisResult launch = lab.run(cfg("sim:h200", Consumer.LAUNCH, Flag.RECEIVER, Readback.OFF, 1,
            Injection.parse("bad-launch@2")), null);
        assertEquals(1, launch.launchFailures(), launch.toString());
        assertEquals(1, launch.failures());
        assertEquals("launch-failed", launch.what());
        assertEquals(6, launch.rounds(), "a failed launch costs one check, not the run");
        final VisResult persistent = lab.run(cfg("sim:h200", Consumer.PERSISTENT, Flag.RECEIVER, Readback.OFF, 1,
            Injection.parse("bad-launch@1")), null);
        assertEquals(1, persistent.launchFailures(), persistent.toString());
        assertEquals(0, persistent.rounds());
        assertTrue(persistent.aborted().contains("did not launch"), persistent.aborted());
        assertTrue(Double.isNaN(persistent.roundMicrosMedian()), "no round ran, no round time");
    }

    @Test
    void aConsumerOnThePeerGpuNeedsTheAllDevicesScopeUnderOrderingOwner() {
        for (final Consumer consumer : Consumer.values()) {
            for (final Readback rb : Readback.values()) {
                final VisResult r = lab.run(new VisConfig("sim:h200", consumer, Flag.RECEIVER, rb, 1, 16384, 3, 1,
                    false, Source.HOST, Poll.ACQUIRE, 7, Injection.NONE, true), null);
                // landed for the owner at the completion, but not retired: only TO_ALL_DEVICES makes it visible
                assertEquals(rb == Readback.FLUSH_ALL, r.passed(), consumer + " " + rb + ": " + r);
                if (!r.passed()) {
                    assertEquals("stale", r.what(), r.toString());
                }
            }
            final VisResult all = lab.run(new VisConfig("sim:all-devices", consumer, Flag.RECEIVER, Readback.OFF, 1,
                16384, 3, 1, false, Source.HOST, Poll.ACQUIRE, 7, Injection.NONE, true), null);
            assertTrue(all.passed(), all.toString());
        }
    }

    @Test
    void medianOfRoundTimes() {
        assertEquals(2.0, VisReceiver.medianMicros(new long[] {3000, 1000, 2000, 99}, 3));
        assertEquals(2.5, VisReceiver.medianMicros(new long[] {4000, 1000, 2000, 3000}, 4));
        assertTrue(Double.isNaN(VisReceiver.medianMicros(new long[4], 0)));
    }

    @Test
    void progressHearsOfEveryRound() {
        final List<Integer> seen = new ArrayList<>();
        lab.run(cfg("sim:h200", Consumer.LAUNCH, Flag.RECEIVER, Readback.OFF), seen::add);
        assertEquals(List.of(1, 2, 3, 4, 5, 6), seen);
    }

    @Test
    void badConfigurationsAreRejectedWithTheOptionNamed() {
        final String[][] cases = {
            {"sim:a100", "unknown simulated GPU"}, {"cuda:x", "--gpu must be"},
        };
        for (final String[] c : cases) {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> cfg(c[0], Consumer.LAUNCH, Flag.RECEIVER, Readback.OFF));
            assertTrue(e.getMessage().contains(c[1]), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class,
            () -> cfg("sim:v100", Consumer.LAUNCH, Flag.SENDER_SAME_QP, Readback.OFF));
        assertThrows(IllegalArgumentException.class,
            () -> cfg("sim:v100", Consumer.PERSISTENT, Flag.SENDER_OTHER_QP, Readback.FLUSH));
        assertThrows(IllegalArgumentException.class, () -> new VisConfig("sim:v100", Consumer.PERSISTENT,
            Flag.RECEIVER, Readback.OFF, 16, 8, 1, 1, false, Source.HOST, Poll.ACQUIRE, 1, Injection.NONE, false));
        assertThrows(IllegalArgumentException.class, () -> new VisConfig("sim:v100", Consumer.PERSISTENT,
            Flag.RECEIVER, Readback.OFF, 1, 4096, 1, 129, false, Source.HOST, Poll.ACQUIRE, 1, Injection.NONE, false));
        assertThrows(IllegalArgumentException.class, () -> new VisConfig("sim:v100", Consumer.PERSISTENT,
            Flag.RECEIVER, Readback.OFF, 1, 4096, 1, 1, false, Source.HOST, Poll.PLAIN, 1, Injection.NONE, false));
        assertThrows(IllegalArgumentException.class, () -> cfg("sim:v100", Consumer.PERSISTENT, Flag.RECEIVER,
            Readback.OFF, 1, Injection.parse("bad-launch@2")));
        assertThrows(IllegalArgumentException.class, () -> cfg("sim:v100", Consumer.PERSISTENT, Flag.RECEIVER,
            Readback.OFF, 1, Injection.parse("skip-write@99")));
        for (final String bad : new String[] {"skip", "skip-write@0", "melt@2", "bad-rkey@x"}) {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Injection.parse(bad));
            assertTrue(e.getMessage().contains("--inject"), e.getMessage());
        }
    }
}
