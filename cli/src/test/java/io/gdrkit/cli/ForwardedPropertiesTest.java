/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The -D flags a child JVM gets: this process's gdrkit.* properties under the prefixes asked for, sorted, verbatim. */
class ForwardedPropertiesTest {
    @Test
    void flagsAreSortedByNameAndCarryValuesVerbatim() {
        assertEquals(List.of("-Dgdrkit.nic.cma=false", "-Dgdrkit.nic.window=a b=c", "-Dgdrkit.tcp.spin.us="),
            ForwardedProperties.flags(Map.of("gdrkit.tcp.spin.us", "", "gdrkit.nic.window", "a b=c",
                "gdrkit.nic.cma", "false")));
        assertEquals(List.of(), ForwardedProperties.flags(Map.of()));
    }

    @Test
    void onlyThisProcesssPropertiesUnderThePrefixesAreForwarded() {
        System.setProperty("gdrkit.fwdtest.b", "2");
        System.setProperty("gdrkit.fwdtest.a", "1");
        System.setProperty("gdrkit.fwdtestother.c", "3");
        System.setProperty("gdrkitfwdtest.d", "4");
        try {
            assertEquals(List.of("-Dgdrkit.fwdtest.a=1", "-Dgdrkit.fwdtest.b=2"),
                ForwardedProperties.flags("gdrkit.fwdtest."));
            assertEquals(List.of("-Dgdrkit.fwdtest.a=1", "-Dgdrkit.fwdtest.b=2", "-Dgdrkit.fwdtestother.c=3"),
                ForwardedProperties.flags("gdrkit.fwdtestother.", "gdrkit.fwdtest."));
            assertEquals(List.of(), ForwardedProperties.flags("gdrkit.fwdtest.none."));
            assertEquals(List.of(), ForwardedProperties.flags());
        } finally {
            System.clearProperty("gdrkit.fwdtest.b");
            System.clearProperty("gdrkit.fwdtest.a");
            System.clearProperty("gdrkit.fwdtestother.c");
            System.clearProperty("gdrkitfwdtest.d");
        }
    }
}
