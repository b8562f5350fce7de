/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs.config;

import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsCatalogue;
import java.util.List;

/**
 * The ibverbs module's settings: the native libraries {@link IbvLibrary} and {@link RdmaCm} load, and the C stub
 * provider's source that the bench module's native JMH setup compiles.
 */
public final class IbverbsConfiguration {
    /** The libibverbs to load. */
    public static final SettingDef<String> LIBRARY = SettingDef.text("gdrkit.ibverbs.library", "libibverbs.so.1",
        "the libibverbs to load (tests point it at a stub); a bad value is the provider's not-loaded reason")
        .valid("a library name or path").readBy("IbvLibrary");
    /** Lets a library with an unchecked ABI load anyway. */
    public static final SettingDef<Boolean> ABI_OVERRIDE = SettingDef.flag("gdrkit.ibverbs.abi.override", false,
        "load a libibverbs whose ABI version was not checked against the FFM layouts (at the user's risk, said in "
            + "evidence)").readBy("IbvLibrary");
    /** The librdmacm to load. */
    public static final SettingDef<String> RDMACM_LIBRARY = SettingDef.text("gdrkit.rdmacm.library",
        "librdmacm.so.1", "the librdmacm to load (tests point it at a stub)").valid("a library name or path")
        .readBy("RdmaCm");
    /** The C stub provider's source compiled by the bench's native JMH setup. */
    public static final SettingDef<String> STUB_SOURCE = SettingDef.text("gdrkit.stub.src",
        "ibverbs/src/test/c/stubverbs.c", "the stub verbs provider's C source the NativeOpsBench JMH setup compiles")
        .valid("a path").readBy("NativeOpsBench (bench)");

    /** Every setting of this module, in documentation order. */
    public static final List<SettingDef<?>> ALL = List.of(LIBRARY, ABI_OVERRIDE, RDMACM_LIBRARY, STUB_SOURCE);

    private IbverbsConfiguration() {
    }

    /** This module's catalogue, for {@link io.gdrkit.core.config.Catalogues}. */
    public static final class Catalogue implements SettingsCatalogue {
        /** For {@link java.util.ServiceLoader}. */
        public Catalogue() {
        }

        @Override
        public String module() {
            return "ibverbs";
        }

        @Override
        public Class<?> configurationClass() {
            return IbverbsConfiguration.class;
        }

        @Override
        public int order() {
            return 20;
        }

        @Override
        public List<SettingDef<?>> settings() {
            return ALL;
        }

        @Override
        public String description() {
            return "Read once per JVM through `SettingsReader.ofProcess()`, when the native provider or librdmacm is "
                + "first loaded (`IbvLibrary.load()`, `RdmaCm.load()`), and by the `NativeOpsBench` JMH setup.";
        }
    }
}
