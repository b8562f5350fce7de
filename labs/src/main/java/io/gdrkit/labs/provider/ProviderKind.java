/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.provider;

import java.util.Locale;

/** The verbs provider a command opens its devices through ({@code --provider soft|native}). */
public enum ProviderKind {
    /** The software NIC (io.gdrkit.softnic): simulated, in this JVM or between processes. */
    SOFT("softnic"),
    /** The native provider (io.gdrkit.ibverbs): libibverbs' devices through FFM. */
    NATIVE("ibverbs");

    /** The name the provider gives itself ({@link io.gdrkit.verbs.VerbsProvider#name()}). */
    public final String providerName;

    ProviderKind(final String providerName) {
        this.providerName = providerName;
    }

    /**
     * @throws IllegalArgumentException naming the valid values
     */
    public static ProviderKind parse(final String s) {
        return switch (s == null ? "" : s.trim().toLowerCase(Locale.ROOT)) {
            case "soft" -> SOFT;
            case "native" -> NATIVE;
            default -> throw new IllegalArgumentException("the provider must be native or soft, not '" + s + "'");
        };
    }
}
