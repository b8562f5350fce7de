/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Arrays;
import java.util.List;

/** Runs the CLI in-process and captures exit code, stdout and stderr. */
record Cli(int exitCode, String out, String err) {
    static Cli run(final String... args) {
        final StringWriter out = new StringWriter();
        final StringWriter err = new StringWriter();
        final int rc = Main.execute(args, new PrintWriter(out), new PrintWriter(err));
        return new Cli(rc, out.toString(), err.toString());
    }

    List<String> lines() {
        return Arrays.stream(out.split("\\R")).filter(l -> !l.isEmpty()).toList();
    }

    @Override
    public String toString() {
        return "exit " + exitCode + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }
}
