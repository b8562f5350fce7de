/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.doctor;

import java.util.List;

/**
 * What libibverbs said when asked through FFM (by whoever can load it: the CLI's probe, a native provider).
 *
 * @param loaded   libibverbs.so.1 could be loaded
 * @param devices  its device list, each with its port 1 state
 * @param evidence the calls made and their answers, or why the library could not be loaded
 */
public record NativeVerbs(boolean loaded, List<String> devices, String evidence) {
    public NativeVerbs {
        devices = List.copyOf(devices);
    }
}
