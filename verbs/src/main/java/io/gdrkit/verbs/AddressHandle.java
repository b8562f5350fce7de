/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/** An address handle (ibv_ah, from {@link ProtectionDomain#createAh(AhAttr)}): where a UD send goes. */
public interface AddressHandle extends AutoCloseable {
    /** The attributes it was created with. */
    AhAttr attr();

    /** Destroys it (ibv_destroy_ah). */
    @Override
    void close();
}
