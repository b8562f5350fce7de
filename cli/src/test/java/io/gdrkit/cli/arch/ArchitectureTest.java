/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli.arch;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The architecture rules hold on the production code, and each one fails on a class planted to break it. */
class ArchitectureTest {
    private static JavaClasses production;
    private static JavaClasses planted;
    private static JavaClasses commPlanted;

    @BeforeAll
    static void importClasses() {
        production = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.gdrkit");
        planted = new ClassFileImporter().importPackages("io.gdrkit.labs.planted", "io.gdrkit.gdr.planted");
        commPlanted = new ClassFileImporter().importPackages("io.gdrkit.comm.planted", "io.gdrkit.labs.planted");
    }

    /** The library module comm may not reach up into labs: a planted class that does is refused by name. */
    @Test
    void commReachingIntoLabsIsRefused() {
        final EvaluationResult r = ArchitectureRules.LAYERS.evaluate(commPlanted);
        assertTrue(r.hasViolation(), "the layer rule let comm depend on labs");
        assertTrue(r.getFailureReport().getDetails().stream().anyMatch(d -> d.contains("ReachesUp")),
            String.join("\n", r.getFailureReport().getDetails()));
    }

    @Test
    void productionCodeIsImported() {
        // the rules below are vacuous if nothing was imported
        assertTrue(production.contain("io.gdrkit.cli.Main"));
        assertTrue(production.contain("io.gdrkit.core.agent.Agent"));
        assertTrue(production.contain("io.gdrkit.softnic.SoftDevice"));
        assertFalse(production.contain("io.gdrkit.labs.planted.BreaksEveryRule"));
        assertTrue(production.contain("io.gdrkit.comm.Communicator"));
        assertTrue(production.contain("io.gdrkit.shmem.ShmemWorld"));
    }

    static Stream<Arguments> rules() {
        return ArchitectureRules.ALL.stream().map(r -> Arguments.of(r.getDescription(), r));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rules")
    void holdsOnTheTree(final String name, final ArchRule rule) {
        rule.check(production);
    }

    @ParameterizedTest(name = "{0} fails on a planted violation")
    @MethodSource("rules")
    void failsOnAPlantedViolation(final String name, final ArchRule rule) {
        final EvaluationResult r = rule.evaluate(planted);
        assertTrue(r.hasViolation(), name + " did not catch the planted class");
        final List<String> details = r.getFailureReport().getDetails();
        assertTrue(details.stream().anyMatch(d -> d.contains("planted")), String.join("\n", details));
    }

    /** Each exception to the stderr rule still writes to System.err: one that no longer does comes off the list. */
    @Test
    void everyStderrExceptionIsStillNeeded() {
        for (final Class<?> c : ArchitectureRules.STDERR_EXCEPTIONS) {
            final boolean writes = production.get(c).getFieldAccessesFromSelf().stream()
                .anyMatch(a -> a.getTarget().getOwner().isEquivalentTo(System.class)
                    && a.getTarget().getName().equals("err"));
            assertTrue(writes, c.getName() + " no longer reads System.err: remove it from STDERR_EXCEPTIONS");
        }
    }
}
