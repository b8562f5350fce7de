/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * An {@link Error} thrown by a command (here one that mixes builds: a NoSuchMethodError, as a rank saw when another
 * build's classes came first on its class path) is one line naming it and exit code 70, not a stack trace; so
 * {@code main} exits and the peers of a rank see it go.
 */
class MainErrorTest {
    @CommandLine.Command(name = "boom")
    static final class Boom implements Callable<Integer> {
        @Override
        public Integer call() {
            throw new NoSuchMethodError("'java.lang.String io.gdrkit.comm.CollResult.nicMtu()'");
        }
    }

    @CommandLine.Command(name = "fine")
    static final class Fine implements Callable<Integer> {
        @Override
        public Integer call() {
            return 0;
        }
    }

    @Test
    void anErrorIsOneLineAndExitCode70() {
        final StringWriter out = new StringWriter();
        final StringWriter err = new StringWriter();
        final int rc = Main.execute(new CommandLine(new Boom()), new String[0], new PrintWriter(out),
            new PrintWriter(err));
        assertEquals(Main.EXIT_INTERNAL, rc);
        assertEquals("gdrkit: error: internal error, the run ends: java.lang.NoSuchMethodError: "
            + "'java.lang.String io.gdrkit.comm.CollResult.nicMtu()'" + System.lineSeparator(),
            err.toString());
        assertFalse(err.toString().contains("\tat "), "no stack trace");
        assertEquals("", out.toString());
        assertEquals(0, Main.execute(new CommandLine(new Fine()), new String[0], new PrintWriter(out),
            new PrintWriter(err)));
    }
}
