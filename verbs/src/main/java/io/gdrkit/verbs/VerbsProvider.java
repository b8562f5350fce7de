/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import java.util.List;

/**
 * A verbs provider (like an rdma-core provider library): the software NIC today, a native libibverbs
 * provider later. Providers are found with {@link java.util.ServiceLoader}.
 */
public interface VerbsProvider {
    String name();

    /** The devices this provider currently exposes; empty when it found none (never invented). */
    List<Device> devices();

    /**
     * What looking for devices found and where it looked (a library loaded, a device count, a sysfs directory):
     * the evidence a tool prints when a provider was asked for and has no device.
     */
    default String evidence() {
        return name() + ": " + devices().size() + " device(s)";
    }
}
