/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

import java.util.List;

/**
 * One module's catalogue of settings: every {@link SettingDef} its main code reads. A module declares its
 * {@code <Module>Configuration} class's nested {@code Catalogue} in
 * {@code META-INF/services/io.gdrkit.core.config.SettingsCatalogue}; {@link Catalogues} finds them all with
 * {@link java.util.ServiceLoader}, and docs/CONFIGURATION.md is generated from them.
 */
public interface SettingsCatalogue {
    /** The module's name ({@code softnic}, {@code comm}). */
    String module();

    /** The {@code <Module>Configuration} class that holds the descriptors. */
    Class<?> configurationClass();

    /** Where in the documentation the catalogue comes: lower first (the module's layer). */
    int order();

    /** Every setting of the module, in the order the documentation lists them. */
    List<SettingDef<?>> settings();

    /** Markdown that introduces the catalogue's table in the documentation: who reads the settings and when. */
    String description();
}
