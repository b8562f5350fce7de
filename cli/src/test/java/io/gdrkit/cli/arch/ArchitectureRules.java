/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.lang.ArchRule;
import java.util.List;

/**
 * gdrkit's layering as ArchUnit rules (docs/ARCHITECTURE.md): cli → labs → shmem → comm → gdr → (verbs, gpu) → core,
 * one way. Providers (the software NIC, a native provider) sit beside verbs: they implement it and are found through
 * ServiceLoader; only the library modules above gdr (comm, shmem), labs and cli configure them. Kept apart from the test so that a planted violation can be
 * checked against the very same rules.
 */
final class ArchitectureRules {
    private ArchitectureRules() {
    }

    static final ArchRule LAYERS = layeredArchitecture().consideringOnlyDependenciesInLayers()
        // a layer with no classes is no violation: the planted-violation checks import only a few packages
        .withOptionalLayers(true)
        .layer("cli").definedBy("io.gdrkit.cli..")
        .layer("labs").definedBy("io.gdrkit.labs..")
        .layer("shmem").definedBy("io.gdrkit.shmem..")
        .layer("comm").definedBy("io.gdrkit.comm..")
        .layer("gdr").definedBy("io.gdrkit.gdr..")
        .layer("providers").definedBy("io.gdrkit.softnic..", "io.gdrkit.ibverbs..")
        .layer("verbs").definedBy("io.gdrkit.verbs..")
        .layer("gpu").definedBy("io.gdrkit.gpu..")
        .layer("core").definedBy("io.gdrkit.core..")
        .whereLayer("cli").mayNotBeAccessedByAnyLayer()
        .whereLayer("labs").mayOnlyBeAccessedByLayers("cli")
        .whereLayer("shmem").mayOnlyBeAccessedByLayers("labs", "cli")
        .whereLayer("comm").mayOnlyBeAccessedByLayers("shmem", "labs", "cli")
        .whereLayer("gdr").mayOnlyBeAccessedByLayers("comm", "shmem", "labs", "cli")
        .whereLayer("providers").mayOnlyBeAccessedByLayers("comm", "shmem", "labs", "cli")
        .whereLayer("verbs").mayOnlyBeAccessedByLayers("providers", "gdr", "comm", "shmem", "labs", "cli")
        .whereLayer("gpu").mayOnlyBeAccessedByLayers("gdr", "comm", "shmem", "labs", "cli")
        .as("layers: cli -> labs -> shmem -> comm -> gdr -> (verbs, gpu) -> core; providers beside verbs");

    static final ArchRule NO_PACKAGE_CYCLES = slices().matching("io.gdrkit.(**)").should().beFreeOfCycles()
        .as("no cycles between packages");

    static final ArchRule PICOCLI_ONLY_IN_CLI = noClasses().that().resideOutsideOfPackage("io.gdrkit.cli..")
        .should().dependOnClassesThat().resideInAPackage("picocli..")
        .as("picocli is used only in cli");

    /**
     * Classes below cli that may write to System.err, each for a reason the cli cannot take over. Only stderr, and
     * only these: none of them may touch System.out.
     */
    static final List<Class<?>> STDERR_EXCEPTIONS = List.of(
        // process entry points that labs start as child processes (the lab cannot name a cli class): their usage and
        // start-up errors go to the parent, which inherits the child's stderr; there is no cli in that process
        io.gdrkit.labs.visibility.SenderMain.class,
        io.gdrkit.labs.perf.PerfServerMain.class,
        // the last word of an agent thread that died of an unexpected error: nobody may be polling failure(), and
        // the thread ends right after, so stderr is the only place the error is seen at once
        io.gdrkit.core.agent.AgentRunner.class);

    static final ArchRule NO_STDOUT_BELOW_CLI = noClasses().that().resideOutsideOfPackage("io.gdrkit.cli..")
        .should().accessField(System.class, "out")
        .as("no System.out below cli: labs return records, only the cli prints");

    static final ArchRule NO_STDERR_BELOW_CLI = noClasses().that().resideOutsideOfPackage("io.gdrkit.cli..")
        .and(DescribedPredicate.not(JavaClass.Predicates.belongToAnyOf(STDERR_EXCEPTIONS.toArray(Class<?>[]::new))))
        .should().accessField(System.class, "err")
        .as("no System.err below cli but the listed process entry points and a dying agent thread: labs take a "
            + "listener or return records, the cli prints");

    static final List<ArchRule> ALL = List.of(LAYERS, NO_PACKAGE_CYCLES, PICOCLI_ONLY_IN_CLI, NO_STDOUT_BELOW_CLI,
        NO_STDERR_BELOW_CLI);
}
