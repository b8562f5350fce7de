/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.fabric;

/**
 * The NIC attached to a {@link FabricPort}, as the other ports of an in-JVM fabric may find it by LID to resolve a
 * reference packet against the sender's memory. The fabric stores owners without knowing their class (it sits below
 * the NIC, with no dependency on it); {@link FabricPort#peer(int, Class)} hands them back typed.
 */
public interface PortOwner {
}
