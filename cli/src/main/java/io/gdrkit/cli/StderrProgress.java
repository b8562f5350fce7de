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
 */
final class StderrProgress {
    private StderrProgress() {
    }

    /**
     * Progress on stderr, redrawn in place when this process runs on a terminal ({@link System#console()} is one),
     * plain lines otherwise; {@code enabled} false gives one that only counts (e.g. for {@code --json} runs or
     * {@code --quiet}).
     */
    static Progress open(final String label, final long total, final boolean enabled) {
        final Console c = System.console();
        return new Progress(label, total, enabled ? new PrintWriter(System.err) : null, c != null && c.isTerminal(),
            NanoClock.SYSTEM);
    }
}
