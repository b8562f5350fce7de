/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

class DeadlineTest {
    @Test
    void expiredDeadlineNamesWhatItWaitedFor() {
        final Deadline d = new Deadline(1_000_000L);
        LockSupport.parkNanos(5_000_000L);
        final Deadline.TimeoutError e = assertThrows(Deadline.TimeoutError.class,
            () -> d.check("send completions of write_bw", 3, 10));
        assertTrue(e.getMessage().contains("waiting for send completions of write_bw (have 3 of 10)"),
            e.getMessage());
    }

    @Test
    void rearmedDeadlineDoesNotFire() {
        final Deadline d = new Deadline(60_000_000_000L);
        d.rearm();
        d.check("anything", 0, 1);
    }

    @Test
    void trackerSignalsEveryCqModAndBoundsOutstanding() {
        final SendTracker t = new SendTracker(2, 4, 2);
        assertFalse(t.nextSignaled(0, false));
        t.posted(0);
        assertTrue(t.nextSignaled(0, false));
        assertFalse(t.atSignalBoundary(0));
        t.posted(0);
        assertTrue(t.atSignalBoundary(0));
        t.posted(0);
        t.posted(0);
        assertFalse(t.hasRoom(0), "4 outstanding at depth 4");
        assertTrue(t.hasRoom(1));
        assertEquals(1L << 40, t.nextWrId(1));
        assertEquals(4, t.allOutstanding());
    }
}
