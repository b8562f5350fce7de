/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** The NIC's cached view of the poller's counter: never room that is not there, and room again once polled. */
class CompletionRingTest {
    /**
     * The word at +24, the NIC's last store of each CQE: status, opcode, flags, the lap byte ((index / depth) % 255
     * + 1: never 0, never the slot's previous lap) and vendor_err, byte by byte, over more than 255 laps.
     */
    @Test
    void theLastWordOfACqeCarriesItsLap() {
        try (Arena arena = Arena.ofConfined()) {
            final CompletionRing ring = new CompletionRing(arena, 4);
            final WorkCompletion[] wcs = {new WorkCompletion()};
            final int[] before = new int[4]; // each slot's lap byte before this CQE: 0 at first
            for (long i = 0; i < 4L * 300; i++) {
                ring.post(i, (int) (i % 7), 3, 5, 9, 11, 13, 2, (int) i * 17);
                final long o = (i & 3) * CompletionRing.CQE_SIZE;
                final MemorySegment cqe = ring.ring().asSlice(o, CompletionRing.CQE_SIZE);
                assertEquals((byte) (i % 7), cqe.get(ValueLayout.JAVA_BYTE, 24), "status of " + i);
                assertEquals(3, cqe.get(ValueLayout.JAVA_BYTE, 25));
                assertEquals(2, cqe.get(ValueLayout.JAVA_BYTE, 26));
                final int lap = cqe.get(ValueLayout.JAVA_BYTE, 27) & 0xff;
                assertEquals((i / 4) % 255 + 1, lap, "lap of " + i);
                assertEquals(CompletionRing.lap(i, 4), lap);
                assertTrue(lap != 0 && lap != before[(int) (i & 3)], "a new lap byte in the slot, CQE " + i);
                before[(int) (i & 3)] = lap;
                assertEquals((int) i * 17, cqe.get(ValueLayout.JAVA_INT, 28), "vendor_err of " + i);
                assertEquals(1, ring.poll(wcs, 1));
                assertEquals(i, wcs[0].wrId);
                assertEquals((int) (i % 7), wcs[0].status);
            }
        }
    }

    @Test
    void roomFollowsThePollerThroughTheCachedCounter() {
        try (Arena arena = Arena.ofConfined()) {
            final CompletionRing ring = new CompletionRing(arena, 4);
            assertEquals(4, ring.depth());
            final WorkCompletion[] wcs = new WorkCompletion[8];
            long next = 0;
            long expect = 0;
            for (int lap = 0; lap < 5; lap++) {
                while (ring.hasRoom()) {
                    ring.post(next, 0, 1, (int) next * 3, 7, 11, 0, 0, 0);
                    next++;
                }
                assertEquals(4, next - expect, "full at exactly the depth, lap " + lap);
                assertFalse(ring.hasRoom());
                // the poller frees one slot: the NIC sees it only by reading the counter again
                assertEquals(1, ring.poll(wcs, 1));
                assertEquals(expect, wcs[0].wrId);
                assertEquals((int) expect * 3, wcs[0].byteLen);
                expect++;
                assertTrue(ring.hasRoom());
                ring.post(next, 0, 1, (int) next * 3, 7, 11, 0, 0, 0);
                next++;
                assertFalse(ring.hasRoom());
                // drain all: every CQE in order, with its bytes
                final int n = ring.poll(wcs, 8);
                assertEquals(4, n);
                for (int i = 0; i < n; i++) {
                    assertEquals(expect, wcs[i].wrId);
                    assertEquals((int) expect * 3, wcs[i].byteLen);
                    assertEquals(7, wcs[i].immData);
                    assertEquals(11, wcs[i].qpNum);
                    expect++;
                }
                assertTrue(ring.isEmpty());
            }
        }
    }
}
