/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.gdrkit.core.config.Catalogues;
import io.gdrkit.core.config.SettingDef;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** docs/CONFIGURATION.md is exactly what the catalogues generate; {@code -DregenerateDocs=true} rewrites it. */
class ConfigurationDocTest {
    @Test
    void checkedInPageIsWhatTheCataloguesGenerate() throws IOException {
        final Path page = ConfigurationDoc.page();
        final String want = ConfigurationDoc.render();
        if (Boolean.parseBoolean(System.getProperty("regenerateDocs"))) {
            Files.writeString(page, want, StandardCharsets.UTF_8);
        }
        final String have = Files.readString(page, StandardCharsets.UTF_8);
        if (!have.equals(want)) {
            fail(ConfigurationDoc.PAGE + " differs from what the settings catalogues generate (first difference at "
                + "line " + firstDifferentLine(have, want) + "); regenerate it with:\n  " + ConfigurationDoc.REGENERATE);
        }
    }

    @Test
    void everyCataloguedSettingHasItsRowOnThePage() {
        final String page = ConfigurationDoc.render();
        for (final SettingDef<?> d : Catalogues.byName().values()) {
            assertTrue(page.contains("| `" + d.name() + "` | " + (d.origin() == SettingDef.Origin.ENVIRONMENT
                ? "environment" : "system property") + " | "), d.name() + " has no row");
        }
        assertTrue(page.contains("### `io.gdrkit.softnic.config.SoftNicConfiguration` (softnic)"));
        assertTrue(page.contains("## Adding a setting"), "the footer is emitted");
        assertTrue(page.startsWith("<!-- Generated from the settings catalogues"), "the page says it is generated");
    }

    @Test
    void firstDifferentLineIsOneBased() {
        assertEquals(2, firstDifferentLine("a\nb\n", "a\nc\n"));
        assertEquals(3, firstDifferentLine("a\nb", "a\nb\nc"));
    }

    private static int firstDifferentLine(final String a, final String b) {
        final String[] x = a.split("\n", -1);
        final String[] y = b.split("\n", -1);
        for (int i = 0; i < Math.min(x.length, y.length); i++) {
            if (!x[i].equals(y[i])) {
                return i + 1;
            }
        }
        return Math.min(x.length, y.length) + 1;
    }
}
