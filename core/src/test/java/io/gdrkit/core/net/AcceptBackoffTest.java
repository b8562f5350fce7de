/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class AcceptBackoffTest {
    @Test
    void failuresDoubleThePauseUpToTheCapAndASuccessResetsIt() {
        final AcceptBackoff b = new AcceptBackoff();
        assertTrue(b.mayTry());
        assertEquals(0, b.delayNanos());
        long expected = AcceptBackoff.MIN_NANOS;
        for (int i = 0; i < 12; i++) {
            assertEquals(expected, b.failed(new IOException("Too many open files")));
            expected = Math.min(AcceptBackoff.MAX_NANOS, expected * 2);
        }
        assertEquals(AcceptBackoff.MAX_NANOS, b.delayNanos(), "capped");
        assertFalse(b.mayTry(), "within the pause a polled accept is skipped");
        assertEquals(12, b.failures());
        assertEquals("Too many open files", b.lastError());
        b.succeeded();
        assertEquals(0, b.delayNanos());
        assertTrue(b.mayTry());
        assertEquals(AcceptBackoff.MIN_NANOS, b.failed(new IOException("again")), "from the shortest pause again");
        assertEquals(13, b.failures(), "the count is kept");
    }
}
