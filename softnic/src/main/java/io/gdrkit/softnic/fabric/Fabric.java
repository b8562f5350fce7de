/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

/** Carries packets between software NICs: in one JVM, between processes on a host, or between hosts. */
public interface Fabric extends AutoCloseable {
    /**
     * Attaches a port. {@code lid} 0 picks the next free LID (in-JVM); a positive LID is claimed as given and
     * fails if another live port holds it.
     */
    FabricPort attach(int lid);

    /**
     * Takes a port off the fabric once its NIC has stopped: packets to its LID are unroutable from then on. Default:
     * nothing (a fabric of one port per process, whose port leaves when the fabric closes).
     */
    default void detach(FabricPort port) {
    }

    /** Replaces the hook that sees every packet this process sends. */
    void hook(LinkHook hook);

    /** What the fabric is, for reports: "in-JVM", "shm:/dev/shm/...". */
    String describe();

    @Override
    void close();
}
