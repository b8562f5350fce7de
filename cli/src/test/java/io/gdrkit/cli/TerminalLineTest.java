/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.gdrkit.core.agent.ManualClock;
import io.gdrkit.labs.report.Progress;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/**
 * The progress line and the output on one terminal (or one log, as {@code script} records it): stdout and stderr
 * written into one stream, the progress drawn as on a terminal. A line of output never follows the progress line on
 * the same line: the progress line is blanked and the cursor returned first.
 */
class TerminalLineTest {
    @Test
    void aTableRowIsNotGluedOntoTheProgressLine() {
        final StringWriter screen = new StringWriter();
        final TerminalLine t = new TerminalLine(screen);
        final PrintWriter out = t.out(screen);
        final ManualClock clock = new ManualClock(0);
        try (Progress p = new Progress("perf sizes", 4, t.progress(), true, clock)) {
            out.println("#bytes #iterations");
            clock.advance(300_000_000L);
            p.step();
            out.println("2      200");
            clock.advance(300_000_000L);
            p.step();
            t.err().println("# a note on stderr");
            out.println("4      200");
        }
        final String p1 = "perf sizes: 1/4 (25%)  3.3/s  ETA 0:00";
        final String p2 = "perf sizes: 2/4 (50%)  3.3/s  ETA 0:00";
        final String done = "perf sizes: 2/4 done in 0:00 (3.3/s)";
        assertEquals("#bytes #iterations\n"
            + "\r" + p1 + "\r" + " ".repeat(p1.length()) + "\r" + "2      200\n"
            + "\r" + p2 + "\r" + " ".repeat(p2.length()) + "\r" + "# a note on stderr\n"
            + "4      200\n"
            + "\r" + done + " ".repeat(p2.length() - done.length()) + "\n", screen.toString());
    }

    /**
     * The whole command, its stdout and stderr into one stream as on one terminal, progress drawn as on a terminal
     * ({@code --set gdrkit.progress.terminal=true}): every piece of a line between carriage returns is either a
     * progress line or output, never both, and every table row starts a piece.
     */
    @Test
    void perfSweepOnOneTerminalKeepsRowsAndProgressApart() {
        final StringWriter screen = new StringWriter();
        final PrintWriter both = new PrintWriter(screen);
        final int rc = Main.execute(new String[] {"perf", "write_bw", "--loopback", "-a", "-n", "200", "--warmup", "0",
            "--set", StderrProgress.TERMINAL_PROPERTY + "=true"}, both, both);
        assertEquals(0, rc, screen.toString());
        int rows = 0;
        for (final String line : screen.toString().split("\n")) {
            for (final String piece : line.split("\r")) {
                final boolean progress = piece.contains("perf sizes");
                final boolean row = piece.matches(".*\\b\\d+\\s+200\\s+[0-9.]+.*");
                assertEquals(false, progress && row, "a row glued onto the progress line: " + line);
                if (row) {
                    rows++;
                    assertEquals(true, piece.matches(" ?\\d+\\s+200\\s.*"),
                        "a row starts its line (perftest's rows begin with one space): " + line);
                }
            }
        }
        assertEquals(23, rows, screen.toString());
    }
}
