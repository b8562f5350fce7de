/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;

/**
 * Keeps the progress line (on stderr, redrawn with {@code \r}) and the output apart when both go to one terminal or
 * one log: before a line of output (stdout) or of other stderr text, a progress line still standing is blanked and
 * the cursor put back at the start of the line, so no output line is glued onto it. The progress redraws itself on
 * its next update.
 */
final class TerminalLine {
    /** The streams of the command line running in this process (set by {@link Main#execute}). */
    private static volatile TerminalLine current;

    private final Writer err;
    private final Object lock = new Object();
    /** Guarded by lock: characters of the progress line standing on stderr (0: none). */
    private int column;

    /** @param err the real stderr */
    TerminalLine(final Writer err) {
        this.err = err;
    }

    static TerminalLine current() {
        return current;
    }

    static void current(final TerminalLine t) {
        current = t;
    }

    /** Where the progress line goes: stderr, its standing characters counted. */
    PrintWriter progress() {
        return new PrintWriter(new Part() {
            @Override
            void put(final char[] buf, final int off, final int len) throws IOException {
                err.write(buf, off, len);
                for (int i = off; i < off + len; i++) {
                    column = buf[i] == '\r' || buf[i] == '\n' ? 0 : column + 1;
                }
            }
        });
    }

    /** stderr for everything else: a standing progress line is cleared first. */
    PrintWriter err() {
        return new PrintWriter(new Part() {
            @Override
            void put(final char[] buf, final int off, final int len) throws IOException {
                clear();
                err.write(buf, off, len);
            }
        }, true);
    }

    /** stdout: a standing progress line is cleared before each write, and each write is flushed at once. */
    PrintWriter out(final Writer out) {
        return new PrintWriter(new Part() {
            @Override
            void put(final char[] buf, final int off, final int len) throws IOException {
                clear();
                out.write(buf, off, len);
                out.flush();
            }

            @Override
            public void flush() throws IOException {
                out.flush();
            }
        }, true);
    }

    /** Blanks the standing progress line, if any, and returns to its start; on the terminal before anything else. */
    private void clear() throws IOException {
        if (column > 0) {
            err.write('\r');
            err.write(" ".repeat(column));
            err.write('\r');
            err.flush();
            column = 0;
        }
    }

    /** A writer whose writes happen under the lock. */
    private abstract class Part extends Writer {
        abstract void put(char[] buf, int off, int len) throws IOException;

        @Override
        public void write(final char[] buf, final int off, final int len) throws IOException {
            synchronized (lock) {
                put(buf, off, len);
            }
        }

        @Override
        public void flush() throws IOException {
            synchronized (lock) {
                err.flush();
            }
        }

        @Override
        public void close() throws IOException {
            flush();
        }
    }
}
