/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.provider;

import io.gdrkit.verbs.Device;
import io.gdrkit.verbs.VerbsProvider;
import java.util.List;
import java.util.ServiceLoader;

/**
 * Finds a provider by kind through {@link ServiceLoader} (as {@link io.gdrkit.verbs.DeviceList} does), so the labs
 * name no provider class, and the CLI only passes the user's choice down.
 */
public final class Providers {
    private Providers() {
    }

    /**
     * The provider of this kind found on the class path.
     *
     * @throws NoDeviceException when no provider of that name is on the class path (the evidence says so)
     */
    public static VerbsProvider find(final ProviderKind kind) {
        for (final VerbsProvider p : ServiceLoader.load(VerbsProvider.class)) {
            if (p.name().equals(kind.providerName)) {
                return p;
            }
        }
        throw new NoDeviceException(kind.providerName, "this run", "no provider named '" + kind.providerName
            + "' on the class path");
    }

    /**
     * The native provider's first device, or the named early end: {@link NoDeviceException} with the probe's
     * evidence (libibverbs loaded or not, the device count, {@code /sys/class/infiniband}).
     *
     * @param what what the device is for, named in the error ("perf write_bw", "visibility", ...)
     */
    public static Device requireNative(final String what, final String name) {
        final Device first = requireNative(what);
        if (name == null) {
            return first;
        }
        final List<Device> devices = find(ProviderKind.NATIVE).devices();
        for (final Device d : devices) {
            if (d.name().equals(name)) {
                return d;
            }
        }
        throw new UnknownDeviceException(name, devices.stream().map(Device::name).toList());
    }

    /** A device named by the user that the provider does not list; the message names those it lists. */
    public static final class UnknownDeviceException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        public UnknownDeviceException(final String name, final List<String> have) {
            super("no RDMA device '" + name + "' (the provider lists " + (have.isEmpty() ? "none"
                : String.join(", ", have)) + ")");
        }
    }

    public static Device requireNative(final String what) {
        final VerbsProvider p = find(ProviderKind.NATIVE);
        final List<Device> devices = p.devices();
        if (devices.isEmpty()) {
            throw new NoDeviceException("native (" + p.name() + ")", what, p.evidence());
        }
        return devices.getFirst();
    }
}
