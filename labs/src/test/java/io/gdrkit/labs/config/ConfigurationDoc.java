/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.config;

import io.gdrkit.core.config.Catalogues;
import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsCatalogue;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Generates docs/CONFIGURATION.md from the settings catalogues ({@link Catalogues#all()}): the hand-written header and
 * footer (resources next to this class) around one section per module's {@code <Module>Configuration}.
 * {@link ConfigurationDocTest} compares the checked-in page with {@link #render()} and, with
 * {@code -DregenerateDocs=true}, writes it; {@link #main} writes it too.
 */
public final class ConfigurationDoc {
    /** The generated page, relative to the repository root. */
    public static final String PAGE = "docs/CONFIGURATION.md";
    /** The command that regenerates the page. */
    public static final String REGENERATE = "mvn -B -q -ntp verify -pl labs -am -Dtest=ConfigurationDocTest "
        + "-Dsurefire.failIfNoSpecifiedTests=false -DregenerateDocs=true";

    private ConfigurationDoc() {
    }

    /**
     * Writes the page.
     *
     * @param args the page's path (default {@value #PAGE} under the working directory's repository root)
     */
    public static void main(final String[] args) throws IOException {
        final Path out = args.length > 0 ? Path.of(args[0]) : page();
        Files.writeString(out, render(), StandardCharsets.UTF_8);
        System.out.println("wrote " + out);
    }

    /** The page's path: {@value #PAGE} in the repository root (the working directory or its parent, a module). */
    public static Path page() {
        final Path here = Path.of("").toAbsolutePath();
        return Files.isDirectory(here.resolve("docs")) ? here.resolve(PAGE) : here.getParent().resolve(PAGE);
    }

    /** The page the catalogues give. */
    public static String render() {
        final StringBuilder b = new StringBuilder();
        b.append("<!-- Generated from the settings catalogues (the <Module>Configuration classes) by\n")
            .append("     io.gdrkit.labs.config.ConfigurationDoc: edit the catalogues or the header and footer in\n")
            .append("     labs/src/test/resources/io/gdrkit/labs/config/, then run\n     ").append(REGENERATE)
            .append(" -->\n\n");
        b.append(resource("configuration-header.md").strip()).append("\n\n");
        b.append("## The settings, by module\n\n");
        b.append("A value a setter or flag gives wins where the component takes one (source `FLAG`); \"Read from\" "
            + "says where the setting is looked up otherwise, and \"Read by\" which class reads it.\n");
        for (final SettingsCatalogue c : Catalogues.all()) {
            b.append("\n### `").append(c.configurationClass().getName()).append("` (").append(c.module())
                .append(")\n\n");
            b.append(c.description().strip()).append("\n\n");
            b.append("| Name | Read from | Default | Valid | Read by | What it does |\n");
            b.append("|---|---|---|---|---|---|\n");
            for (final SettingDef<?> d : c.settings()) {
                b.append("| `").append(d.name()).append("` | ")
                    .append(d.origin() == SettingDef.Origin.ENVIRONMENT ? "environment" : "system property")
                    .append(" | ").append(code(d.defaultText())).append(" | ").append(cell(d.valid()))
                    .append(" | ").append(d.readBy().isEmpty() ? "" : "`" + d.readBy() + "`")
                    .append(" | ").append(cell(d.doc())).append(" |\n");
            }
        }
        b.append('\n').append(resource("configuration-footer.md").strip()).append('\n');
        return b.toString();
    }

    /** A table cell: pipes escaped, and a {@code <} that would open an HTML tag written as an entity. */
    private static String cell(final String text) {
        return text.replace("|", "\\|").replaceAll("<(?=[A-Za-z/])", "&lt;");
    }

    /** A default: one token in backticks, words (and "unset") as they are. */
    private static String code(final String text) {
        return text.isEmpty() || text.equals("unset") || text.contains(" ") ? cell(text) : "`" + text + "`";
    }

    private static String resource(final String name) {
        try (InputStream in = ConfigurationDoc.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("no resource " + name + " next to " + ConfigurationDoc.class);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (final IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
