/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Every --help speaks to users: no internal codes, the shared options everywhere; the top level names test/build. */
class HelpTextTest {
    /** Work-item codes (D1-D7, F2, E4, A9, B6, C9 ...), "seed 001", "BRIEF". */
    private static final Pattern INTERNAL = Pattern.compile("\\b[A-F][0-9]{1,2}\\b|seed 00\\d|BRIEF");

    @Test
    void noHelpNamesAnInternalCode() {
        for (final String command : BadInputTableTest.commands()) {
            final List<String> args = new ArrayList<>(command.isEmpty() ? List.of()
                : Arrays.asList(command.split(" ")));
            args.add("--help");
            final Cli r = Cli.run(args.toArray(String[]::new));
            assertEquals(0, r.exitCode(), r.toString());
            final var m = INTERNAL.matcher(r.out());
            assertFalse(m.find(), "gdrkit " + command + " --help: '" + (m.hitEnd() ? "" : m.group()) + "' in\n"
                + r.out());
            assertFalse(r.out().contains("null"), "no unset default shown: gdrkit " + command + " --help\n" + r.out());
            if (!command.isEmpty() && !command.equals("model")) {
                assertTrue(r.out().contains("--set=NAME=VALUE"), "--set on gdrkit " + command);
            }
        }
    }

    @Test
    void theTopLevelHelpNamesTheScriptsTestAndBuild() {
        final String help = Cli.run("--help").out().replaceAll("\\s+", " ");
        assertTrue(help.contains("./gdrkit build (build the jar)"), help);
        assertTrue(help.contains("./gdrkit test [MAVEN ARGS] (the whole test suite, mvn install, then the examples/"),
            help);
        assertTrue(help.contains("./gdrkit examples (the examples alone)"), help);
        assertTrue(help.contains("2 a bad flag or value; 3 a requested GPU or RDMA device is not on this host"), help);
    }

    @Test
    void aSharedOptionShowsTheCommandsOwnDefault() {
        final String perf = Cli.run("perf", "--help").out().replaceAll("\\s+", " ");
        final String vis = Cli.run("visibility", "--help").out().replaceAll("\\s+", " ");
        final String coll = Cli.run("coll", "--help").out().replaceAll("\\s+", " ");
        assertTrue(perf.contains("cuda:N (a CUDA GPU); coll also takes cuda:rank (each rank the device of its rank "
            + "number). A cuda:N this host lacks ends with exit code 3. Default: sim:h200."), perf);
        assertTrue(vis.contains("Default: shm."), vis);
        for (final String model : new String[] {"crossover", "topology"}) {
            final String m = Cli.run("model", model, "--help").out().replaceAll("\\s+", " ");
            assertTrue(m.contains("exit code 3. Default: sim:h200."), m);
        }
        assertTrue(coll.contains("over TCP). Default: injvm."), coll);
    }
}
