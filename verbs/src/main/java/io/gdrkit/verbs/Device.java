/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** An RDMA device as listed by {@link DeviceList} (ibv_device). */
public interface Device {
    String name();

    long guid();

    /** True for software NICs; every tool prints it. */
    boolean isSimulated();

    /** Opens a context on the device (ibv_open_device). */
    VerbsContext open();
}
