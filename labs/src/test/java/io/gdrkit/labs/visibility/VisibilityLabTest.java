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
        return new VisConfig().gpu(gpu).consumer(consumer).flag(flag).readback(rb).wrSplit(16).size(16384).rounds(6)
            .senders(senders).seed(7).inject(inject).conclude();
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
        final VisResult on = lab.run(new VisConfig().readback(Readback.ON).size(4096).rounds(3).senders(64).seed(3)
            .conclude(), null);
        assertTrue(on.passed(), on.toString());
        assertEquals(64 * 3, on.checks());
        final VisResult launch = lab.run(new VisConfig().gpu("sim:h200").consumer(Consumer.LAUNCH).size(4096)
            .rounds(2).senders(128).syncMemops(true).seed(3).conclude(), null);
        assertTrue(launch.passed(), launch.toString());
        assertEquals(128 * 2, launch.checks());
        final VisResult off = lab.run(new VisConfig().size(4096).rounds(2).senders(64).seed(3).conclude(), null);
        assertTrue(off.failures() > 0, off.toString());
    }

    /**
     * D2: the receiver refills its buffers with a synchronous copy before each round. Without SYNC_MEMOPS the
     * simulated copy is complete only in stream order, so it lands over the NIC's data when the launched consumer is
     * submitted: every round of the last-refilled sender is stale. With it the copy lands before returning: no
     * failure. Without the refill step the axis changes nothing.
     */
    @Test
    void d2RefillWithoutSyncMemopsIsStaleAndWithItPasses() {
        for (final String gpu : new String[] {"sim:v100", "sim:h200"}) {
            final VisConfig.Readback rb = gpu.equals("sim:v100") ? Readback.ON : Readback.OFF;
            final VisResult off = lab.run(new VisConfig().gpu(gpu).consumer(Consumer.LAUNCH).readback(rb).wrSplit(16)
                .size(16384).rounds(4).senders(2).seed(7).refill(true).conclude(), null);
            assertEquals(8, off.checks(), off.toString());
            assertEquals(4, off.failures(), gpu + ": " + off);
            assertEquals(4, off.stale(), gpu + ": " + off);
            assertEquals("stale", off.what(), off.toString());
            assertEquals(1, off.firstFailingRound(), off.toString());
            assertEquals(0, off.firstFailingPosition(), off.toString());
            assertEquals(off.failures(), off.failuresToldSenders(), "every failure goes back to the sender");
            final VisResult again = lab.run(new VisConfig().gpu(gpu).consumer(Consumer.LAUNCH).readback(rb)
                .wrSplit(16).size(16384).rounds(4).senders(2).seed(7).refill(true).conclude(), null);
            assertEquals(List.of(off.failures(), off.stale(), off.firstFailingPosition(), off.what()),
                List.of(again.failures(), again.stale(), again.firstFailingPosition(), again.what()), "deterministic");
            final VisResult on = lab.run(new VisConfig().gpu(gpu).consumer(Consumer.LAUNCH).readback(rb).wrSplit(16)
                .size(16384).rounds(4).senders(2).seed(7).refill(true).syncMemops(true).conclude(), null);
            assertTrue(on.passed(), gpu + ": " + on);
            assertEquals(8, on.checks());
            final VisResult noRefill = lab.run(new VisConfig().gpu(gpu).consumer(Consumer.LAUNCH).readback(rb)
                .wrSplit(16).size(16384).rounds(4).senders(2).seed(7).conclude(), null);
            assertTrue(noRefill.passed(), gpu + ": " + noRefill);
        }
    }

    @Test
    void aGpuSourceAndSyncMemopsAndLargeBuffersAreByteExact() {
        final VisResult gpuSrc = lab.run(new VisConfig().gpu("sim:h200").flag(Flag.SENDER_SAME_QP).wrSplit(256)
            .size(1 << 20).rounds(2).senders(2).syncMemops(true).source(Source.GPU).seed(5).conclude(), null);
        assertTrue(gpuSrc.passed(), gpuSrc.toString());
        final VisResult big = lab.run(new VisConfig().consumer(Consumer.LAUNCH).wrSplit(16).size(8 << 20).rounds(2)
            .seed(5).conclude(), null);
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
                final VisResult r = lab.run(new VisConfig().gpu("sim:h200").consumer(consumer).readback(rb)
                    .size(16384).rounds(3).seed(7).peerConsumer(true).conclude(), null);
                // landed for the owner at the completion, but not retired: only TO_ALL_DEVICES makes it visible
                assertEquals(rb == Readback.FLUSH_ALL, r.passed(), consumer + " " + rb + ": " + r);
                if (!r.passed()) {
                    assertEquals("stale", r.what(), r.toString());
                }
            }
            final VisResult all = lab.run(new VisConfig().gpu("sim:all-devices").consumer(consumer).size(16384)
                .rounds(3).seed(7).peerConsumer(true).conclude(), null);
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
            {"sim:a100", "unknown simulated GPU"}, {"cuda:x", "a GPU spec is"},
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
        assertThrows(IllegalArgumentException.class, () -> new VisConfig().wrSplit(16).size(8).rounds(1).conclude());
        assertThrows(IllegalArgumentException.class, () -> new VisConfig().size(4096).rounds(1).senders(129)
            .conclude());
        assertThrows(IllegalArgumentException.class, () -> new VisConfig().size(4096).rounds(1).poll(Poll.PLAIN)
            .conclude());
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
