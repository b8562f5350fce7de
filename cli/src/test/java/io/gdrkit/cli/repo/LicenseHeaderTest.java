/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli.repo;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Java source of the repository starts with the project's license header: the {@code src} folder of each
 * module and everything under {@code examples/} (its own build). Runs in cli's tests, which run last in the
 * reactor, so that a file added anywhere fails the build, named.
 */
class LicenseHeaderTest {
    static final String HEADER = "/*\n * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.\n */";
    /** The shell scripts' second line (after the #! line). */
    static final String SCRIPT_HEADER = "# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.";

    /** The repository root: cli's tests run in cli/. */
    static Path root() {
        final Path r = Path.of("").toAbsolutePath().getParent();
        assertTrue(Files.isRegularFile(r.resolve("pom.xml")) && Files.isDirectory(r.resolve("cli")),
            "expected the repository root above " + Path.of("").toAbsolutePath());
        return r;
    }

    /** The folders to scan: every direct child's src/ (a module) and examples/. */
    static List<Path> sourceRoots(final Path root) throws IOException {
        final List<Path> roots = new ArrayList<>();
        try (Stream<Path> children = Files.list(root)) {
            children.filter(Files::isDirectory).map(d -> d.resolve("src")).filter(Files::isDirectory).sorted()
                .forEach(roots::add);
        }
        final Path examples = root.resolve("examples");
        if (Files.isDirectory(examples)) {
            roots.add(examples);
        }
        return roots;
    }

    static boolean skipped(final Path p) {
        for (final Path part : p) {
            final String s = part.toString();
            if (s.equals("target") || s.startsWith(".")) {
                return true;
            }
        }
        return false;
    }

    @Test
    void everyJavaSourceStartsWithTheHeader() throws IOException {
        final Path root = root();
        final List<String> missing = new ArrayList<>();
        // a set: examples/src is both a child's src/ and under examples/
        final java.util.SortedSet<Path> sources = new java.util.TreeSet<>();
        for (final Path dir : sourceRoots(root)) {
            try (Stream<Path> files = Files.walk(dir)) {
                files.filter(p -> p.toString().endsWith(".java") && Files.isRegularFile(p))
                    .filter(p -> !skipped(root.relativize(p))).forEach(sources::add);
            }
        }
        for (final Path f : sources) {
            final String text = Files.readString(f, StandardCharsets.UTF_8).replace("\r\n", "\n");
            if (!text.startsWith(HEADER)) {
                missing.add(root.relativize(f).toString());
            }
        }
        final int seen = sources.size();
        assertTrue(seen > 100, "found only " + seen + " .java files under " + root);
        assertTrue(missing.isEmpty(), missing.size() + " Java source(s) do not start with the license header\n"
            + HEADER + "\n:\n  " + String.join("\n  ", missing));
    }

    @Test
    void everyBenchScriptCarriesTheHeaderOnItsSecondLine() throws IOException {
        final Path root = root();
        final List<String> missing = new ArrayList<>();
        final List<Path> scripts = new ArrayList<>();
        try (Stream<Path> files = Files.list(root.resolve("bench"))) {
            files.filter(p -> p.toString().endsWith(".sh") || p.toString().endsWith(".py")).forEach(scripts::add);
        }
        scripts.add(root.resolve("gdrkit"));
        for (final Path f : scripts) {
            final List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
            if (lines.size() < 2 || !lines.get(1).equals(SCRIPT_HEADER)) {
                missing.add(root.relativize(f).toString());
            }
        }
        assertTrue(missing.isEmpty(), "script(s) without '" + SCRIPT_HEADER + "' as the second line: " + missing);
    }
}
