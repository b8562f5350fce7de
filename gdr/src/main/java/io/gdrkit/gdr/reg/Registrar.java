/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

/**
 * Registers memory with a NIC. The caches call it only on a miss and only at the last deregistration, so an
 * implementation that counts calls shows what the caches saved.
 */
public interface Registrar {
    /**
     * Registers {@code [addr, addr + len)}.
     *
     * @return the memory region handle; never null, and distinct (by identity) from every live handle
     */
    Object register(long addr, long len);

    /** Deregisters a handle returned by {@link #register(long, long)}. */
    void deregister(Object mr);
}
