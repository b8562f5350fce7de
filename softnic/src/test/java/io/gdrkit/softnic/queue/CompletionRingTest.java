/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import org.junit.jupiter.api.Test;

/** The NIC's cached view of the poller's counter: never room that is not there, and room again once polled. */
class CompletionRingTest {
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
