/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.report;

import io.gdrkit.core.agent.NanoClock;
import java.io.PrintWriter;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Progress of a long run on the terminal: done / total, percent, rate and ETA, e.g.
 * {@code visibility: 1200/10000 (12%)  310.5/s  ETA 0:28}.
 *
 * <p>On a terminal it redraws one line with {@code \r} at most {@value #TERMINAL_INTERVAL_MS} ms apart; elsewhere
 * (a log file, CI) it prints a plain line at most every {@value #PLAIN_INTERVAL_S} s, so a log is not flooded. A
 * run that ends before the first interval prints nothing at all. Any number of threads may call {@link #add},
 * {@link #step} and {@link #set} from their loops: an update that does not print is a clock read and two atomic
 * operations, without allocation.
 *
 * <p>It prints only to the writer it is given: the cli gives it stderr ({@code io.gdrkit.cli.StderrProgress}), as only
 * the cli prints.
 *
 * <pre>{@code
 * try (Progress p = new Progress("visibility rounds", rounds, err, terminal, NanoClock.SYSTEM)) {
 *     for (int r = 0; r < rounds; r++) { runRound(r); p.step(); }
 * }
 * }</pre>
 */
public final class Progress implements AutoCloseable {
    static final long TERMINAL_INTERVAL_MS = 250;
    static final long PLAIN_INTERVAL_S = 10;

    private final long total;
    private final PrintWriter out;
    private final boolean terminal;
    private final NanoClock clock;
    private final long start;
    private final long intervalNs;
    private final AtomicLong done = new AtomicLong();
    private final AtomicLong nextPrint;
    private final StringBuilder line = new StringBuilder(128);
    private volatile String label;
    private volatile boolean finished;
    /** Guarded by this: whether a line was printed, and the length of the last terminal line (to blank it). */
    private boolean printed;
    private int lastLength;

    /**
     * @param label    what is counted, printed before the numbers
     * @param total    the count at which the run is complete; 0 or less when unknown (no percent, no ETA)
     * @param out      where lines go; null disables printing (counting still works)
     * @param terminal true to redraw one line with {@code \r}, false for occasional plain lines
     * @param clock    time source (tests pass a {@code ManualClock})
     */
    public Progress(final String label, final long total, final PrintWriter out, final boolean terminal,
                    final NanoClock clock) {
        this.label = label == null ? "" : label;
        this.total = total;
        this.out = out;
        this.terminal = terminal;
        this.clock = clock;
        this.start = clock.nanoTime();
        this.intervalNs = terminal ? TERMINAL_INTERVAL_MS * 1_000_000L : PLAIN_INTERVAL_S * 1_000_000_000L;
        this.nextPrint = new AtomicLong(start + intervalNs);
    }

    /** One that counts and never prints. */
    public static Progress disabled(final long total) {
        return new Progress("", total, null, false, NanoClock.SYSTEM);
    }

    /** Changes the label, e.g. to name the configuration being run; shown from the next line on. */
    public void label(final String newLabel) {
        label = newLabel == null ? "" : newLabel;
    }

    /** One more done. */
    public void step() {
        add(1);
    }

    /** {@code n} more done. */
    public void add(final long n) {
        done.addAndGet(n);
        maybePrint();
    }

    /** Sets the count done; a smaller count than already reported (from a slower thread) is ignored. */
    public void set(final long count) {
        long d = done.get();
        while (count > d && !done.compareAndSet(d, count)) {
            d = done.get();
        }
        maybePrint();
    }

    public long done() {
        return done.get();
    }

    public long total() {
        return total;
    }

    /**
     * Ends the display: if anything was printed, a last line with the count, elapsed time and rate (on a terminal
     * it replaces the progress line and ends it with a newline). Later updates count but print nothing. Idempotent.
     */
    public synchronized void finish() {
        if (finished) {
            return;
        }
        finished = true;
        if (out == null || !printed) {
            return;
        }
        final long now = clock.nanoTime();
        line.setLength(0);
        line.append(label).append(": ").append(done.get());
        if (total > 0) {
            line.append('/').append(total);
        }
        line.append(" done in ");
        appendDuration(line, (now - start) / 1_000_000_000L);
        line.append(" (");
        appendRate(line, done.get(), now - start);
        line.append("/s)");
        emit();
        if (terminal) {
            out.append('\n');
        }
        out.flush();
    }

    @Override
    public void close() {
        finish();
    }

    private void maybePrint() {
        if (out == null || finished) {
            return;
        }
        final long now = clock.nanoTime();
        final long due = nextPrint.get();
        // one caller wins the slot; the others go back to work at once
        if (now - due < 0 || !nextPrint.compareAndSet(due, now + intervalNs)) {
            return;
        }
        print(now);
    }

    private synchronized void print(final long now) {
        if (finished) {
            return;
        }
        final long d = done.get();
        final long elapsed = now - start;
        line.setLength(0);
        line.append(label).append(": ").append(d);
        if (total > 0) {
            line.append('/').append(total).append(" (").append(Math.min(100, d * 100 / total)).append("%)");
        }
        line.append("  ");
        appendRate(line, d, elapsed);
        line.append("/s");
        if (total > 0) {
            line.append("  ETA ");
            if (d >= total) {
                line.append("0:00");
            } else if (d == 0) {
                line.append('?');
            } else {
                appendDuration(line, (long) ((double) (total - d) * elapsed / d / 1e9));
            }
        }
        emit();
        if (!terminal) {
            out.append('\n');
        }
        out.flush();
        printed = true;
    }

    /** Writes {@link #line}; on a terminal over the previous one, padded so no old characters remain. */
    private void emit() {
        if (terminal) {
            final int len = line.length();
            for (int i = len; i < lastLength; i++) {
                line.append(' ');
            }
            lastLength = len;
            out.append('\r');
        }
        out.append(line);
    }

    /** Per second, one decimal below 100/s, whole numbers above. */
    private static void appendRate(final StringBuilder sb, final long count, final long elapsedNs) {
        if (elapsedNs <= 0) {
            sb.append('?');
            return;
        }
        final double rate = count * 1e9 / elapsedNs;
        if (rate >= 100) {
            sb.append(Math.round(rate));
        } else {
            final long tenths = Math.round(rate * 10);
            sb.append(tenths / 10).append('.').append(tenths % 10);
        }
    }

    /** h:mm:ss or m:ss. */
    private static void appendDuration(final StringBuilder sb, final long seconds) {
        final long h = seconds / 3600;
        final long m = seconds / 60 % 60;
        final long s = seconds % 60;
        if (h > 0) {
            sb.append(h).append(':');
            if (m < 10) {
                sb.append('0');
            }
        }
        sb.append(m).append(':');
        if (s < 10) {
            sb.append('0');
        }
        sb.append(s);
    }
}
