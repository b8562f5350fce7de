/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * docs/CLI.md is every command's {@code --help}, as picocli prints it: generated here, so that it cannot drift. When a
 * command changes, regenerate with
 * {@code mvn -pl cli -am test -Dtest=CliDocTest -Dsurefire.failIfNoSpecifiedTests=false -Dgdrkit.cli.doc.write=true}.
 */
class CliDocTest {
    private static final Path DOC = Path.of("../docs/CLI.md");

    /** The page: a heading per command and its help in a text block, commands in the order the CLI lists them. */
    static String render() {
        final StringBuilder b = new StringBuilder();
        b.append("# gdrkit command reference\n\n")
            .append("Every command's `--help`, generated from the command line itself (`CliDocTest` fails when this "
                + "page and the\ncommands differ). The README shows one example per command; docs/LIBRARY.md the "
                + "library.\n");
        append(b, Main.commandLine(), "gdrkit");
        return b.toString();
    }

    private static void append(final StringBuilder b, final CommandLine cl, final String path) {
        cl.setUsageHelpWidth(110);
        b.append("\n## ").append(path).append("\n\n```text\n")
            .append(cl.getUsageMessage(CommandLine.Help.Ansi.OFF).stripTrailing()).append("\n```\n");
        for (final var e : cl.getSubcommands().entrySet()) {
            if (e.getValue().getCommandSpec().usageMessage().hidden()) {
                continue;
            }
            append(b, e.getValue(), path + " " + e.getKey());
        }
    }

    @Test
    void theReferencePageIsEveryCommandsHelp() throws IOException {
        final String want = render();
        if (Boolean.getBoolean("gdrkit.cli.doc.write")) {
            Files.writeString(DOC, want, StandardCharsets.UTF_8);
        }
        assertTrue(Files.exists(DOC), "docs/CLI.md is missing: " + CliDocTest.class.getSimpleName() + "'s javadoc "
            + "says how to generate it");
        assertEquals(want, Files.readString(DOC, StandardCharsets.UTF_8), "docs/CLI.md differs from the commands' "
            + "help: regenerate it with mvn -pl cli -am test -Dtest=CliDocTest "
            + "-Dsurefire.failIfNoSpecifiedTests=false -Dgdrkit.cli.doc.write=true");
    }
}
