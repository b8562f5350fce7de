/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.ordering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.labs.ordering.OrderingExperiment.Config;
import io.gdrkit.labs.ordering.OrderingExperiment.Result;
import io.gdrkit.labs.ordering.OrderingExperiment.Variant;
import io.gdrkit.labs.ordering.OrderingExperiment.Verdict;
import org.junit.jupiter.api.Test;

/** The put-then-flag lab on the software NIC: counts are measured, and replay from the seed. */
class OrderingExperimentTest {
    private static final int TRIALS = 300;
    private static final int SIZE = 16384;

    private static Result run(final Variant v, final double reorder, final boolean withinQp, final long seed) {
        return OrderingExperiment.run(new Config(v).trials(TRIALS).size(SIZE).reorder(reorder)
            .reorderWithinQp(withinQp).seed(seed));
    }

    @Test
    void twoQpsCorruptUnderReorderingAndNotWithout() {
        final Result reordered = run(Variant.TWO_QP, 0.05, false, 3);
        assertTrue(reordered.corruptedReads() > 0, reordered::toString);
        assertTrue(reordered.reorderedPackets() > 0, reordered::toString);
        assertTrue(reordered.firstCorruptedTrial() >= 1 && reordered.firstBadOffset() >= 0, reordered::toString);
        assertEquals(reordered.corruptedReads(), reordered.staleReads() + reordered.partialReads(),
            "every corrupted read holds only this trial's and the previous trial's bytes: " + reordered);
        assertEquals(Verdict.CORRUPTED, reordered.verdict());

        final Result calm = run(Variant.TWO_QP, 0, false, 3);
        assertEquals(0, calm.corruptedReads(), calm::toString);
        assertEquals(0, calm.reorderedPackets(), calm::toString);
        assertEquals(-1, calm.firstCorruptedTrial());
        assertEquals(Verdict.NOT_OBSERVED, calm.verdict());
    }

    @Test
    void orderedVariantsNeverReadCorruptedData() {
        for (final Variant v : new Variant[] {Variant.ONE_QP, Variant.IMM, Variant.FENCE, Variant.READ_FENCE,
            Variant.COMPLETION}) {
            final Result r = run(v, 0.05, false, 3);
            assertEquals(0, r.corruptedReads(), r::toString);
            assertTrue(r.reorderedPackets() > 0, () -> "the fabric did reorder: " + r);
            assertEquals(Verdict.PASS, r.verdict(), r::toString);
        }
    }

    @Test
    void aFenceOnTheFlagsQpDoesNotOrderAnotherQp() {
        final Result r = run(Variant.FENCE_TWO_QP, 0.05, false, 3);
        assertTrue(r.corruptedReads() > 0, r::toString);
        assertEquals(Verdict.CORRUPTED, r.verdict());
    }

    @Test
    void oneQpStaysOrderedWhenItsOwnPacketsAreReordered() {
        // packets of one QP overtaking each other: the responder NAKs the gap and places in PSN order after go-back-N
        final Result r = run(Variant.ONE_QP, 0.05, true, 4);
        assertEquals(0, r.corruptedReads(), r::toString);
        assertTrue(r.reorderedPackets() > 0, r::toString);
    }

    @Test
    void aLargePutIsPassedByTheFlagEvenWithoutReordering() {
        // 64 packets of data against one flag packet: the sending NIC takes turns between QPs every 32 packets
        final Result r = OrderingExperiment.run(new Config(Variant.TWO_QP).trials(5).size(256 * 1024)
            .reorder(0));
        assertEquals(5, r.corruptedReads(), r::toString);
        assertEquals(5, r.partialReads(), r::toString);
        final Result ordered = OrderingExperiment.run(new Config(Variant.COMPLETION).trials(5)
            .size(256 * 1024).reorder(0));
        assertEquals(0, ordered.corruptedReads(), ordered::toString);
    }

    @Test
    void sameSeedSameCounts() {
        final Result a = run(Variant.TWO_QP, 0.1, false, 11);
        final Result b = run(Variant.TWO_QP, 0.1, false, 11);
        assertEquals(a, b);
        assertTrue(a.corruptedReads() > 0, a::toString);
    }

    @Test
    void badConfigsNameTheOption() {
        assertEquals("--trials must be at least 1, not 0", assertThrows(IllegalArgumentException.class,
            () -> new Config(Variant.ONE_QP).trials(0).conclude()).getMessage());
        assertEquals("--size must be between 1 and 1048576 bytes, not 0", assertThrows(IllegalArgumentException.class,
            () -> new Config(Variant.ONE_QP).size(0).conclude()).getMessage());
        assertEquals("--size must be between 1 and 1048576 bytes, not 1048577", assertThrows(
            IllegalArgumentException.class, () -> new Config(Variant.ONE_QP).size((1 << 20) + 1).conclude())
            .getMessage());
        assertEquals("--reorder must be a probability within 0..1, not 1.5", assertThrows(
            IllegalArgumentException.class, () -> new Config(Variant.ONE_QP).reorder(1.5).conclude()).getMessage());
        assertEquals("--reorder must be a probability within 0..1, not NaN", assertThrows(
            IllegalArgumentException.class, () -> new Config(Variant.ONE_QP).reorder(Double.NaN).conclude())
            .getMessage());
        assertEquals("--reorder-us must be within 0..1000, not 1001.0", assertThrows(IllegalArgumentException.class,
            () -> new Config(Variant.ONE_QP).reorderMicros(1001).conclude()).getMessage());
        assertEquals("--variants: no variant given", assertThrows(IllegalArgumentException.class,
            () -> new Config(null)).getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Variant.parse("three-qp")).getMessage()
            .contains("two-qp, one-qp, imm"));
    }

    @Test
    void configDefaultsByNameAndFrozenAfterConclude() {
        final Config c = new Config(Variant.IMM);
        assertEquals("Config[variant=IMM, trials=2000, size=16384, reorder=0.05, reorderMicros=10.0, "
            + "reorderWithinQp=false, seed=1]", c.toString());
        assertEquals(new Config(Variant.IMM).seed(1).conclude(), c.conclude());
        assertEquals("ordering Config already concluded: it is frozen",
            assertThrows(IllegalStateException.class, () -> c.trials(3)).getMessage());
    }
}
