/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import io.gdrkit.core.agent.NanoClock;
import io.gdrkit.labs.report.Progress;
import java.io.Console;
import java.io.PrintWriter;

/**
 * A lab's {@link Progress} on this process's stderr. It lives in the cli because only the cli prints: the lab's
 * Progress counts and formats, the command picks the stream (stderr, so that stdout stays clean for text or JSON).
 * Its line is cleared before any line of output ({@link TerminalLine}).
 */
final class StderrProgress {
    /** Treat stderr as a terminal (redrawn progress) even when it is not one: for tests and recorded sessions. */
    static final String TERMINAL_PROPERTY = "gdrkit.progress.terminal";

    private StderrProgress() {
    }

    /** True when progress should be drawn on a terminal: a console that is one, or {@link #TERMINAL_PROPERTY}. */
    static boolean terminal() {
        if (Boolean.getBoolean(TERMINAL_PROPERTY)) {
            return true;
        }
        final Console c = System.console();
        return c != null && c.isTerminal();
    }

    /**
     * Progress on stderr, redrawn in place on a terminal ({@link #terminal()}), plain lines otherwise; {@code enabled}
     * false gives one that only counts (e.g. for {@code --json} runs or {@code --quiet}).
     */
    static Progress open(final String label, final long total, final boolean enabled) {
        final TerminalLine t = TerminalLine.current();
        final PrintWriter w = !enabled ? null : t != null ? t.progress() : new PrintWriter(System.err);
        return new Progress(label, total, w, terminal(), NanoClock.SYSTEM);
    }
}
