/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.planted;

import io.gdrkit.cli.Main;
import io.gdrkit.gdr.planted.CycleBack;

/**
 * Planted on purpose (test sources only): a lab class that calls up into the CLI, uses picocli, prints to
 * System.out and System.err and sits in a package cycle. ArchitectureTest checks that every rule catches it.
 */
public final class BreaksEveryRule {
    private BreaksEveryRule() {
    }

    public static int run(final String... args) {
        System.out.println(new picocli.CommandLine.ParameterException(null, "planted").getMessage());
        System.err.println("planted");
        return Main.class.getName().length();
    }

    /** Never called: it only has to exist in the bytecode for the cycle rule to see it. */
    static int cycle() {
        return CycleBack.back();
    }
}
