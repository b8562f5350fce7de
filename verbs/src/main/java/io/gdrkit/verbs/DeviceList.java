/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import io.gdrkit.core.Errno;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/** The device list (ibv_get_device_list): every device of every {@link VerbsProvider} found. */
public final class DeviceList {
    private DeviceList() {
    }

    /** Devices from the providers on the class path, in provider order. */
    public static List<Device> devices() {
        final List<Device> all = new ArrayList<>();
        for (final VerbsProvider provider : ServiceLoader.load(VerbsProvider.class)) {
            all.addAll(provider.devices());
        }
        return all;
    }

    public static Device byName(final String name) {
        for (final Device d : devices()) {
            if (d.name().equals(name)) {
                return d;
            }
        }
        throw new VerbsException(Errno.ENOENT, "no RDMA device named '" + name + "' (found: "
            + devices().stream().map(Device::name).toList() + ")");
    }
}
