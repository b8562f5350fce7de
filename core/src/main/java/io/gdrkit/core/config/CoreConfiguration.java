/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsCatalogue;
import java.util.List;

/**
 * The core module's settings: the shared secret peers prove they know ({@link io.gdrkit.core.auth.Token}), and the
 * process-wide ones the command line and its launcher script read.
 */
public final class CoreConfiguration {
    /** The process's token as a property; wins over {@link #TOKEN_ENV}. */
    public static final SettingDef<String> TOKEN = SettingDef.text("gdrkit.token", "",
        "the shared secret (at least 8 characters) peers prove they know; wins over GDRKIT_TOKEN")
        .valid("unset, or at least 8 characters").readBy("Token");
    /** The token a launcher gives the ranks it starts. */
    public static final SettingDef<String> TOKEN_ENV = SettingDef.text("GDRKIT_TOKEN", "",
        "the shared secret a launcher gives its ranks (never on a command line; its value is never shown)")
        .valid("unset, or at least 8 characters").readBy("Token, BootstrapContext");

    /** JVM options the {@code ./gdrkit} script passes to java; {@code gdrkit launch} appends its ranks' -D flags. */
    public static final SettingDef<String> JAVA_OPTS = SettingDef.text("GDRKIT_JAVA_OPTS", "",
        "JVM options the ./gdrkit script passes to java; gdrkit launch appends the --set properties for its ranks")
        .valid("java options").readBy("./gdrkit, LaunchCommand (cli)");
    /** Treat stderr as a terminal for the progress line. */
    public static final SettingDef<Boolean> PROGRESS_TERMINAL = SettingDef.flag("gdrkit.progress.terminal", false,
        "treat stderr as a terminal (a redrawn progress line) even when it is not one: tests, recorded sessions")
        .readBy("StderrProgress (cli)");

    /** Every setting of this module, in documentation order. */
    public static final List<SettingDef<?>> ALL = List.of(TOKEN, TOKEN_ENV, JAVA_OPTS, PROGRESS_TERMINAL);

    private CoreConfiguration() {
    }

    /** This module's catalogue, for {@link io.gdrkit.core.config.Catalogues}. */
    public static final class Catalogue implements SettingsCatalogue {
        /** For {@link java.util.ServiceLoader}. */
        public Catalogue() {
        }

        @Override
        public String module() {
            return "core";
        }

        @Override
        public Class<?> configurationClass() {
            return CoreConfiguration.class;
        }

        @Override
        public int order() {
            return 0;
        }

        @Override
        public List<SettingDef<?>> settings() {
            return ALL;
        }

        @Override
        public String description() {
            return "The token is read once per process by `Token.fromProcess()` (the TCP fabric's and the connection "
                + "manager's listeners), and by `BootstrapContext.fromEnvironment` for a launched rank. Unset: no "
                + "token, any peer is accepted and listeners bind loopback only (docs/SECURITY.md). "
                + "`GDRKIT_JAVA_OPTS` and `gdrkit.progress.terminal` are read by the command line and its script.";
        }
    }
}
