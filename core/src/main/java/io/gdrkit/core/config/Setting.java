/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

/**
 * One resolved setting: its name ({@code NCCL_NET_GDR_READ}, {@code gdrkit.nic.window}), the value in effect, where
 * that value came from, and the text it was parsed from ({@code null} for a default).
 */
public record Setting<T>(String name, T value, Source source, String raw) {
    /** The value as {@code name=value (source)}, for logs and evidence. */
    public String describe() {
        return name + "=" + value + " (" + source.name().toLowerCase(java.util.Locale.ROOT) + ")";
    }
}
