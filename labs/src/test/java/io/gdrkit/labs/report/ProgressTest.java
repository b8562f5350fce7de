/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.gdrkit.core.agent.ManualClock;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Progress on virtual time: what is printed when, never how fast anything runs. */
class ProgressTest {
    private static final long MS = 1_000_000L;
    private static final long S = 1_000_000_000L;

    private final StringWriter text = new StringWriter();
    private final PrintWriter out = new PrintWriter(text);
    private final ManualClock clock = new ManualClock(1_000 * S);

    @Test
    void plainLinesAreOccasionalAndCarryRateAndEta() {
        final Progress p = new Progress("rounds", 100, out, false, clock);
        clock.advance(5 * S);
        p.add(10);
        assertEquals("", text.toString(), "nothing before the first interval");
        clock.advance(5 * S);
        p.set(25);
        assertEquals("rounds: 25/100 (25%)  2.5/s  ETA 0:30\n", text.toString());
        clock.advance(S);
        p.step();
        assertEquals(1, lines().size(), "not again within the interval");
        clock.advance(50 * S);
        p.set(100);
        assertEquals("rounds: 100/100 (100%)  1.6/s  ETA 0:00", lines().get(1));
        p.finish();
        assertEquals("rounds: 100/100 done in 1:01 (1.6/s)", lines().get(2));
        assertFalse(text.toString().contains("\r"));
    }

    @Test
    void terminalRedrawsOneLineAndEndsIt() {
        final Progress p = new Progress("vis", 1000, out, true, clock);
        clock.advance(300 * MS);
        p.add(300);
        assertTrue(text.toString().startsWith("\rvis: 300/1000 (30%)  1000/s  ETA 0:00"), text::toString);
        final int after = text.toString().length();
        clock.advance(100 * MS);
        p.add(1);
        assertEquals(after, text.toString().length(), "at most one redraw per interval");
        clock.advance(200 * MS);
        p.label("v");
        p.add(1);
        // a shorter line is padded so that the rest of the longer one disappears
        final String second = text.toString().substring(after);
        assertTrue(second.startsWith("\rv: 302/1000 (30%)"), second);
        assertEquals("\rvis: 300/1000 (30%)  1000/s  ETA 0:00".length(), second.length(), second);
        p.close();
        assertTrue(text.toString().endsWith("\n"), text::toString);
        assertTrue(text.toString().contains("\rv: 302/1000 done in 0:00 (503/s)"), text::toString);
        assertFalse(text.toString().contains("\n\r"));
    }

    @Test
    void aShortRunPrintsNothing() {
        final Progress p = new Progress("quick", 10, out, true, clock);
        for (int i = 0; i < 10; i++) {
            p.step();
        }
        p.finish();
        assertEquals("", text.toString());
        assertEquals(10, p.done());
    }

    @Test
    void unknownTotalAndNoProgressYet() {
        final Progress p = new Progress("n", 0, out, false, clock);
        clock.advance(20 * S);
        p.add(0);
        assertEquals("n: 0  0.0/s\n", text.toString());
        final Progress q = new Progress("m", 5, out, false, clock);
        clock.advance(20 * S);
        q.add(0);
        assertTrue(text.toString().endsWith("m: 0/5 (0%)  0.0/s  ETA ?\n"), text::toString);
    }

    @Test
    void disabledCountsAndSetNeverGoesBack() {
        final Progress p = new Progress("off", 10, null, true, clock);
        p.set(7);
        p.set(3);
        clock.advance(100 * S);
        p.step();
        p.finish();
        assertEquals(8, p.done());
        assertEquals(4, Progress.disabled(4).total());
    }

    @Test
    void updatesFromManyThreadsAreAllCounted() throws InterruptedException {
        final Progress p = new Progress("mt", 80_000, out, true, clock);
        clock.advance(S);
        final List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            threads.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 10_000; i++) {
                    p.step();
                }
            }));
        }
        for (final Thread t : threads) {
            t.join();
        }
        p.finish();
        assertEquals(80_000, p.done());
        // the clock stood still, so exactly one thread printed a progress line, then finish ended it
        assertEquals(2, text.toString().split("\r", -1).length - 1, text::toString);
    }

    private List<String> lines() {
        return text.toString().lines().toList();
    }
}
